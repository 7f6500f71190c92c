"""Punctual installed with Helm onto the real node, the way users install it, end to end.

One release (``helm install`` of ``charts/punctual`` with the image ``make image`` builds, three
replicas, the chart's default lock backend, redis, on the bundled Redis it deploys for it:
``localcluster.helm_release``) is installed once for
the module on conftest's ``real_node_cluster`` and shared by its tests, in the order they are
written: the install itself, each target kind, ``helm test``, exactly-once through a rolling
``helm upgrade``, a deleted pod and a SIGKILLed container, and last ``helm uninstall``. Nothing
runs outside the pods but the receiver the HTTP targets call, on the machine's side of the
node's link (where a pod reaches the machine).
"""

import functools
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml
from chart_harness import Receiver, eventually, kill_container_processes

from localcluster import LocalCluster
from localcluster.binaries import NodeImages
from localcluster.helm_release import LOCAL_VALUES, HelmRelease, local_image_archives, merged

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]

NAMESPACE = "punctual-system"
REPLICAS = 3
EVERY_SECOND_JOBS = 4
SETTLE_SECONDS = 4
"""Slots checked before and after a disruption, beyond the disruption itself."""


@pytest.fixture(scope="module")
def release(
    real_node_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HelmRelease]:
    for archive in local_image_archives():
        real_node_cluster.load_image(archive)
    installed = HelmRelease(real_node_cluster, tmp_path_factory.mktemp("helm"), namespace=NAMESPACE)
    installed.install(merged(LOCAL_VALUES, {"replicaCount": REPLICAS}))
    yield installed
    if installed.helm("list", "--short").stdout.strip():
        installed.uninstall()


@pytest.fixture(scope="module")
def receiver(real_node_cluster: LocalCluster) -> Iterator[Receiver]:
    with Receiver(host=real_node_cluster.node.address.host_address) as server:
        yield server


@pytest.fixture
def namespace(
    release: HelmRelease, request: pytest.FixtureRequest, real_node_cluster: LocalCluster
) -> Iterator[str]:
    """A fresh namespace of the cluster the release is installed on (it watches them all)."""
    name = f"e2e-{request.node.name.lower().replace('_', '-')[:40].strip('-')}"
    real_node_cluster.kubectl("create", "namespace", name)
    yield name
    real_node_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def apply(cluster: LocalCluster, namespace: str, *objects: dict[str, Any]) -> None:
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=yaml.safe_dump_all(objects))


def scheduled_job(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "punctual.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": spec,
    }


def get_json(cluster: LocalCluster, *args: str) -> dict[str, Any]:
    return dict(json.loads(cluster.kubectl("get", *args, "-o", "json").stdout))


def operator_log(cluster: LocalCluster) -> str:
    return cluster.kubectl(
        "logs", f"--namespace={NAMESPACE}", "--selector=app.kubernetes.io/component=operator",
        "--prefix", "--tail=-1", "--max-log-requests=10", check=False,
    ).stdout  # fmt: skip


