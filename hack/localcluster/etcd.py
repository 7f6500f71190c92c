"""A single-member etcd on free loopback ports with a throwaway data directory.

``--unsafe-no-fsync`` because the data dies with the run: fsyncs would only slow every API write.
"""

import json
import shutil
import tempfile
import urllib.request
from pathlib import Path

from localcluster import processes
from localcluster.binaries import Binaries
from localcluster.ports import LOOPBACK, free_port

READY_TIMEOUT = 60.0


class Etcd(processes.Service):
    def __init__(self, binaries: Binaries, run_dir: Path | None = None) -> None:
        self.binaries = binaries
        self._own_dir: tempfile.TemporaryDirectory[str] | None = None
        if run_dir is None:
            self._own_dir = tempfile.TemporaryDirectory(prefix="punctual-etcd-")
            run_dir = Path(self._own_dir.name)
        self.run_dir = run_dir
        self.client_port = free_port()
        self.peer_port = free_port()
        self.process: processes.ManagedProcess | None = None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.client_port}"

    @property
    def ports(self) -> list[int]:
        return [self.client_port, self.peer_port]

    def _healthy(self) -> bool:
        with urllib.request.urlopen(self.url + "/health", timeout=2) as reply:
            return bool(json.load(reply).get("health") == "true")

    def start(self) -> None:
        peer_url = f"http://{LOOPBACK}:{self.peer_port}"
        data_dir = self.run_dir / "etcd-data"
        # A cluster is new every time: data left in a reused run directory belongs to another
        # PKI and would only confuse.
        shutil.rmtree(data_dir, ignore_errors=True)
        data_dir.mkdir(mode=0o700, parents=True)
        self.process = processes.start(
            "etcd",
            [
                str(self.binaries.etcd),
                "--name=default",
                f"--data-dir={data_dir}",
                f"--listen-client-urls={self.url}",
                f"--advertise-client-urls={self.url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=default={peer_url}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
            self.run_dir,
        )
        processes.wait_until(
            self.process, self._healthy, "GET /health reports healthy", READY_TIMEOUT
        )

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
        if self._own_dir is not None:
            self._own_dir.cleanup()
