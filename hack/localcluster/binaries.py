"""Where the control-plane binaries, the real node's images, the Go-built tools, the CRDs of
other projects the chart renders objects of and cert-manager are: whatever
``hack/build-control-plane.sh``, ``hack/image/build-node-images.sh``, ``hack/build-go-tools.sh``,
``hack/build-chart-crds.sh`` and ``hack/cert-manager/build.sh`` say.

Each script builds once per pinned input into a cache outside the clone and afterwards only
prints the folder, so asking it is both the lookup and the (rare) build.
"""

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HEARTBEAT_SECONDS = 60.0
HACK_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = HACK_DIR.parent
BUILD_SCRIPT = HACK_DIR / "build-control-plane.sh"
IMAGES_SCRIPT = HACK_DIR / "image" / "build-node-images.sh"
GO_TOOLS_SCRIPT = HACK_DIR / "build-go-tools.sh"
CHART_CRDS_SCRIPT = HACK_DIR / "build-chart-crds.sh"
CERT_MANAGER_SCRIPT = HACK_DIR / "cert-manager" / "build.sh"
K8S_VERSION_FILE = HACK_DIR / "k8s" / "VERSION"


class BinariesUnavailableError(RuntimeError):
    pass


@dataclass(frozen=True)
class Binaries:
    directory: Path

    def _binary(self, name: str) -> Path:
        path = self.directory / name
        if not path.is_file():
            raise BinariesUnavailableError(f"{path} is missing; run {BUILD_SCRIPT}")
        return path

    @property
    def etcd(self) -> Path:
        return self._binary("etcd")

    @property
    def kube_apiserver(self) -> Path:
        return self._binary("kube-apiserver")

    @property
    def kube_controller_manager(self) -> Path:
        return self._binary("kube-controller-manager")

    @property
    def kube_scheduler(self) -> Path:
        return self._binary("kube-scheduler")

    @property
    def kubectl(self) -> Path:
        return self._binary("kubectl")

    @property
    def kwok(self) -> Path:
        return self._binary("kwok")

    @property
    def has_kwok(self) -> bool:
        return (self.directory / "kwok").is_file()

    @property
    def kubelet(self) -> Path:
        return self._binary("kubelet")

    @property
    def kube_proxy(self) -> Path:
        return self._binary("kube-proxy")

    @property
    def coredns(self) -> Path:
        return self._binary("coredns")


@dataclass(frozen=True)
class NodeImages:
    """The OCI archives of the images every real node loads
    (``hack/image/build-node-images.sh``)."""

    directory: Path

    PAUSE = "localhost/punctual-pause:local"
    WORKLOAD = "localhost/punctual-workload:local"

    @property
    def archives(self) -> list[Path]:
        return [self.directory / "pause.tar", self.directory / "workload.tar"]


def kubernetes_version() -> str:
    return K8S_VERSION_FILE.read_text().strip()


def locate_binaries(*, progress: Callable[[str], None] | None = None) -> Binaries:
    """Runs the build script (a no-op when the binaries exist) and returns their folder."""
    return Binaries(_built_folder(BUILD_SCRIPT, "the control plane", progress))


def locate_node_images(*, progress: Callable[[str], None] | None = None) -> NodeImages:
    """Runs the image script (a no-op when the archives exist) and returns their folder."""
    return NodeImages(_built_folder(IMAGES_SCRIPT, "the node's images", progress))


def locate_go_tool(name: str, *, progress: Callable[[str], None] | None = None) -> Path:
    """Runs the tools' script for ``name`` (a program of ``hack/programs.tsv`` with a ``go:``
    source; a no-op once built) and returns the program's path."""
    return _built_folder(GO_TOOLS_SCRIPT, name, progress, name)


def locate_chart_crds(*, progress: Callable[[str], None] | None = None) -> list[Path]:
    """Runs the CRDs' script (a no-op once made) and returns its CRD files: the Prometheus
    Operator's and cert-manager's, from their Go modules."""
    folder = _built_folder(CHART_CRDS_SCRIPT, "the chart's third-party CRDs", progress)
    return sorted(folder.glob("*.yaml"))


def locate_cert_manager(*, progress: Callable[[str], None] | None = None) -> Path:
    """Runs cert-manager's build script (a no-op once built) and returns the program: its
    controllers (``controller``) and CA injector (``cainjector``), from its Go module."""
    return _built_folder(CERT_MANAGER_SCRIPT, "cert-manager", progress)


def _built_folder(
    script: Path, what: str, progress: Callable[[str], None] | None, *arguments: str
) -> Path:
    """The path a build script prints on its last line, once it has built what is missing.

    With ``progress`` the script's own progress lines go to our stderr as they come, and a
    heartbeat goes to ``progress`` every minute: a cold build is silent for minutes at a time.
    Without it they are kept for the error message.
    """
    started = time.monotonic()
    with subprocess.Popen(
        [str(script), *arguments],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=None if progress else subprocess.PIPE,
        text=True,
    ) as build:
        try:
            while True:
                try:
                    stdout, stderr = build.communicate(timeout=HEARTBEAT_SECONDS)
                    break
                except subprocess.TimeoutExpired:
                    if progress:
                        elapsed = time.monotonic() - started
                        progress(f"still building {what} ({elapsed:.0f}s)")
        except BaseException:
            # Ctrl-C reaches the script too (same process group); SIGTERM to us alone does not,
            # and leaving the `with` would otherwise wait for the whole build.
            build.terminate()
            raise
    lines = stdout.strip().splitlines()
    if build.returncode != 0 or not lines:
        detail = "\n".join((stderr or "").splitlines()[-30:])
        raise BinariesUnavailableError(
            f"{script} failed with exit code {build.returncode}\n{detail}".rstrip()
        )
    return Path(lines[-1])
