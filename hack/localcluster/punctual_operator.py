"""Finding out whether the Punctual operator can run yet, and running it against a local cluster.

"Can run" means its console script exists and ``punctual run --help`` exits 0. The operator gets
the cluster through ``KUBECONFIG`` and Redis through ``PUNCTUAL_REDIS_URL``; options are passed
only when its help lists them, so the launcher keeps working while the CLI grows.
"""

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from localcluster import processes
from localcluster.binaries import REPO_ROOT
from localcluster.cluster import LocalCluster
from localcluster.redis import LocalRedis

HELP_TIMEOUT = 60.0


@dataclass(frozen=True)
class OperatorCommand:
    executable: str
    help_text: str


def _console_script() -> str | None:
    # The script of the environment we run in (`uv run` puts it first on PATH; a bare
    # `.venv/bin/python -m localcluster` does not, hence the look next to the interpreter).
    beside_python = Path(sys.executable).parent / "punctual"
    if beside_python.is_file():
        return str(beside_python)
    return shutil.which("punctual")


def find_operator() -> OperatorCommand | None:
    executable = _console_script()
    if executable is None:
        return None
    try:
        result = subprocess.run(
            [executable, "run", "--help"],
            capture_output=True,
            text=True,
            timeout=HELP_TIMEOUT,
            cwd=REPO_ROOT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    return OperatorCommand(executable, result.stdout + result.stderr)


def start_operator(
    command: OperatorCommand, cluster: LocalCluster, redis: LocalRedis, run_dir: Path
) -> processes.ManagedProcess:
    argv = [command.executable, "run"]
    if "--lock-backend" in command.help_text:
        argv += ["--lock-backend", "redis"]
    if "--redis-url" in command.help_text:
        argv += ["--redis-url", redis.url]
    # The operator serves these on all interfaces; a local run stays on loopback, so they are off.
    for port_option in ("--metrics-port", "--health-port"):
        if port_option in command.help_text:
            argv += [port_option, "0"]
    env = {**cluster.env, "PUNCTUAL_REDIS_URL": redis.url}
    return processes.start("punctual-operator", argv, run_dir, env=env, cwd=REPO_ROOT)
