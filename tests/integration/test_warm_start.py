"""Warm start of the job target on the real node, end to end, with the operator installed by Helm.

A warm ScheduledJob's Job is made ``lead`` ahead of its slot, its pod scheduled, its sandbox,
network and images ready, and the gate releases the container at the slot; the container's own
call to a receiver on the machine's side of the node's link says when it started. The release
(``localcluster.helm_release``, the bundled Redis as lock backend) has one replica, two for the
last test, which kills one. Timing is never asserted tightly (``make compare`` measures speed):
a warm start arrives never before its slot and well under the cold start measured in this module
with the same template. Slots are short (every 20 to 40 s, a lead of 10 s), so the module runs
in a few minutes; every wait is on a condition, a negative one until the slot it is about has
passed.
"""

import contextlib
import io
import json
import tarfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from chart_harness import Call, Receiver, eventually, kill_container_processes

from localcluster import LocalCluster
from localcluster.binaries import NodeImages, locate_node_images
from localcluster.helm_release import LOCAL_VALUES, HelmRelease, local_image_archives, merged

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]

RELEASE_NAMESPACE = "punctual-warm"
WORKLOAD = NodeImages.WORKLOAD
"""A static binary in an otherwise empty image: no shell, entrypoint ``/workload``."""
LEAD = timedelta(seconds=10)
SCHEDULED_TIME = "punctual.dev/scheduled-time"
RELEASE_AT = "punctual.dev/release-at"
WARM_START = "punctual.dev/warm-start"
MISSING_IMAGE = "localhost/punctual-not-loaded:local"
"""No registry serves it: its pull fails at once, ErrImagePull."""
SLOT_WAIT = 120.0
"""Long enough for two slots at every 40 s, the pods' start on a loaded machine included."""


class WorkloadReceiver(Receiver):
    """Every call recorded; the first call of a path under ``/fail-once/`` answered 500, which
    makes the workload exit 1 (its container then restarts under ``OnFailure``)."""

    def respond(self, path: str, headers: Any, *, arrived: datetime) -> int:
        super().respond(path, headers, arrived=arrived)
        return 500 if "/fail-once/" in path and len(self.calls(path)) == 1 else 204


@pytest.fixture(scope="module")
def release(
    real_node_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HelmRelease]:
    for archive in local_image_archives():
        real_node_cluster.load_image(archive)
    installed = HelmRelease(
        real_node_cluster, tmp_path_factory.mktemp("helm"), namespace=RELEASE_NAMESPACE
    )
    installed.install(
        merged(LOCAL_VALUES, {"replicaCount": 1, "operator": {"statusInterval": "2s"}})
    )
    yield installed
    if installed.helm("list", "--short").stdout.strip():
        installed.uninstall()


@pytest.fixture(scope="module")
def receiver(real_node_cluster: LocalCluster) -> Iterator[WorkloadReceiver]:
    with WorkloadReceiver(host=real_node_cluster.node.address.host_address) as server:
        yield server


@contextlib.contextmanager
def fresh_namespace(cluster: LocalCluster, name: str, **labels: str) -> Iterator[str]:
    cluster.kubectl("create", "namespace", name)
    if labels:
        cluster.kubectl("label", "namespace", name, *(f"{k}={v}" for k, v in labels.items()))
    eventually(
        lambda: (
            cluster.kubectl("get", "serviceaccount", "default", "-n", name, check=False).returncode
            == 0
        ),
        timeout=60,
        what=f"default ServiceAccount in {name}",
    )
    try:
        yield name
    finally:
        cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def namespace(
    release: HelmRelease, request: pytest.FixtureRequest, real_node_cluster: LocalCluster
) -> Iterator[str]:
    name = f"warm-{request.node.name.lower().replace('_', '-')[5:45].strip('-')}"
    with fresh_namespace(real_node_cluster, name) as created:
        yield created


# -- the objects ---------------------------------------------------------------------------------


