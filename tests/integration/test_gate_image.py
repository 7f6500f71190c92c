"""The gate image of warm start (``make image`` builds it beside the operator's,
``hack/image/build-gate.sh``) holds the static gate alone, at ``/gate``, and runs as the
operator's init containers run it: read-only root, no capabilities, no new privileges, a
non-root user, and nothing else in the image (no libc, no shell) for it to lean on."""

import json
import shutil
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from image_harness import Containers, Image

from localcluster.helm_release import GATE_IMAGE_BUILD, built_image

pytestmark = pytest.mark.image

REPO_ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
MAX_UNPACKED_MB = 4
"""The static gate is under 2 MB: the image is a few seconds' pull in every tenant's namespace."""
MB = 1_000_000


@dataclass(frozen=True)
class Unpacked:
    image: Image
    files: list[Path]
    """What the image holds, listed before any container ran (runc adds its mountpoints)."""


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Unpacked]:
    image = Image.unpack(built_image(GATE_IMAGE_BUILD), tmp_path_factory.mktemp("gate-image"))
    yield Unpacked(
        image, sorted(path.relative_to(image.rootfs) for path in image.rootfs.rglob("*"))
    )
    shutil.rmtree(image.bundle)


@pytest.fixture(scope="module")
def image(unpacked: Unpacked) -> Image:
    return unpacked.image


@pytest.fixture(scope="module")
def containers(image: Image, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Containers]:
    # The harness's /tmp (a tmpfs) stands for the pod's emptyDir, a directory anyone may write to.
    # runc gives a tmpfs the mode of the directory it is mounted on, and makes the directory when
    # the image has none (the gate's has nothing but /gate) with mode 0755.
    (image.rootfs / "tmp").mkdir()
    (image.rootfs / "tmp").chmod(0o1777)
    with Containers(image, tmp_path_factory.mktemp("containers")) as started:
        yield started
    assert started.left() == []


class TestTheImage:
    def test_is_named_punctual_gate_of_the_operators_version(self, image: Image) -> None:
        assert image.reference == f"docker.io/library/punctual-gate:{VERSION}"

    def test_holds_the_gate_alone_read_only_and_executable(self, unpacked: Unpacked) -> None:
        assert unpacked.files == [Path("gate")]
        assert (unpacked.image.rootfs / "gate").stat().st_mode & 0o7777 == 0o555
        assert unpacked.image.unpacked_bytes() < MAX_UNPACKED_MB * MB

    def test_its_entrypoint_is_the_gate_and_its_user_not_root(self, image: Image) -> None:
        assert image.config["Entrypoint"] == ["/gate"]
        assert image.config["User"] == "65532:65532"


class TestItRunsLikeAnInitContainer:
    def test_noop_exits_0(self, containers: Containers) -> None:
        result = containers.run(["noop"])

        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")

    def test_wait_for_an_instant_past_releases_at_once_with_its_line(
        self, containers: Containers
    ) -> None:
        at = time.time_ns() // 1_000_000 - 1000

        result = containers.run(["wait", "--at", str(at)])

        assert result.returncode == 0, result.stderr
        line = json.loads(result.stdout)
        assert line["punctualGate"] == "released"
        assert line["releaseAtMs"] == at
        assert line["lateMs"] >= 1000

    def test_install_writes_where_the_pod_gives_it_room(self, containers: Containers) -> None:
        installed = containers.run(["install", "/tmp/gate"])
        refused = containers.run(["install", "/gate-copy"])

        assert installed.returncode == 0, installed.stderr
        assert refused.returncode == 1
        assert "read-only file system" in refused.stderr
