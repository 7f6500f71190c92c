"""The local cluster and Redis are the real things, and the harness cleans up after itself."""

import datetime
import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from localcluster import ComponentError, LocalCluster, LocalRedis, locate_binaries, manifests, ports
from localcluster import processes as launched
from localcluster.binaries import Binaries, kubernetes_version
from localcluster.etcd import Etcd
from localcluster.kwok import FAKE_NODE_NAME

T = TypeVar("T")

SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"


def eventually(probe: Callable[[], T | None], timeout: float, what: str, interval: float = 1) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        assert time.monotonic() < deadline, f"no {what} after {timeout:.0f}s"
        time.sleep(interval)


def get_json(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


class TestTheApiServerIsReal:
    def test_kubectl_version_reports_the_server_version_we_built(
        self, cluster: LocalCluster
    ) -> None:
        versions = json.loads(cluster.kubectl("version", "-o", "json").stdout)

        assert versions["serverVersion"]["gitVersion"] == kubernetes_version()
        assert versions["clientVersion"]["gitVersion"] == kubernetes_version()

    def test_the_api_serves_cronjobs_and_leases(self, cluster: LocalCluster) -> None:
        resources = cluster.kubectl("api-resources", "-o", "name").stdout.split()

        assert "cronjobs.batch" in resources
        assert "leases.coordination.k8s.io" in resources


class TestCustomResourcesAreValidatedByTheRealSchema:
    @pytest.fixture
    def widget_crd(self, cluster: LocalCluster) -> Iterator[str]:
        group = f"g{uuid.uuid4().hex[:8]}.smoke.punctual.test"
        crd = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "properties": {
                                    "spec": {
                                        "type": "object",
                                        "required": ["mode"],
                                        "properties": {
                                            "mode": {"type": "string", "enum": ["fast", "slow"]},
                                            "replicas": {"type": "integer", "minimum": 1},
                                        },
                                    }
                                },
                            }
                        },
                    }
                ],
            },
        }
        cluster.kubectl("apply", "-f", "-", input=json.dumps(crd))
        manifests.wait_established(cluster, [f"crd/widgets.{group}"])
        yield group
        cluster.kubectl("delete", f"crd/widgets.{group}", "--wait=false", check=False)

    def widget(self, group: str, namespace: str, name: str, spec: dict[str, Any]) -> str:
        return json.dumps(
            {
                "apiVersion": f"{group}/v1",
                "kind": "Widget",
                "metadata": {"name": name, "namespace": namespace},
                "spec": spec,
            }
        )

    def test_an_object_inside_the_schema_is_stored(
        self, cluster: LocalCluster, namespace: str, widget_crd: str
    ) -> None:
        good = self.widget(widget_crd, namespace, "good", {"mode": "fast", "replicas": 2})

        cluster.kubectl("apply", "-f", "-", input=good)

        stored = get_json(cluster, f"widgets.{widget_crd}", "good", "-n", namespace)
        assert stored["spec"] == {"mode": "fast", "replicas": 2}

    def test_an_object_outside_the_enum_and_minimum_is_rejected(
        self, cluster: LocalCluster, namespace: str, widget_crd: str
    ) -> None:
        bad = self.widget(widget_crd, namespace, "bad", {"mode": "warp", "replicas": 0})

        result = cluster.kubectl("apply", "-f", "-", input=bad, check=False)

        assert result.returncode != 0
        assert 'spec.mode: Unsupported value: "warp"' in result.stderr
        assert "spec.replicas: Invalid value: 0" in result.stderr
        assert "greater than or equal to 1" in result.stderr