def template(
    receiver: Receiver,
    namespace: str,
    *,
    path: str = "",
    image: str = WORKLOAD,
    command: list[str] | None = None,
    args: list[str] | None = None,
    restart_policy: str = "Never",
    pod_security: dict[str, Any] | None = None,
    container_security: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Job whose container calls ``<receiver>/<namespace><path>/<its Job>`` as it starts."""
    container: dict[str, Any] = {
        "name": "workload",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "env": [
            {
                "name": "JOB_NAME",
                "valueFrom": {
                    "fieldRef": {"fieldPath": "metadata.labels['batch.kubernetes.io/job-name']"}
                },
            },
            {"name": "CALL_URL", "value": receiver.url(f"/{namespace}{path}/$(JOB_NAME)")},
        ],
    }
    for key, value in (
        ("command", command),
        ("args", args),
        ("securityContext", container_security),
    ):
        if value is not None:
            container[key] = value
    pod: dict[str, Any] = {"restartPolicy": restart_policy, "containers": [container]}
    if pod_security is not None:
        pod["securityContext"] = pod_security
    return {"spec": {"backoffLimit": 2, "template": {"spec": pod}}}


def warm_job(
    name: str,
    job_template: dict[str, Any],
    *,
    mode: str = "Exec",
    every: str = "20s",
    timeout: str = "10s",
    lead: timedelta = LEAD,
) -> dict[str, Any]:
    return {
        "apiVersion": "punctual.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {
            "every": every,
            "timeout": timeout,
            "concurrencyPolicy": "Forbid",
            "target": {
                "job": {
                    "warmStart": {"lead": f"{lead.seconds}s", "mode": mode},
                    "template": job_template,
                }
            },
        },
    }


def apply(cluster: LocalCluster, namespace: str, *objects: dict[str, Any]) -> None:
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=yaml.safe_dump_all(objects))


def get_json(cluster: LocalCluster, *args: str) -> dict[str, Any]:
    return dict(json.loads(cluster.kubectl("get", *args, "-o", "json").stdout))


# -- what happened -------------------------------------------------------------------------------


def jobs_of(cluster: LocalCluster, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = get_json(
        cluster, "jobs", "-n", namespace, f"--selector=punctual.dev/scheduled-job={name}"
    )
    return list(listed["items"])


def scheduled_time(job: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(job["metadata"]["annotations"][SCHEDULED_TIME])


def created(job: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(job["metadata"]["creationTimestamp"])


def calls_of(receiver: Receiver, namespace: str, job: dict[str, Any], path: str = "") -> list[Call]:
    return receiver.calls(f"/{namespace}{path}/{job['metadata']['name']}")


def armed_ahead(job: dict[str, Any], lead: timedelta) -> bool:
    """Made with its whole ``lead`` (creationTimestamp has whole seconds): not armed late."""
    return created(job) <= scheduled_time(job) - lead + timedelta(seconds=2)


def a_warm_run(
    cluster: LocalCluster,
    receiver: Receiver,
    namespace: str,
    name: str,
    path: str = "",
    *,
    lead: timedelta = LEAD,
) -> tuple[dict[str, Any], list[Call]]:
    """The first Job of ``name`` armed with its whole ``lead`` (the job's ``warmStart.lead``)
    whose container called, its calls: a Job armed late, when the job was applied less than its
    lead before a slot, has had less time to reach its gate."""

    def probe() -> tuple[dict[str, Any], list[Call]] | None:
        for job in sorted(jobs_of(cluster, namespace, name), key=scheduled_time):
            calls = calls_of(receiver, namespace, job, path)
            if armed_ahead(job, lead) and calls:
                return job, calls
        return None

    return eventually(probe, timeout=SLOT_WAIT, what=f"warm run of {namespace}/{name}")


def an_armed_job(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    """A Job of ``name`` made ahead of its slot, at least 3 s before its release."""

    def probe() -> dict[str, Any] | None:
        now = datetime.now(UTC)
        for job in jobs_of(cluster, namespace, name):
            if scheduled_time(job) > now + timedelta(seconds=3):
                return job
        return None

    return eventually(
        probe, timeout=SLOT_WAIT, what=f"armed Job of {namespace}/{name}", interval=0.2
    )


def gone(cluster: LocalCluster, namespace: str, job: dict[str, Any]) -> bool:
    """Whether the Job (this object, by uid) no longer exists."""
    found = cluster.kubectl(
        "get", "job", job["metadata"]["name"], "-n", namespace, "-o", "json", check=False
    )
    if found.returncode != 0:
        return "NotFound" in found.stderr
    return bool(json.loads(found.stdout)["metadata"]["uid"] != job["metadata"]["uid"])


def passed(moment: datetime) -> bool:
    return datetime.now(UTC) > moment


def gate_line(cluster: LocalCluster, namespace: str, job: dict[str, Any], container: str) -> Any:
    """The line the gate printed as it released, from the container's logs in every pod of the
    Job: exactly one. The kubelet serves a log once it has seen the container start, which may
    come a while after the container's own call on a loaded node."""

    def lines() -> list[Any]:
        pods = get_json(
            cluster, "pods", "-n", namespace,
            f"--selector=batch.kubernetes.io/job-name={job['metadata']['name']}",
        )["items"]  # fmt: skip
        logs = [
            cluster.kubectl(
                "logs", "-n", namespace, pod["metadata"]["name"], "-c", container, check=False
            ).stdout
            for pod in pods
        ]
        return [
            json.loads(line)
            for log in logs
            for line in log.splitlines()
            if '"punctualGate"' in line
        ]

    released = eventually(lines, timeout=60, what=f"gate line in {container}'s log")
    assert len(released) == 1, released
    return released[0]


def pod_of(cluster: LocalCluster, namespace: str, job: dict[str, Any]) -> dict[str, Any]:
    [pod] = get_json(
        cluster, "pods", "-n", namespace,
        f"--selector=batch.kubernetes.io/job-name={job['metadata']['name']}",
    )["items"]  # fmt: skip
    return dict(pod)


def millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def status(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    return dict(get_json(cluster, "scheduledjob", name, "-n", namespace).get("status") or {})


def record_of(cluster: LocalCluster, namespace: str, name: str, slot: datetime) -> Any:
    for run in status(cluster, namespace, name).get("recentRuns") or []:
        if datetime.fromisoformat(run["scheduledTime"]) == slot:
            return run
    return None


@pytest.fixture(scope="module")
def cold_start(
    release: HelmRelease, real_node_cluster: LocalCluster, receiver: WorkloadReceiver
) -> timedelta:
    """How late a cold run's container called in this module: the same template and node, the
    Job made at the slot."""
    with fresh_namespace(real_node_cluster, "warm-cold-reference") as namespace:
        spec = {
            "every": "20s",
            "timeout": "10s",
            "target": {"job": {"template": template(receiver, namespace, command=["/workload"])}},
        }
        apply(
            real_node_cluster, namespace,
            {"apiVersion": "punctual.dev/v1alpha1", "kind": "ScheduledJob",
             "metadata": {"name": "cold"}, "spec": spec},
        )  # fmt: skip

        def first_call() -> timedelta | None:
            for job in jobs_of(real_node_cluster, namespace, "cold"):
                if calls := calls_of(receiver, namespace, job):
                    return calls[0].arrived - scheduled_time(job)
            return None

        return eventually(first_call, timeout=SLOT_WAIT, what="cold run's call")


# -- the tests -----------------------------------------------------------------------------------


class TestTheContainerStartsAtItsSlot:
    def test_exec_runs_the_containers_own_command_at_the_slot(
        self,
        real_node_cluster: LocalCluster,
        namespace: str,
        receiver: WorkloadReceiver,
        cold_start: timedelta,
    ) -> None:
        workload = template(receiver, namespace, command=["/workload"])
        apply(real_node_cluster, namespace, warm_job("exec", workload, mode="Exec"))

        job, calls = a_warm_run(real_node_cluster, receiver, namespace, "exec")

        late = calls[0].arrived - scheduled_time(job)
        assert job["metadata"]["annotations"][WARM_START] == "Exec"
        assert timedelta(0) <= late < cold_start / 2, (late, cold_start)
        line = gate_line(real_node_cluster, namespace, job, "workload")
        assert line["releaseAtMs"] == millis(scheduled_time(job))
        assert len(calls) == 1

    def test_init_starts_the_container_once_the_release_init_container_ends_at_the_slot(
        self, real_node_cluster: LocalCluster, namespace: str, receiver: WorkloadReceiver
    ) -> None:
        # The sandbox and two init containers in a row before the release one (the gate's copy,
        # the image's pull) took longer than the others' 10 s lead on a loaded machine.
        workload = template(receiver, namespace, command=["/workload"])
        lead = timedelta(seconds=20)
        init = warm_job("init", workload, mode="Init", every="30s", lead=lead)
        apply(real_node_cluster, namespace, init)

        job, calls = a_warm_run(real_node_cluster, receiver, namespace, "init", lead=lead)

        # The kubelet starts the container after the release container ends, up to a relist
        # later: its start is no faster than a cold one on a quiet node. What is warm is the rest.
        assert job["metadata"]["annotations"][WARM_START] == "Init"
        assert calls[0].arrived >= scheduled_time(job)
        [release] = [
            status
            for status in pod_of(real_node_cluster, namespace, job)["status"][
                "initContainerStatuses"
            ]
            if status["name"] == "punctual-release"
        ]
        waiting_since = datetime.fromisoformat(release["state"]["terminated"]["startedAt"])
        assert waiting_since < scheduled_time(job)  # at its gate before the slot
        line = gate_line(real_node_cluster, namespace, job, "punctual-release")
        assert line["releaseAtMs"] == millis(scheduled_time(job))
        assert 0 <= line["lateMs"] < 1000, line
        assert len(calls) == 1


class TestWhatTheTemplateMayBe:
    def test_an_image_with_no_shell_and_no_command_runs_warm_through_init_under_auto(
        self, real_node_cluster: LocalCluster, namespace: str, receiver: WorkloadReceiver
    ) -> None:
        # The workload image is one static binary; the gate runs it with no shell.
        workload = template(receiver, namespace)
        apply(real_node_cluster, namespace, warm_job("no-shell", workload, mode="Auto"))

        job, calls = a_warm_run(real_node_cluster, receiver, namespace, "no-shell")

        assert job["metadata"]["annotations"][WARM_START] == "Init"
        assert calls[0].arrived >= scheduled_time(job)

    def test_a_read_only_root_filesystem_and_a_non_root_uid_run_warm(
        self, real_node_cluster: LocalCluster, namespace: str, receiver: WorkloadReceiver
    ) -> None:
        workload = template(
            receiver, namespace, command=["/workload"],
            pod_security={"runAsNonRoot": True, "runAsUser": 4242, "runAsGroup": 4242},
            container_security={"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False},
        )  # fmt: skip
        apply(real_node_cluster, namespace, warm_job("read-only", workload, mode="Exec"))

        job, calls = a_warm_run(real_node_cluster, receiver, namespace, "read-only")

        assert job["metadata"]["annotations"][WARM_START] == "Exec"
        assert calls[0].arrived >= scheduled_time(job)

    def test_a_namespace_enforcing_the_restricted_pod_security_profile_admits_the_warm_pod(
        self, release: HelmRelease, real_node_cluster: LocalCluster, receiver: WorkloadReceiver
    ) -> None:
        labels = {"pod-security.kubernetes.io/enforce": "restricted"}
        with fresh_namespace(real_node_cluster, "warm-restricted", **labels) as namespace:
            workload = template(
                receiver, namespace, command=["/workload"],
                pod_security={"runAsNonRoot": True, "runAsUser": 65534,
                              "seccompProfile": {"type": "RuntimeDefault"}},
                container_security={"allowPrivilegeEscalation": False,
                                    "capabilities": {"drop": ["ALL"]}},
            )  # fmt: skip
            # Init: every container the operator adds (gate, image pulls, release) is in the pod.
            apply(real_node_cluster, namespace, warm_job("restricted", workload, mode="Init"))

            job, calls = a_warm_run(real_node_cluster, receiver, namespace, "restricted")

            assert calls[0].arrived >= scheduled_time(job)
            pod = pod_of(real_node_cluster, namespace, job)
            names = [c["name"] for c in pod["spec"]["initContainers"]]
            assert names[0] == "punctual-gate"
            assert "punctual-release" in names


class TestPoliciesApplyAtTheSlot:
    def test_suspending_during_the_lead_deletes_the_armed_job_and_nothing_runs(
        self, real_node_cluster: LocalCluster, namespace: str, receiver: WorkloadReceiver
    ) -> None:
        workload = template(receiver, namespace, command=["/workload"])
        apply(real_node_cluster, namespace, warm_job("suspended", workload))
        armed = an_armed_job(real_node_cluster, namespace, "suspended")

        real_node_cluster.kubectl(
            "patch", "scheduledjob", "suspended", "-n", namespace, "--type=merge",
            "--patch", '{"spec": {"suspend": true}}',
        )  # fmt: skip

        eventually(lambda: gone(real_node_cluster, namespace, armed), timeout=30, what="deletion")
        slot = scheduled_time(armed)
        eventually(lambda: passed(slot + timedelta(seconds=5)), timeout=60, what="slot past")
        assert calls_of(receiver, namespace, armed) == []
        assert all(
            scheduled_time(j) != slot for j in jobs_of(real_node_cluster, namespace, "suspended")
        )

    def test_editing_the_spec_during_the_lead_deletes_the_armed_job_and_nothing_runs(
        self, real_node_cluster: LocalCluster, namespace: str, receiver: WorkloadReceiver
    ) -> None:
        workload = template(receiver, namespace, command=["/workload"])
        apply(real_node_cluster, namespace, warm_job("edited", workload))
        armed = an_armed_job(real_node_cluster, namespace, "edited")

        edited = template(receiver, namespace, path="/edited", command=["/workload"])
        apply(real_node_cluster, namespace, warm_job("edited", edited))

        eventually(lambda: gone(real_node_cluster, namespace, armed), timeout=30, what="deletion")
        slot = scheduled_time(armed)
        eventually(lambda: passed(slot + timedelta(seconds=5)), timeout=60, what="slot past")
        assert calls_of(receiver, namespace, armed) == []
        assert calls_of(receiver, namespace, armed, "/edited") == []

    def test_forbid_with_a_run_still_active_at_the_slot_skips_it_and_deletes_the_armed_job(
        self, real_node_cluster: LocalCluster, namespace: str, receiver: WorkloadReceiver
    ) -> None:
        # A scheduled run has always ended by the next slot (lead + timeout fit in the period),
        # so the run still going is one asked for by hand before the slot's arm; its container
        # serves until the timeout, past the slot. The job is made after the previous slot's
        # arm: no scheduled run of its own comes before.
        every = 40
        eventually(
            lambda: 16 <= time.time() % every <= 20, timeout=every, what="20 s before a slot"
        )
        slot = datetime.fromtimestamp((time.time() // every + 1) * every, UTC)
        serving = template(receiver, namespace, command=["/workload"], args=["serve", ":8080"])
        apply(
            real_node_cluster, namespace,
            warm_job("forbid", serving, every=f"{every}s", timeout="30s"),
        )  # fmt: skip
        eventually(
            lambda: status(real_node_cluster, namespace, "forbid").get("nextRunTime"),
            timeout=30,
            what="armed schedule",
        )
        real_node_cluster.kubectl(
            "annotate", "--overwrite", "scheduledjob", "forbid", "-n", namespace,
            f"punctual.dev/run-now=before-the-arm-{uuid.uuid4().hex[:8]}",
        )  # fmt: skip

        record = eventually(
            lambda: record_of(real_node_cluster, namespace, "forbid", slot),
            timeout=90,
            what=f"record of the slot {slot}",
        )

        assert record["result"] == "SkippedOverlap", record
        jobs = jobs_of(real_node_cluster, namespace, "forbid")
        assert [scheduled_time(j) for j in jobs if scheduled_time(j) == slot] == []
        manual = [j for j in jobs if j["metadata"]["name"].startswith("forbid-n")]
        assert len(manual) == 1, [j["metadata"]["name"] for j in jobs]


class TestWhenTheArmFails:
    def test_an_image_that_cannot_be_pulled_is_a_warm_start_not_ready_event_and_reason(
        self, real_node_cluster: LocalCluster, namespace: str, receiver: WorkloadReceiver
    ) -> None:
        workload = template(receiver, namespace, image=MISSING_IMAGE, command=["/workload"])
        apply(real_node_cluster, namespace, warm_job("no-image", workload))

        def not_ready_event() -> dict[str, Any] | None:
            events = get_json(real_node_cluster, "events", "-n", namespace)["items"]
            for event in events:
                if event.get("reason") == "WarmStartNotReady" and event.get("type") == "Warning":
                    return dict(event)
            return None

        event = eventually(not_ready_event, timeout=SLOT_WAIT, what="WarmStartNotReady Event")
        assert any(reason in event["message"] for reason in ("ErrImagePull", "ImagePullBackOff"))

        def not_ready_condition() -> dict[str, Any] | None:
            # The status is written in the writer's next batch, after the Event of the same check.
            conditions = status(real_node_cluster, namespace, "no-image").get("conditions") or []
            found = [c for c in conditions if c.get("reason") == "WarmStartNotReady"]
            return dict(found[0]) if found else None

        condition = eventually(not_ready_condition, timeout=30, what="WarmStartNotReady condition")
        assert condition["type"] == "WarmStartReady"
        assert condition["status"] == "False"

    def test_an_image_pullable_only_after_the_slot_runs_once_late_and_says_how_late(
        self,
        real_node_cluster: LocalCluster,
        namespace: str,
        receiver: WorkloadReceiver,
        tmp_path: Path,
    ) -> None:
        image = f"{MISSING_IMAGE}-{uuid.uuid4().hex[:8]}"
        workload = template(receiver, namespace, image=image, command=["/workload"])
        apply(
            real_node_cluster, namespace,
            warm_job("late-image", workload, every="40s", timeout="30s"),
        )  # fmt: skip
        armed = an_armed_job(real_node_cluster, namespace, "late-image")
        slot = scheduled_time(armed)

        def pull_failing_past_the_slot() -> bool:
            statuses = pod_of(real_node_cluster, namespace, armed)["status"].get(
                "initContainerStatuses", []
            )
            reasons = {(s["state"].get("waiting") or {}).get("reason") for s in statuses}
            return passed(slot) and bool(reasons & {"ErrImagePull", "ImagePullBackOff"})

        eventually(pull_failing_past_the_slot, timeout=60, what="image pull failing at the slot")

        # The image appears: the pod starts, and the gate releases at once, late and saying so.
        real_node_cluster.load_image(renamed_archive(image, tmp_path))
        calls = eventually(
            lambda: calls_of(receiver, namespace, armed), timeout=SLOT_WAIT, what="the late call"
        )
        state = real_node_cluster.kubectl(
            "get", "jobs,pods,events", "-n", namespace, "-o", "wide", check=False
        ).stdout
        assert not gone(real_node_cluster, namespace, armed), state  # the armed Job ran it
        line = gate_line(real_node_cluster, namespace, armed, "workload")
        assert line["lateMs"] > 0
        assert calls[0].arrived > slot
        eventually(
            lambda: any(
                c["type"] == "Complete" and c["status"] == "True"
                for c in get_json(
                    real_node_cluster, "job", armed["metadata"]["name"], "-n", namespace
                )
                .get("status", {})
                .get("conditions", [])
            ),
            timeout=60,
            what="completed Job",
        )
        assert calls_of(receiver, namespace, armed) == calls
        slots = [scheduled_time(j) for j in jobs_of(real_node_cluster, namespace, "late-image")]
        assert slots.count(slot) == 1


def renamed_archive(image: str, into: Path) -> Path:
    """The workload image's OCI archive, its reference renamed ``image``."""
    source = locate_node_images().directory / "workload.tar"
    renamed = into / "renamed.tar"
    with tarfile.open(source) as reading, tarfile.open(renamed, "w") as writing:
        for member in reading.getmembers():
            content = reading.extractfile(member) if member.isfile() else None
            if member.name == "index.json" and content is not None:
                index = json.loads(content.read())
                for manifest in index["manifests"]:
                    manifest["annotations"]["org.opencontainers.image.ref.name"] = image
                data = json.dumps(index).encode()
                member.size = len(data)
                writing.addfile(member, io.BytesIO(data))
            else:
                writing.addfile(member, content)
    return renamed


class TestRestarts:
    def test_a_container_restarted_after_the_release_runs_at_once(
        self, real_node_cluster: LocalCluster, namespace: str, receiver: WorkloadReceiver
    ) -> None:
        # Its first call is answered 500: the workload exits 1 and OnFailure restarts it.
        workload = template(
            receiver, namespace, path="/fail-once", command=["/workload"],
            restart_policy="OnFailure",
        )  # fmt: skip
        apply(
            real_node_cluster, namespace,
            warm_job("on-failure", workload, every="40s", timeout="30s"),
        )  # fmt: skip

        job, _ = a_warm_run(real_node_cluster, receiver, namespace, "on-failure", "/fail-once")
        calls = eventually(
            lambda: (c := calls_of(receiver, namespace, job, "/fail-once"))[1:] and c,
            timeout=60,
            what="the restarted container's call",
        )

        assert calls[0].arrived >= scheduled_time(job)

        def restarted() -> dict[str, Any] | None:
            # The kubelet reports the restart after the container has started (and called).
            [status] = pod_of(real_node_cluster, namespace, job)["status"]["containerStatuses"]
            return dict(status) if status["restartCount"] >= 1 else None

        container = eventually(restarted, timeout=60, what="restarted container's status")
        started = datetime.fromisoformat(
            (container["state"].get("running") or container["state"]["terminated"])["startedAt"]
        )
        # startedAt has whole seconds: the restarted container called within them, not later.
        assert calls[1].arrived - started < timedelta(seconds=3), (calls[1].arrived, started)
        line = gate_line(real_node_cluster, namespace, job, "workload")
        assert line["lateMs"] >= (started - scheduled_time(job)) / timedelta(milliseconds=1) - 1000

    def test_the_owner_replica_sigkilled_during_the_lead_changes_nothing(
        self,
        release: HelmRelease,
        real_node_cluster: LocalCluster,
        namespace: str,
        receiver: WorkloadReceiver,
    ) -> None:
        release.upgrade({"replicaCount": 2})
        eventually(
            lambda: (
                len(release.operator_pods()) == 2
                and all(
                    s["ready"]
                    for p in release.operator_pods()
                    for s in p["status"]["containerStatuses"]
                )
            ),
            timeout=120,
            what="two ready replicas",
        )
        workload = template(receiver, namespace, command=["/workload"])
        apply(
            real_node_cluster, namespace, warm_job("killed", workload, every="30s", timeout="20s")
        )
        first, _ = a_warm_run(real_node_cluster, receiver, namespace, "killed")
        record = eventually(
            lambda: record_of(real_node_cluster, namespace, "killed", scheduled_time(first)),
            timeout=60,
            what="first run's record",
        )
        [owner] = [p for p in release.operator_pods() if p["metadata"]["name"] == record["replica"]]
        armed = an_armed_job(real_node_cluster, namespace, "killed")

        [container] = owner["status"]["containerStatuses"]
        assert kill_container_processes(container["containerID"].removeprefix("containerd://"))

        slot = scheduled_time(armed)
        calls = eventually(
            lambda: calls_of(receiver, namespace, armed), timeout=SLOT_WAIT, what="the slot's call"
        )
        eventually(lambda: passed(slot + timedelta(seconds=20)), timeout=60, what="slot past")
        assert calls_of(receiver, namespace, armed) == calls
        assert len(calls) == 1
        assert not gone(real_node_cluster, namespace, armed)  # released, never made again
        slots = [scheduled_time(j) for j in jobs_of(real_node_cluster, namespace, "killed")]
        assert slots.count(slot) == 1
