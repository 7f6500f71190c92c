"""The chart's Sentinel-managed Redis (``redis.bundled.sentinel.enabled``) on the real node.

One release (``LOCAL_VALUES`` with Sentinel: the image built from Debian's redis-server and
redis-sentinel) is installed once for the module and shared by its tests, in the order they are
written: the three members agree on a primary with two replicas and three Sentinels, the
operator is Ready on it and runs jobs through it, and a deleted primary's pod is failed over
without a slot run twice, the pod coming back as a replica under its own name.
"""

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from chart_harness import Receiver, eventually
from test_helm_e2e import every_second_jobs, get_json, slot_accounting

from localcluster import LocalCluster
from localcluster.helm_release import LOCAL_VALUES, HelmRelease, local_image_archives, merged

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]

NAMESPACE = "punctual-sentinel"
REPLICAS = 2
SERVICE = "punctual"
MEMBERS = [f"punctual-redis-{member}" for member in range(3)]
SETTLE_SECONDS = 4
FAILOVER_TIMEOUT = 90
"""The Sentinels' down-after (5 s), the election, and the deleted pod's restart, on two cores."""


@pytest.fixture(scope="module")
def release(
    real_node_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HelmRelease]:
    for archive in local_image_archives():
        real_node_cluster.load_image(archive)
    installed = HelmRelease(real_node_cluster, tmp_path_factory.mktemp("helm"), namespace=NAMESPACE)
    sentinel = {"redis": {"bundled": {"sentinel": {"enabled": True}}}}
    installed.install(merged(LOCAL_VALUES, {"replicaCount": REPLICAS, **sentinel}))
    yield installed
    installed.uninstall()


@pytest.fixture(scope="module")
def receiver(real_node_cluster: LocalCluster) -> Iterator[Receiver]:
    with Receiver(host=real_node_cluster.node.address.host_address) as server:
        yield server


@pytest.fixture
def namespace(real_node_cluster: LocalCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    name = f"e2e-sentinel-{request.node.name.lower().replace('_', '-')[:30].strip('-')}"
    real_node_cluster.kubectl("create", "namespace", name)
    yield name
    real_node_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def redis_cli(cluster: LocalCluster, pod: str, container: str, *command: str) -> list[str]:
    """``redis-cli`` in a member's container (its password from the container's environment),
    its reply's lines; [] when the member does not answer."""
    port = "26379" if container == "sentinel" else "6379"
    result = cluster.kubectl(
        "exec", f"--namespace={NAMESPACE}", pod, "-c", container, "--",
        "redis-cli", "-p", port, *command, check=False, timeout=30,
    )  # fmt: skip
    return result.stdout.splitlines() if result.returncode == 0 else []


def sentinel_view(cluster: LocalCluster) -> dict[str, str]:
    """``SENTINEL master`` as the first answering Sentinel has it: flags, ip, num-slaves, ..."""
    for pod in MEMBERS:
        lines = redis_cli(cluster, pod, "sentinel", "SENTINEL", "master", SERVICE)
        if len(lines) >= 2:
            return dict(zip(lines[::2], lines[1::2], strict=False))
    return {}


def primary_pod(cluster: LocalCluster) -> str | None:
    """The pod of the primary the Sentinels name, while they see it up."""
    view = sentinel_view(cluster)
    return view["ip"].split(".")[0] if view.get("flags") == "master" else None


def healthy_primary(cluster: LocalCluster) -> str | None:
    """The primary's pod while it has two replicas online and three Sentinels watch it."""
    primary = primary_pod(cluster)
    if primary is None or sentinel_view(cluster).get("num-other-sentinels") != "2":
        return None
    replication = redis_cli(cluster, primary, "redis", "INFO", "replication")
    return primary if "connected_slaves:2" in replication else None


class TestTheMembers:
    def test_they_agree_on_a_primary_with_two_replicas_and_three_sentinels(
        self, release: HelmRelease, real_node_cluster: LocalCluster
    ) -> None:
        primary = eventually(
            lambda: healthy_primary(real_node_cluster),
            timeout=FAILOVER_TIMEOUT,
            what="a primary with two replicas, seen by three Sentinels",
        )

        assert primary in MEMBERS
        replication = redis_cli(real_node_cluster, primary, "redis", "INFO", "replication")
        assert "role:master" in replication
        assert "connected_slaves:2" in replication
        assert redis_cli(
            real_node_cluster, primary, "redis", "CONFIG", "GET", "min-replicas-to-write"
        ) == ["min-replicas-to-write", "1"]
        # Named by their pods' DNS names, which survive a restart.
        view = sentinel_view(real_node_cluster)
        assert view["ip"] == f"{primary}.punctual-redis.{NAMESPACE}.svc"


class TestTheOperatorOnSentinel:
    def test_it_is_ready_and_runs_a_job_through_the_primary(
        self,
        release: HelmRelease,
        real_node_cluster: LocalCluster,
        namespace: str,
        receiver: Receiver,
    ) -> None:
        pods = release.operator_pods()
        assert len(pods) == REPLICAS
        for pod in pods:
            (container,) = pod["spec"]["containers"]
            assert "--redis-wait-replicas=1" in container["args"]
            (status,) = pod["status"]["containerStatuses"]
            assert status["ready"] is True

        [name] = every_second_jobs(real_node_cluster, namespace, receiver)[:1]

        job = get_json(real_node_cluster, "scheduledjob", name, "-n", namespace)
        ready = [c for c in job["status"]["conditions"] if c["type"] == "Ready"]
        assert ready[0]["status"] == "True"

    def test_a_deleted_primary_pod_is_failed_over_and_no_slot_runs_twice(
        self,
        release: HelmRelease,
        real_node_cluster: LocalCluster,
        namespace: str,
        receiver: Receiver,
    ) -> None:
        names = every_second_jobs(real_node_cluster, namespace, receiver)
        primary = eventually(
            lambda: healthy_primary(real_node_cluster),
            timeout=FAILOVER_TIMEOUT,
            what="a healthy primary",
        )
        start = datetime.now(UTC)
        time.sleep(SETTLE_SECONDS)  # slots before the failover: the window judged starts here

        real_node_cluster.kubectl("delete", "pod", f"--namespace={NAMESPACE}", primary, timeout=120)
        promoted = eventually(
            lambda: p if (p := primary_pod(real_node_cluster)) not in (None, primary) else None,
            timeout=FAILOVER_TIMEOUT,
            what="another primary",
        )
        failed_over = datetime.now(UTC)
        for name in names:
            path = f"/{namespace}/{name}"
            eventually(
                lambda path=path: any(
                    datetime.fromisoformat(call.headers["X-Punctual-Scheduled-Time"]) > failed_over
                    for call in receiver.calls(path)
                ),
                timeout=60,
                what=f"a call to {path} after the failover",
            )
        time.sleep(SETTLE_SECONDS)  # slots after it, each of which must run once
        end = datetime.now(UTC) - timedelta(seconds=2)
        # The deleted pod came back under its own name, as a replica of the promoted one.
        assert (
            eventually(
                lambda: healthy_primary(real_node_cluster),
                timeout=FAILOVER_TIMEOUT,
                what="the deleted pod back as a replica",
            )
            == promoted
        )
        accounting = slot_accounting(receiver, namespace, names, start, end)
        assert {name: twice for name, (_, twice) in accounting.items()} == {
            name: [] for name in names
        }, f"slots called twice, {start:%H:%M:%S}-{end:%H:%M:%S}: {accounting}"
