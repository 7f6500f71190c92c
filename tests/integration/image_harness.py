"""The operator image as a container runtime sees it: the OCI archive that ``make image`` builds
(``hack/image/build.sh``, reused from its cache when the inputs are unchanged), unpacked once by
umoci into a root filesystem, and containers run on it by runc with what the chart gives the
operator's pod (``charts/punctual/templates/deployment.yaml``): the root filesystem read-only,
a memory-backed ``/tmp`` of 16 MiB as the only writable place, the image's own numeric user, no
capabilities, no new privileges, and ``args`` after the image's entrypoint as a kubelet passes
them.

Unlike a pod, a container here shares the host's network namespace: the harness's control plane
and receivers listen on 127.0.0.1. A kubeconfig reaches it as a read-only file, the way a Secret
volume would.

Every container runs in the foreground (``runc run``: runc deletes it, with its cgroups and
mounts, when its process exits) under a runc state folder of the harness's own; leaving
``Containers`` force-deletes any that is still there, so none outlives the tests.
"""

import json
import shutil
import subprocess
import tarfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "hack" / "image" / "build.sh"
BUILD_TIMEOUT = 1800.0
"""A cold build (the Debian base, then every locked wheel) takes about 1.5 minutes on two cores."""
RUN_TIMEOUT = 60.0
TMP_SIZE = "16m"
"""The chart's emptyDir for /tmp: medium Memory, sizeLimit 16Mi."""
NO_CAPABILITIES: dict[str, list[str]] = {
    kind: [] for kind in ("bounding", "effective", "inheritable", "permitted", "ambient")
}


def build() -> Path:
    """``make image``'s archive: its path is the last line the build prints."""
    result = subprocess.run(
        [str(BUILD_SCRIPT)], check=True, stdout=subprocess.PIPE, text=True, timeout=BUILD_TIMEOUT
    )
    return Path(result.stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class Image:
    """An image unpacked from its OCI archive: its layout, its config, its root filesystem."""

    archive: Path
    reference: str
    """The name the archive gives it (``ctr images import`` tags the image with it)."""
    config: dict[str, Any]
    """The image configuration (user, entrypoint, environment, ...)."""
    layer_sizes: list[int]
    """The compressed size of each layer, as the manifest gives it."""
    bundle: Path
    """umoci's runtime bundle: ``config.json`` (the image's user, env, ...) and ``rootfs/``."""

    @classmethod
    def unpack(cls, archive: Path, into: Path) -> Self:
        layout = into / "layout"
        with tarfile.open(archive) as tar:
            tar.extractall(layout, filter="data")
        (descriptor,) = json.loads((layout / "index.json").read_text())["manifests"]
        reference = descriptor["annotations"]["org.opencontainers.image.ref.name"]
        manifest = json.loads(_blob(layout, descriptor["digest"]))
        config = json.loads(_blob(layout, manifest["config"]["digest"]))
        bundle = into / "bundle"
        subprocess.run(
            ["umoci", "unpack", "--image", f"{layout}:{reference}", str(bundle)],
            check=True,
            capture_output=True,
            timeout=RUN_TIMEOUT,
        )
        shutil.rmtree(layout)
        return cls(
            archive=archive,
            reference=reference,
            config=config["config"],
            layer_sizes=[layer["size"] for layer in manifest["layers"]],
            bundle=bundle,
        )

    @property
    def rootfs(self) -> Path:
        return self.bundle / "rootfs"

    def unpacked_bytes(self) -> int:
        """The size of the root filesystem on disk once unpacked: what a node stores."""
        return sum(path.lstat().st_size for path in self.rootfs.rglob("*") if not path.is_symlink())


def _blob(layout: Path, digest: str) -> bytes:
    algorithm, _, encoded = digest.partition(":")
    return (layout / "blobs" / algorithm / encoded).read_bytes()


@dataclass(frozen=True)
class ReadOnlyFile:
    """A host file bind-mounted read-only at ``destination`` in the container."""

    source: Path
    destination: str


class Containers:
    """Containers of one image, run by runc as the chart runs the operator's pod (see above)."""

    def __init__(self, image: Image, state_dir: Path) -> None:
        self.image = image
        self.state_dir = state_dir
        self.bundles_dir = state_dir / "bundles"
        self.runc_root = state_dir / "runc"
        self.created: list[str] = []
        self._base = json.loads((image.bundle / "config.json").read_text())

    def __enter__(self) -> Self:
        self.bundles_dir.mkdir(parents=True, exist_ok=True)
        return self

    def __exit__(self, *_: object) -> None:
        for container_id in self.created:
            subprocess.run(
                [*self._runc(), "delete", "--force", container_id],
                capture_output=True,
                timeout=RUN_TIMEOUT,
                check=False,
            )
        shutil.rmtree(self.bundles_dir, ignore_errors=True)

    def _runc(self) -> list[str]:
        return ["runc", "--root", str(self.runc_root)]

    def command(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        files: Sequence[ReadOnlyFile] = (),
        entrypoint: Sequence[str] | None = None,
    ) -> list[str]:
        """The command that runs the image's entrypoint (or ``entrypoint``, as a pod's
        ``command:`` replaces it) with ``args`` in a new container, in the foreground, and exits
        with it."""
        container_id = f"punctual-{uuid.uuid4().hex[:10]}"
        bundle = self.bundles_dir / container_id
        bundle.mkdir()
        config = self._config(
            [*(self.image.config["Entrypoint"] if entrypoint is None else entrypoint), *args],
            env=env or {},
            files=files,
        )
        (bundle / "config.json").write_text(json.dumps(config))
        self.created.append(container_id)
        return [*self._runc(), "run", "--bundle", str(bundle), container_id]

    def run(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        files: Sequence[ReadOnlyFile] = (),
        entrypoint: Sequence[str] | None = None,
    ) -> "subprocess.CompletedProcess[str]":
        """Runs the container of ``command`` to completion; its exit code, stdout and stderr."""
        return subprocess.run(
            self.command(args, env=env, files=files, entrypoint=entrypoint),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
        )

    def _config(
        self, argv: Sequence[str], *, env: Mapping[str, str], files: Sequence[ReadOnlyFile]
    ) -> dict[str, Any]:
        config: dict[str, Any] = json.loads(json.dumps(self._base))
        # Shared by every container: nothing can write to it.
        config["root"] = {"path": str(self.image.rootfs), "readonly": True}
        process = config["process"]
        process["args"] = list(argv)
        process["terminal"] = False
        process["env"] += [f"{name}={value}" for name, value in env.items()]
        process["capabilities"] = NO_CAPABILITIES
        process["noNewPrivileges"] = True
        config["mounts"].append(
            {
                "destination": "/tmp",
                "type": "tmpfs",
                "source": "tmpfs",
                "options": ["nosuid", "nodev", "mode=1777", f"size={TMP_SIZE}"],
            }
        )
        config["mounts"] += [
            {
                "destination": file.destination,
                "type": "bind",
                "source": str(file.source),
                "options": ["bind", "ro"],
            }
            for file in files
        ]
        linux = config["linux"]
        linux["namespaces"] = [ns for ns in linux["namespaces"] if ns["type"] != "network"]
        return config

    def left(self) -> list[str]:
        """The containers runc still knows of (none once every one has exited)."""
        listed = subprocess.run(
            [*self._runc(), "list", "--format", "json"],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=True,
        ).stdout
        return [container["id"] for container in json.loads(listed or "null") or []]