class TestTheFakeNodeHasAHeartbeat:
    def test_kwok_renews_the_fake_nodes_lease_as_a_kubelet_would(
        self, cluster: LocalCluster
    ) -> None:
        # Without it the node lifecycle controller marks the node's pods not ready every ~50 s.
        lease = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{FAKE_NODE_NAME}"
        first = eventually(lambda: cluster.api.get(lease)["spec"].get("renewTime"), 30, "Lease")

        eventually(
            lambda: cluster.api.get(lease)["spec"]["renewTime"] != first, 30, "Lease renewal"
        )

    def test_a_running_pod_marked_not_ready_by_the_node_controller_is_ready_again(
        self, cluster: LocalCluster, namespace: str
    ) -> None:
        # What the node lifecycle controller does to every pod of a node whose heartbeat it
        # missed: Ready=False, its containers still ready. A kubelet reports it ready again.
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "steady", "namespace": namespace},
            "spec": {"containers": [{"name": "noop", "image": "noop:never-pulled"}]},
        }
        cluster.kubectl("apply", "-f", "-", input=json.dumps(pod))
        path = f"/api/v1/namespaces/{namespace}/pods/steady"
        eventually(lambda: ready(cluster.api.get(path)).get("status") == "True", 60, "Ready")
        # An old transition time tells kwok's answer (its time now) from the pod left as it was.
        marked = {"type": "Ready", "status": "False", "lastTransitionTime": LONG_AGO}
        cluster.kubectl(
            "patch", "pod", "steady", "-n", namespace, "--subresource=status",
            "-p", json.dumps({"status": {"conditions": [marked]}}),
        )  # fmt: skip

        again = eventually(
            lambda: (
                (found := ready(cluster.api.get(path)))["lastTransitionTime"] != LONG_AGO and found
            ),
            30,
            "the pod Ready again",
        )
        assert again["status"] == "True"
        assert cluster.api.get(path)["status"]["phase"] == "Running"


LONG_AGO = "2000-01-01T00:00:00Z"


def ready(pod: dict[str, Any]) -> dict[str, Any]:
    """A pod's Ready condition ({} before it has one)."""
    return next((c for c in pod["status"].get("conditions", []) if c["type"] == "Ready"), {})


class TestTheRealControllersRunCronJobsToCompletion:
    def test_an_every_minute_cronjob_gets_a_job_whose_pod_succeeds_on_the_fake_node(
        self, cluster: LocalCluster, namespace: str
    ) -> None:
        cronjob = {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "every-minute", "namespace": namespace},
            "spec": {
                "schedule": "*/1 * * * *",
                "concurrencyPolicy": "Forbid",
                "jobTemplate": {
                    "spec": {
                        "backoffLimit": 0,
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [{"name": "noop", "image": "noop:never-pulled"}],
                            }
                        },
                    }
                },
            },
        }
        cluster.kubectl("apply", "-f", "-", input=json.dumps(cronjob))

        # The controller creates the Job at the next minute boundary: up to 60 s, plus its delay.
        job = eventually(
            lambda: next(iter(get_json(cluster, "jobs", "-n", namespace)["items"]), None),
            timeout=120,
            what="Job created by the CronJob controller",
        )
        owner = job["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"]) == ("CronJob", "every-minute")
        scheduled = datetime.datetime.fromisoformat(
            job["metadata"]["annotations"][SCHEDULED_TIMESTAMP]
        )
        assert (scheduled.second, scheduled.microsecond) == (0, 0)
        assert scheduled.tzinfo is not None

        job_name = job["metadata"]["name"]
        pod = eventually(
            lambda: next(
                (
                    pod
                    for pod in get_json(
                        cluster, "pods", "-n", namespace, "-l", f"job-name={job_name}"
                    )["items"]
                    if pod["status"].get("phase") == "Succeeded"
                ),
                None,
            ),
            timeout=60,
            what=f"Succeeded pod of Job {job_name}",
        )
        assert pod["spec"]["nodeName"] == FAKE_NODE_NAME

        def complete() -> bool:
            conditions = get_json(cluster, "job", job_name, "-n", namespace)["status"].get(
                "conditions", []
            )
            return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions)

        eventually(complete, timeout=60, what=f"Complete condition on Job {job_name}")


