"""The operator image (``make image``) is what the chart expects of it: a numeric non-root user,
``punctual`` as its entrypoint, a name containerd tags it with, a size worth pulling; and it
runs as the chart runs it, read-only root and all (``image_harness``): its commands answer, and
``punctual run`` in the container schedules a ScheduledJob applied with kubectl against the
harness's control plane.

The image is built, or reused from its cache, once per session (a cold build takes minutes).
"""

import itertools
import os
import shutil
import tomllib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from image_harness import Containers, Image, ReadOnlyFile, build
from operator_harness import (
    Operators,
    Receiver,
    apply,
    eventually,
    http_target,
    millis,
    scheduled_job,
)

from localcluster import LocalCluster

pytestmark = pytest.mark.image
pytest_plugins = ["operator_fixtures"]

REPO_ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
CHART_USER = "10001:10001"
"""The chart's runAsUser and runAsGroup (its pod security context)."""
MAX_UNPACKED_MB = 240
"""About 215 MB today: 107 MB of Debian (python3 and what it needs), 111 MB of virtualenv, half of
which is kubernetes_asyncio's generated models. The issue's 150 MB target is not met; this bound
keeps it from growing unnoticed."""
KUBECONFIG = "/etc/punctual/kubeconfig"
MB = 1_000_000
SECOND_MS = 1000


@pytest.fixture(scope="session")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Image]:
    unpacked = Image.unpack(build(), tmp_path_factory.mktemp("image"))
    yield unpacked
    shutil.rmtree(unpacked.bundle)


@pytest.fixture(scope="module")
def containers(image: Image, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Containers]:
    with Containers(image, tmp_path_factory.mktemp("containers")) as started:
        yield started
    assert started.left() == []


class TestTheImage:
    def test_it_runs_as_the_charts_numeric_non_root_user(self, image: Image) -> None:
        assert image.config["User"] == CHART_USER

    def test_its_entrypoint_is_punctual_and_its_default_command_run(self, image: Image) -> None:
        assert image.config["Entrypoint"] == ["punctual"]
        assert image.config["Cmd"] == ["run"]

    def test_containerd_names_it_punctual_at_the_projects_version(self, image: Image) -> None:
        # What `image: punctual:<version>` in a pod resolves to.
        assert image.reference == f"docker.io/library/punctual:{VERSION}"

    def test_it_stays_within_its_size_unpacked(self, image: Image) -> None:
        unpacked, compressed = image.unpacked_bytes(), sum(image.layer_sizes)
        print(f"image size: {unpacked / MB:.0f} MB unpacked, {compressed / MB:.0f} MB compressed")
        assert unpacked < MAX_UNPACKED_MB * MB


class TestItsCommandsWithAReadOnlyRoot:
    def test_help_names_the_commands(self, containers: Containers) -> None:
        result = containers.run(["--help"])
        assert result.returncode == 0, result.stderr
        for command in ("next", "crd", "convert", "run"):
            assert command in result.stdout

    def test_next_applies_the_dst_rules_with_the_images_zone_data(
        self, containers: Containers
    ) -> None:
        # 02:00-03:00 does not exist in Paris on 2026-03-29: the 02:30 slot shifts forward.
        result = containers.run(
            ["next", "30 2 * * *", "--tz=Europe/Paris", "--after=2026-03-28T12:00:00Z", "-n2"]
        )
        assert result.returncode == 0, result.stderr
        assert [line.split()[0] for line in result.stdout.splitlines()] == [
            "2026-03-29T03:00:00+02:00",
            "2026-03-30T02:30:00+02:00",
        ]


WRITES = """
import os
for path in ("/tmp/spill", "/opt/punctual/spill", "/spill"):
    try:
        open(path, "w").close()
        print(path, "written")
    except OSError as error:
        print(path, os.strerror(error.errno))
print("uid", os.getuid(), "gid", os.getgid())
"""


class TestItsFilesystem:
    def test_only_the_charts_tmp_volume_takes_writes_as_the_images_user(
        self, containers: Containers
    ) -> None:
        result = containers.run(["-c", WRITES], entrypoint=["python3"])
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == [
            "/tmp/spill written",
            "/opt/punctual/spill Read-only file system",
            "/spill Read-only file system",
            "uid 10001 gid 10001",
        ]


@pytest.fixture(scope="module")
def kubeconfig(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The admin kubeconfig, readable by the image's user only (a Secret volume's 0400)."""
    copy = tmp_path_factory.mktemp("kubeconfig") / "kubeconfig"
    shutil.copyfile(cluster.kubeconfig, copy)
    uid, gid = (int(part) for part in CHART_USER.split(":"))
    os.chown(copy, uid, gid)
    copy.chmod(0o400)
    return copy


@pytest.fixture(scope="module")
def in_container(
    containers: Containers, kubeconfig: Path
) -> Callable[[str, Sequence[str]], list[str]]:
    """How a replica of the harness runs in the image, the admin kubeconfig mounted read-only."""

    def command(_replica_id: str, args: Sequence[str]) -> list[str]:
        return containers.command(
            args,
            env={"KUBECONFIG": KUBECONFIG},
            files=[ReadOnlyFile(source=kubeconfig, destination=KUBECONFIG)],
        )

    return command


@pytest.fixture(scope="module")
def operator_in_image(
    cluster: LocalCluster,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    in_container: Callable[[str, Sequence[str]], list[str]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Operators]:
    """One replica, ``punctual run`` in the image, watching the module's namespace."""
    with Operators(
        cluster,
        tmp_path_factory.mktemp("operator"),
        namespace=module_namespace,
        command=in_container,
    ) as started:
        yield started


class TestTheOperatorInTheImage:
    def test_it_runs_a_scheduled_job_applied_with_kubectl_every_second(
        self,
        cluster: LocalCluster,
        module_namespace: str,
        receiver: Receiver,
        operator_in_image: Operators,
    ) -> None:
        name = "in-the-image"
        job = f"{module_namespace}/{name}"
        spec = {"every": "1s", "target": http_target(receiver, module_namespace, name)}
        apply(cluster, scheduled_job(module_namespace, name, spec))
        calls = eventually(
            lambda: receiver.calls(job) if len(receiver.calls(job)) >= 3 else None,
            timeout=60,
            what=f"three calls of {job} from the operator in its image",
        )
        slots = [millis(call.slot) for call in calls[:3]]
        assert [b - a for a, b in itertools.pairwise(slots)] == [SECOND_MS, SECOND_MS]
        assert operator_in_image.problems() == {}, operator_in_image.logs()
