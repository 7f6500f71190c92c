"""The command is installed a second time as ``kubectl-punctual``, so that ``kubectl punctual
next|trigger|backfill|skip|unskip|convert`` runs it (kubectl's plugin convention: an
executable named ``kubectl-<name>`` on the PATH; tests/integration/test_kubectl_plugin.py runs
it through kubectl)."""

import subprocess
import sys
from importlib import metadata
from pathlib import Path

SCRIPTS = Path(sys.executable).parent
"""Where the project's console scripts are installed: beside the interpreter running the tests."""


def console_script(name: str) -> str:
    (entry,) = metadata.entry_points(group="console_scripts", name=name)
    return entry.value


class TestTheKubectlPlugin:
    def test_it_is_the_punctual_command_under_kubectls_plugin_name(self) -> None:
        assert console_script("kubectl-punctual") == console_script("punctual")

    def test_the_installed_script_runs_and_lists_the_commands(self) -> None:
        shown = subprocess.run(
            [SCRIPTS / "kubectl-punctual", "--help"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )

        for command in ("next", "trigger", "backfill", "skip", "unskip", "convert"):
            assert command in shown.stdout