class TestRedisBehavesLikeRedis:
    def test_set_nx_px_takes_a_free_key_once_and_the_key_expires(
        self, redis_server: LocalRedis
    ) -> None:
        client = redis.Redis.from_url(redis_server.url)
        key = f"slot:{uuid.uuid4().hex}"

        assert client.set(key, "holder-1", nx=True, px=1000) is True
        assert client.set(key, "holder-2", nx=True, px=1000) is None
        assert client.get(key) == b"holder-1"
        assert 0 < client.pttl(key) <= 1000

        eventually(lambda: client.exists(key) == 0, timeout=3, what="expiry", interval=0.1)
        assert client.set(key, "holder-2", nx=True, px=1000) is True

    def test_a_password_protected_redis_refuses_clients_without_it(self, tmp_path: Path) -> None:
        with LocalRedis(password="s3cret/+", run_dir=tmp_path) as protected:
            # No retries: redis-py would back off and retry an authentication failure for seconds.
            anonymous = redis.Redis(
                host=protected.host, port=protected.port, retry=Retry(NoBackoff(), 0)
            )
            with pytest.raises(redis.AuthenticationError):
                anonymous.ping()
            assert redis.Redis.from_url(protected.url).ping() is True


class TestNothingOutlivesTheHarness:
    """The session's cluster is checked the same way when its fixture tears down."""

    def test_a_local_redis_leaves_no_process_and_no_port_behind(self, tmp_path: Path) -> None:
        with LocalRedis(run_dir=tmp_path) as server:
            pid, port = server.pid, server.port
            assert launched.alive([pid]) == [pid]

        assert launched.alive([pid]) == []
        assert ports.listening([port]) == []

    def test_a_whole_cluster_leaves_no_process_and_no_port_behind(self, tmp_path: Path) -> None:
        with LocalCluster(kwok=True, run_dir=tmp_path) as cluster:
            names = [process.name for process in cluster.launched]
            assert launched.alive(cluster.pids) == cluster.pids

        assert names == [
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kwok",
        ]
        assert launched.alive(cluster.pids) == []
        assert ports.listening(cluster.ports) == []

    def test_etcd_leaves_no_process_and_no_port_behind(self, tmp_path: Path) -> None:
        with Etcd(locate_binaries(), tmp_path) as etcd:
            pids, etcd_ports = [etcd.process.pid] if etcd.process else [], etcd.ports

        assert pids
        assert launched.alive(pids) == []
        assert ports.listening(etcd_ports) == []

    def test_a_child_ignoring_sigterm_is_killed_with_its_whole_process_group(
        self, tmp_path: Path
    ) -> None:
        # Ignoring a signal is inherited across fork and exec: the sleep ignores SIGTERM too.
        stubborn = launched.start(
            "stubborn", ["sh", "-c", "trap '' TERM; sleep 600 & wait"], tmp_path
        )
        group = stubborn.pid
        launched.wait_until(
            stubborn,
            lambda: len(launched.group_members(group)) >= 2,
            "the shell has forked",
            10,
            0.05,
        )

        launched.stop_processes([stubborn], grace=0.5)

        assert launched.group_members(group) == []

    def test_a_component_that_dies_at_start_fails_with_the_tail_of_its_log(
        self, tmp_path: Path
    ) -> None:
        doomed = launched.start(
            "doomed",
            ["sh", "-c", "echo 'listen tcp: address already in use' >&2; exit 3"],
            tmp_path,
        )

        with pytest.raises(ComponentError) as failure:
            launched.wait_until(doomed, lambda: False, "it is ready", timeout=10)

        assert "doomed exited with code 3 while waiting until it is ready" in str(failure.value)
        assert "address already in use" in str(failure.value)

    def test_a_cluster_whose_apiserver_cannot_start_stops_its_etcd_and_says_why(
        self, tmp_path: Path
    ) -> None:
        real = locate_binaries()
        fake_bin = tmp_path / "bin"
        fake_bin.mkdir()
        (fake_bin / "etcd").symlink_to(real.etcd)
        apiserver = fake_bin / "kube-apiserver"
        apiserver.write_text("#!/bin/sh\necho 'E0101 cannot reach the moon' >&2\nexit 1\n")
        apiserver.chmod(0o755)
        cluster = LocalCluster(kwok=False, binaries=Binaries(fake_bin), run_dir=tmp_path / "run")

        with pytest.raises(ComponentError, match="cannot reach the moon"), cluster:
            pass

        assert len(cluster.pids) == 2
        assert launched.alive(cluster.pids) == []
        assert ports.listening(cluster.ports) == []