class TestTheInstall:
    def test_the_deployment_is_available_through_its_real_probes(
        self, release: HelmRelease, real_node_cluster: LocalCluster
    ) -> None:
        deployment = get_json(real_node_cluster, "deployment", "punctual", "-n", NAMESPACE)
        conditions = {c["type"]: c["status"] for c in deployment["status"]["conditions"]}
        assert conditions["Available"] == "True"
        assert deployment["status"]["readyReplicas"] == REPLICAS
        pods = release.operator_pods()
        assert len(pods) == REPLICAS
        for pod in pods:
            (container,) = pod["spec"]["containers"]
            assert container["image"] == "punctual:0.1.0"  # the chart's default, from the archive
            assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
            assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
            (status,) = pod["status"]["containerStatuses"]
            assert status["ready"] is True
            assert status["image"] == "docker.io/library/punctual:0.1.0"
        # The kubelet's probes reached the operator's health server inside each pod.
        assert '"GET /healthz HTTP/1.1" 200' in operator_log(real_node_cluster)

    def test_the_operator_runs_as_its_service_account_with_only_the_charts_rbac(
        self, release: HelmRelease, real_node_cluster: LocalCluster
    ) -> None:
        for pod in release.operator_pods():
            spec = pod["spec"]
            assert spec["serviceAccountName"] == "punctual"
            assert spec["automountServiceAccountToken"] is True
            (container,) = spec["containers"]
            names = {variable["name"] for variable in container.get("env", [])}
            # In-cluster configuration: the mounted token, no kubeconfig from anywhere.
            assert "KUBECONFIG" not in names
            mounts = {mount["mountPath"] for mount in container["volumeMounts"]}
            assert "/var/run/secrets/kubernetes.io/serviceaccount" in mounts
        subject = {"kind": "ServiceAccount", "name": "punctual", "namespace": NAMESPACE}
        granted = []
        for kind in ("clusterrolebindings", "rolebindings"):
            for binding in get_json(real_node_cluster, kind, "--all-namespaces")["items"]:
                if subject in (binding.get("subjects") or []):
                    granted.append(binding)
        manifest = list(yaml.safe_load_all(release.helm("get", "manifest", "punctual").stdout))
        charts = {
            (o["kind"], o["metadata"]["name"])
            for o in manifest
            if o and o["kind"] in ("ClusterRoleBinding", "RoleBinding")
        }
        assert {(b["kind"], b["metadata"]["name"]) for b in granted} == charts
        # The roles as the API server holds them are the chart's, rule for rule.
        for role in (o for o in manifest if o and o["kind"] in ("ClusterRole", "Role")):
            served = get_json(
                real_node_cluster, role["kind"].lower(), role["metadata"]["name"],
                *(["-n", role["metadata"]["namespace"]] if role["kind"] == "Role" else []),
            )  # fmt: skip
            assert served.get("rules") == role.get("rules"), role["metadata"]["name"]


class TestEachTarget:
    def test_the_http_target_calls_a_receiver_the_pods_reach(
        self, real_node_cluster: LocalCluster, namespace: str, receiver: Receiver
    ) -> None:
        path = f"/{namespace}/hello"
        target = {"http": {"url": receiver.url(path)}}
        job = scheduled_job("hello", {"every": "2s", "target": target})
        apply(real_node_cluster, namespace, job)
        calls = eventually(lambda: receiver.calls(path), timeout=60, what=f"call to {path}")
        assert calls[0].headers["Idempotency-Key"].startswith(f"{namespace}/hello/")
        assert "X-Punctual-Scheduled-Time" in calls[0].headers

    def test_the_queue_target_appends_to_the_bundled_redis(
        self, real_node_cluster: LocalCluster, namespace: str
    ) -> None:
        stream = "e2e"
        apply(
            real_node_cluster, namespace,
            scheduled_job("enqueue", {"every": "2s", "target": {"queue": {"stream": stream}}}),
        )  # fmt: skip

        def entries() -> str | None:
            read = real_node_cluster.kubectl(
                "exec", f"--namespace={NAMESPACE}", "deployment/punctual-redis", "--",
                "redis-cli", "XRANGE", f"punctual:ns:{{{namespace}}}:stream:e2e", "-", "+",
                check=False,
            )  # fmt: skip
            return read.stdout if "idempotencyKey" in read.stdout else None

        read_back = eventually(entries, timeout=60, what=f"entry in {stream}")
        assert f"{namespace}/enqueue/" in read_back

    def test_a_jobs_container_runs_and_prints_its_slot(
        self, real_node_cluster: LocalCluster, namespace: str
    ) -> None:
        annotation = "metadata.annotations['punctual.dev/{}']"
        container = {
            "name": "work",
            "image": NodeImages.WORKLOAD,
            "imagePullPolicy": "IfNotPresent",
            "env": [
                {"name": name, "valueFrom": {"fieldRef": {"fieldPath": annotation.format(key)}}}
                for name, key in [
                    ("PUNCTUAL_SCHEDULED_TIME", "scheduled-time"),
                    ("PUNCTUAL_IDEMPOTENCY_KEY", "slot-id"),
                ]
            ],
        }
        template = {
            "spec": {
                "backoffLimit": 0,
                "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
            }
        }
        apply(
            real_node_cluster, namespace,
            scheduled_job("batch", {"every": "5s", "target": {"job": {"template": template}}}),
        )  # fmt: skip

        def completed_job() -> dict[str, Any] | None:
            for job in get_json(real_node_cluster, "jobs", "-n", namespace)["items"]:
                conditions = job.get("status", {}).get("conditions") or []
                if any(c["type"] == "Complete" and c["status"] == "True" for c in conditions):
                    return dict(job)
            return None

        job = eventually(completed_job, timeout=90, what="completed Job")
        name, annotations = job["metadata"]["name"], job["metadata"]["annotations"]
        log = real_node_cluster.kubectl("logs", "-n", namespace, f"job/{name}").stdout
        assert log.splitlines() == [
            f"PUNCTUAL_IDEMPOTENCY_KEY={annotations['punctual.dev/slot-id']}",
            f"PUNCTUAL_SCHEDULED_TIME={annotations['punctual.dev/scheduled-time']}",
        ]

    def test_no_call_of_the_operator_was_forbidden(self, real_node_cluster: LocalCluster) -> None:
        log = operator_log(real_node_cluster)
        assert "Forbidden" not in log


