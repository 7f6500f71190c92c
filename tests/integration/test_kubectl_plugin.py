"""kubectl runs the CLI as its plugin (``kubectl punctual ...``), and a command that acts on a
job without ``-n`` looks for it in the kubeconfig's current namespace, as kubectl would."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from localcluster import LocalCluster

SCRIPTS = Path(sys.executable).parent
"""Where ``kubectl-punctual`` is installed: beside the interpreter running the tests."""


def kubectl_with_plugins(
    cluster: LocalCluster, kubeconfig: Path, *args: str
) -> "subprocess.CompletedProcess[str]":
    environment = os.environ | {
        "KUBECONFIG": str(kubeconfig),
        "PATH": f"{SCRIPTS}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    return subprocess.run(
        [str(cluster.binaries.kubectl), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=environment,
    )


class TestKubectlPunctual:
    def test_next_runs_through_kubectl(self, cluster: LocalCluster) -> None:
        shown = kubectl_with_plugins(
            cluster,
            cluster.kubeconfig,
            *("punctual", "next", "30 2 * * *", "--after", "2026-11-29T00:00:00Z", "-n", "1"),
        )

        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith("2026-11-29T02:30:00+00:00")

    def test_trigger_without_n_looks_in_the_current_contexts_namespace(
        self, cluster: LocalCluster, namespace: str, tmp_path: Path
    ) -> None:
        kubeconfig = Path(shutil.copy(cluster.kubeconfig, tmp_path / "kubeconfig"))
        switched = kubectl_with_plugins(
            cluster, kubeconfig, "config", "set-context", "--current", f"--namespace={namespace}"
        )
        assert switched.returncode == 0, switched.stderr

        shown = kubectl_with_plugins(cluster, kubeconfig, "punctual", "trigger", "absent")

        assert shown.returncode == 2
        assert f"ScheduledJob {namespace}/absent not found" in shown.stderr