class TestHelmTest:
    def test_the_charts_test_hook_passes(self, release: HelmRelease) -> None:
        result = release.test()
        assert "Phase:          Succeeded" in result.stdout, result.stdout


# -- every slot once, through disruptions -------------------------------------------------------


def every_second_jobs(cluster: LocalCluster, namespace: str, receiver: Receiver) -> list[str]:
    names = [f"tick-{index}" for index in range(EVERY_SECOND_JOBS)]
    apply(
        cluster,
        namespace,
        *(
            scheduled_job(
                name,
                {
                    "every": "1s",
                    "timeout": "2s",
                    "target": {"http": {"url": receiver.url(f"/{namespace}/{name}")}},
                },
            )
            for name in names
        ),
    )
    for path in (f"/{namespace}/{name}" for name in names):
        eventually(lambda path=path: receiver.calls(path), timeout=60, what=f"call to {path}")
    return names


def slot_accounting(
    receiver: Receiver, namespace: str, names: list[str], start: datetime, end: datetime
) -> dict[str, tuple[list[str], list[str]]]:
    """Per job: the slots of [start, end] that got no call, and those called more than once."""
    result = {}
    for name in names:
        calls = receiver.calls(f"/{namespace}/{name}")
        times = Counter(
            datetime.fromisoformat(call.headers["X-Punctual-Scheduled-Time"]) for call in calls
        )
        expected = []
        slot = start.replace(microsecond=0) + timedelta(seconds=1)
        while slot < end:
            expected.append(slot)
            slot += timedelta(seconds=1)
        missed = [t.isoformat() for t in expected if t not in times]
        twice = [t.isoformat() for t, count in times.items() if count > 1]
        result[name] = (missed, twice)
    return result


def assert_every_slot_once(
    cluster: LocalCluster, namespace: str, receiver: Receiver, disrupt: Callable[[], None]
) -> None:
    names = every_second_jobs(cluster, namespace, receiver)
    start = datetime.now(UTC)
    # The window judged: slots on either side of the disruption, each of which must run once.
    time.sleep(SETTLE_SECONDS)
    disrupt()
    time.sleep(SETTLE_SECONDS)
    end = datetime.now(UTC) - timedelta(seconds=2)  # the last slots' calls have arrived
    accounting = slot_accounting(receiver, namespace, names, start, end)
    assert accounting == {name: ([], []) for name in names}, (
        f"missed and duplicated slots of {start:%H:%M:%S}-{end:%H:%M:%S} per job: {accounting}"
    )


def wait_until_all_replicas_ready(release: HelmRelease) -> None:
    def ready() -> bool:
        pods = release.operator_pods()
        return len(pods) == REPLICAS and all(
            status["ready"] for p in pods for status in p["status"].get("containerStatuses", [])
        )

    eventually(ready, timeout=120, what=f"{REPLICAS} ready replicas")


SlotCheck = Callable[[Callable[[], None]], None]


@pytest.fixture
def every_slot_once(
    real_node_cluster: LocalCluster, namespace: str, receiver: Receiver
) -> SlotCheck:
    """``every_slot_once(disrupt)``: every-second jobs run through ``disrupt()``; each slot of the
    time around it must have been called exactly once."""
    return functools.partial(assert_every_slot_once, real_node_cluster, namespace, receiver)


class TestEverySlotOnce:
    def test_through_a_rolling_helm_upgrade(
        self, release: HelmRelease, real_node_cluster: LocalCluster, every_slot_once: SlotCheck
    ) -> None:
        before = {pod["metadata"]["name"] for pod in release.operator_pods()}

        def upgrade() -> None:
            release.upgrade({"operator": {"statusInterval": "3s"}})
            wait_until_all_replicas_ready(release)

        every_slot_once(upgrade)
        after = {pod["metadata"]["name"] for pod in release.operator_pods()}
        assert not before & after  # every replica was replaced

    def test_through_a_deleted_replica_pod(
        self, release: HelmRelease, real_node_cluster: LocalCluster, every_slot_once: SlotCheck
    ) -> None:
        victim = release.operator_pods()[0]["metadata"]["name"]

        def delete() -> None:
            real_node_cluster.kubectl("delete", "pod", "-n", NAMESPACE, victim, timeout=120)
            wait_until_all_replicas_ready(release)

        every_slot_once(delete)

    def test_through_a_sigkilled_replica_container(
        self, release: HelmRelease, real_node_cluster: LocalCluster, every_slot_once: SlotCheck
    ) -> None:
        pod = release.operator_pods()[0]
        (status,) = pod["status"]["containerStatuses"]
        container_id = status["containerID"].removeprefix("containerd://")

        def kill() -> None:
            assert kill_container_processes(container_id) >= 1
            eventually(
                lambda: any(
                    s["restartCount"] > status["restartCount"]
                    for p in release.operator_pods()
                    if p["metadata"]["name"] == pod["metadata"]["name"]
                    for s in p["status"]["containerStatuses"]
                ),
                timeout=60,
                what="restarted container",
            )
            wait_until_all_replicas_ready(release)

        every_slot_once(kill)


class TestUninstall:
    def test_helm_uninstall_leaves_only_the_crd(
        self, release: HelmRelease, real_node_cluster: LocalCluster
    ) -> None:
        release.uninstall()

        left = real_node_cluster.kubectl(
            "get",
            "deployments,replicasets,services,secrets,configmaps,serviceaccounts,roles,rolebindings,"
            "networkpolicies,poddisruptionbudgets",
            "-n", NAMESPACE, "--selector=app.kubernetes.io/instance=punctual", "-o", "name",
        ).stdout.split()  # fmt: skip
        cluster_wide = real_node_cluster.kubectl(
            "get", "clusterroles,clusterrolebindings,validatingwebhookconfigurations",
            "--selector=app.kubernetes.io/instance=punctual", "-o", "name",
        ).stdout.split()  # fmt: skip
        assert (left, cluster_wide) == ([], [])
        eventually(
            lambda: not get_json(real_node_cluster, "pods", "-n", NAMESPACE)["items"],
            timeout=60,
            what="pod-less release namespace",
        )
        real_node_cluster.kubectl("get", "crd", "scheduledjobs.punctual.dev")
