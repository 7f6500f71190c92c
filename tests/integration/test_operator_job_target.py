"""The job target on the real control plane: a batch/v1 Job per slot, run on kwok's fake node.

Two operator replicas (the redis slot lock) watch the module's namespace. The ScheduledJobs of
the scenario are created together, and a recorder polls the namespace's Jobs twice a second
for the whole module, so each test reads what happened to its own ScheduledJob:

- every slot gets exactly one Job, named ``<name>-<unix seconds>``, labelled, annotated, owned
  by the ScheduledJob and with ``activeDeadlineSeconds`` from ``spec.timeout``;
- concurrencyPolicy Forbid / Replace / Allow hold for long-running Jobs, across the replicas
  (a pod runs as long as its ``kwok.punctual.dev/run-for`` annotation says);
- ``spec.history`` limits delete old finished Jobs; a pod that fails (``kwok.punctual.dev/fail``)
  fails its run; a Job past its deadline is a TimedOut run;
- a Job that already exists for the slot is followed, one by that name that is not the slot's
  is left alone; deleting the ScheduledJob deletes its Jobs (owner reference).
"""

import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from operator_harness import (
    Operators,
    apply,
    condition,
    counts,
    eventually,
    from_millis,
    millis,
    now,
    parse_time,
    read,
    read_all,
    recent_runs,
    scheduled_job,
    sleep_until,
    status,
)

from localcluster import LocalCluster, LocalRedis

pytest_plugins = ["operator_fixtures"]

SCENARIO_SECONDS = 50.0
"""How long the scenario runs before the tests look: five slots of a 10 s schedule."""
LABEL = "punctual.dev/scheduled-job"
SCHEDULED_TIME = "punctual.dev/scheduled-time"
SLOT_ID = "punctual.dev/slot-id"


def template(*, run_for: str | None = None, fail: bool = False) -> dict[str, Any]:
    annotations = {}
    if run_for:
        annotations["kwok.punctual.dev/run-for"] = run_for
    if fail:
        annotations["kwok.punctual.dev/fail"] = "true"
    return {
        "metadata": {"labels": {"team": "reports"}, "annotations": {"note": "from the template"}},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "work", "image": "busybox:1.36"}],
                },
            },
        },
    }


def job_target(**spec: Any) -> dict[str, Any]:
    run_for, fail = spec.pop("run_for", None), spec.pop("fail", False)
    return {**spec, "target": {"job": {"template": template(run_for=run_for, fail=fail)}}}


SCENARIO: dict[str, dict[str, Any]] = {
    "basic": job_target(every="5s", timeout="1m", history={"succeeded": 2, "failed": 1}),
    "failing": job_target(every="5s", fail=True, history={"succeeded": 1, "failed": 1}),
    "forbid": job_target(every="10s", run_for="25s", concurrencyPolicy="Forbid"),
    "replace": job_target(every="10s", run_for="1h", concurrencyPolicy="Replace"),
    "allow": job_target(every="10s", run_for="25s", concurrencyPolicy="Allow"),
    "deadline": job_target(every="10s", timeout="3s", run_for="1h"),
}


@dataclass
class Seen:
    """One Job as the recorder saw it: first and last poll, and whether it was ever finished."""

    body: dict[str, Any]
    first: datetime
    last: datetime
    finished_at: datetime | None = None

    @property
    def owner(self) -> str:
        return scheduled_job_of(self.body)

    @property
    def slot(self) -> datetime:
        return from_millis(int(self.body["metadata"]["annotations"][SLOT_ID].rsplit("/", 1)[1]))

    def alive_at(self, instant: datetime) -> bool:
        end = self.finished_at or self.last
        return self.first <= instant <= end


@dataclass(frozen=True)
class Look:
    """One poll's view of a ScheduledJob's Jobs: those it listed, and every one seen until it."""

    left: list[dict[str, Any]]
    seen: list[Seen]


@dataclass
class Recorder:
    """Polls the namespace's Jobs (and ScheduledJobs) until stopped."""

    cluster: LocalCluster
    namespace: str
    interval: float = 0.5
    jobs: dict[str, Seen] = field(default_factory=dict)
    polls: list[tuple[datetime, set[str]]] = field(default_factory=list)
    """At each poll, the Jobs alive and not finished."""
    active: dict[str, set[str]] = field(default_factory=dict)
    """Per ScheduledJob, every ``status.active[].jobName`` seen."""
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    """Held by a poll: the tests read between polls, never during one."""

    def __post_init__(self) -> None:
        self._thread = threading.Thread(target=self._run, name="job recorder", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.poll()
            except Exception:  # an API hiccup: the next poll will do
                continue

    def poll(self) -> list[dict[str, Any]]:
        """List the Jobs now and record them; what was listed."""
        with self._lock:
            at = now()
            listing = self.cluster.api.get(f"/apis/batch/v1/namespaces/{self.namespace}/jobs")
            running = set()
            for body in listing["items"]:
                name = body["metadata"]["name"]
                seen = self.jobs.setdefault(name, Seen(body=body, first=at, last=at))
                seen.body, seen.last = body, at
                if finished(body):
                    seen.finished_at = seen.finished_at or at
                else:
                    running.add(name)
            self.polls.append((at, running))
            for name, sj in read_all(self.cluster, self.namespace).items():
                for run in status(sj).get("active") or []:
                    if run.get("jobName"):
                        self.active.setdefault(name, set()).add(run["jobName"])
            return list(listing["items"])

    def look(self, scheduled_job: str) -> Look:
        """Poll now: the Jobs of ``scheduled_job`` left, next to all those seen until then. A
        listing of a test's own would race the recorder: a slot that comes after its last poll
        has a Job the recorder has not seen yet."""
        with self._lock:
            listed = self.poll()
            left = [body for body in listed if scheduled_job_of(body) == scheduled_job]
            return Look(left=left, seen=self.of(scheduled_job))

    def of(self, scheduled_job: str) -> list[Seen]:
        with self._lock:
            return sorted(
                (seen for seen in self.jobs.values() if seen.owner == scheduled_job),
                key=lambda seen: seen.slot,
            )

    def most_running_at_once(self, scheduled_job: str) -> int:
        prefix = f"{scheduled_job}-"
        with self._lock:
            return max(
                (sum(name.startswith(prefix) for name in running) for _, running in self.polls),
                default=0,
            )


def scheduled_job_of(body: dict[str, Any]) -> str:
    """The ScheduledJob a Job's label names (empty for a Job that is not one's)."""
    return str((body["metadata"].get("labels") or {}).get(LABEL, ""))


def finished(body: dict[str, Any]) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (body.get("status") or {}).get("conditions") or []
    )


def current_jobs(cluster: LocalCluster, namespace: str, scheduled_job: str) -> list[dict[str, Any]]:
    listing = cluster.api.get(
        f"/apis/batch/v1/namespaces/{namespace}/jobs?labelSelector={LABEL}%3D{scheduled_job}"
    )
    return list(listing["items"])


@pytest.fixture(scope="module")
def operators(
    cluster: LocalCluster,
    redis_server: LocalRedis,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Operators]:
    with Operators(
        cluster,
        tmp_path_factory.mktemp("operators"),
        namespace=module_namespace,
        replicas=2,
        lock_backend="redis",
        redis_url=redis_server.url,
    ) as started:
        yield started


@pytest.fixture(scope="module")
def scenario(
    cluster: LocalCluster, module_namespace: str, operators: Operators
) -> Iterator[Recorder]:
    recorder = Recorder(cluster, module_namespace)
    recorder.start()
    apply(
        cluster,
        *(scheduled_job(module_namespace, name, spec) for name, spec in SCENARIO.items()),
    )
    time.sleep(SCENARIO_SECONDS)
    yield recorder
    recorder.stop()


class TestEverySlotGetsOneJob:
    def test_named_labelled_annotated_owned_and_with_the_deadline_of_the_timeout(
        self, cluster: LocalCluster, module_namespace: str, scenario: Recorder
    ) -> None:
        body = read(cluster, module_namespace, "basic")
        uid = body["metadata"]["uid"]
        seen = scenario.of("basic")
        assert len(seen) >= 6

        for job in seen:
            metadata = job.body["metadata"]
            slot = job.slot
            assert metadata["name"] == f"basic-{millis(slot) // 1000}"
            assert metadata["labels"] == {"team": "reports", LABEL: "basic"}
            assert metadata["annotations"]["note"] == "from the template"
            assert (
                metadata["annotations"][SLOT_ID] == f"{module_namespace}/basic/{uid}/{millis(slot)}"
            )
            assert parse_time(metadata["annotations"][SCHEDULED_TIME]) == slot
            assert metadata["ownerReferences"] == [
                {
                    "apiVersion": "punctual.dev/v1alpha1",
                    "kind": "ScheduledJob",
                    "name": "basic",
                    "uid": uid,
                    "controller": True,
                    "blockOwnerDeletion": False,
                }
            ]
            assert job.body["spec"]["activeDeadlineSeconds"] == 60

    def test_exactly_one_per_slot_across_two_replicas(
        self, cluster: LocalCluster, module_namespace: str, scenario: Recorder, operators: Operators
    ) -> None:
        slots = [job.slot for job in scenario.of("basic")]
        expected = [slots[0] + timedelta(seconds=5 * i) for i in range(len(slots))]

        assert slots == expected  # none missing between the first and the last, none twice
        assert all(millis(slot) % 5000 == 0 for slot in slots)
        runs = recent_runs(read(cluster, module_namespace, "basic"))
        assert {run["replica"] for run in runs} <= {"r1", "r2"}
        assert operators.problems() == {}, f"see {operators.logs()}"

    def test_its_run_succeeds_with_the_job(
        self, cluster: LocalCluster, module_namespace: str, scenario: Recorder
    ) -> None:
        body = read(cluster, module_namespace, "basic")
        last = status(body)["lastRun"]

        assert last["result"] == "Succeeded"
        assert last["message"] == f"Job basic-{millis(parse_time(last['slot'])) // 1000} complete"
        assert counts(body)["succeeded"] >= 5
        assert counts(body)["failed"] == 0
        ready = condition(body, "Ready") or {}
        assert (ready.get("status"), ready.get("reason")) == ("True", "Scheduled")

    def test_only_the_newest_finished_jobs_are_kept(self, scenario: Recorder) -> None:
        look = scenario.look("basic")
        done = [job for job in look.left if finished(job)]

        assert len(look.seen) >= 6
        assert len(done) <= 2
        newest = look.seen[-4:]
        assert {job["metadata"]["name"] for job in look.left} <= {
            job.body["metadata"]["name"] for job in newest
        }


class TestAFailingJob:
    def test_fails_its_run_with_the_controllers_reason(
        self, cluster: LocalCluster, module_namespace: str, scenario: Recorder
    ) -> None:
        body = read(cluster, module_namespace, "failing")
        last = status(body)["lastRun"]

        assert last["result"] == "Failed"
        assert "failed: BackoffLimitExceeded" in last["message"]
        assert counts(body)["failed"] >= 5
        assert counts(body)["succeeded"] == 0

    def test_only_the_newest_failed_job_is_kept(
        self, cluster: LocalCluster, module_namespace: str, scenario: Recorder
    ) -> None:
        left = current_jobs(cluster, module_namespace, "failing")

        assert len(scenario.of("failing")) >= 5
        assert len([job for job in left if finished(job)]) <= 1


class TestConcurrencyPolicies:
    def test_forbid_never_runs_two_jobs_at_once_and_counts_the_skips(
        self, cluster: LocalCluster, module_namespace: str, scenario: Recorder
    ) -> None:
        body = read(cluster, module_namespace, "forbid")
        jobs = scenario.of("forbid")

        assert scenario.most_running_at_once("forbid") == 1
        assert 1 <= len(jobs) <= 3
        assert counts(body)["skippedOverlap"] >= 2
        skipped = [run for run in recent_runs(body) if run["result"] == "SkippedOverlap"]
        assert skipped
        assert all("concurrencyPolicy Forbid" in run["message"] for run in skipped)

    def test_replace_deletes_the_running_job_for_the_new_one(
        self, cluster: LocalCluster, module_namespace: str, scenario: Recorder
    ) -> None:
        look = scenario.look("replace")
        body = read(cluster, module_namespace, "replace")

        assert len(look.seen) >= 4
        # Only the newest survives; each older one was deleted when the next slot came.
        assert [job["metadata"]["name"] for job in look.left] == [
            look.seen[-1].body["metadata"]["name"]
        ]
        cancelled = [run for run in recent_runs(body) if run["result"] == "Cancelled"]
        assert cancelled
        assert all(run["result"] != "Failed" for run in recent_runs(body))
        for run in cancelled:  # told by the replica that replaced it, or by the one that ran it
            assert (
                run["message"] == "cancelled: replaced by a newer slot"
                or "deleted before it finished" in run["message"]
            )
        assert counts(body)["skippedOverlap"] == 0

    def test_allow_runs_jobs_side_by_side(
        self, cluster: LocalCluster, module_namespace: str, scenario: Recorder
    ) -> None:
        body = read(cluster, module_namespace, "allow")

        assert scenario.most_running_at_once("allow") >= 2
        assert counts(body)["skippedOverlap"] == 0
        assert len(scenario.of("allow")) >= 4

    def test_the_active_runs_name_their_jobs(self, scenario: Recorder) -> None:
        names = {job.body["metadata"]["name"] for job in scenario.of("allow")}

        assert scenario.active.get("allow")
        assert scenario.active["allow"] <= names


class TestTheTimeout:
    def test_a_job_past_its_deadline_is_a_timed_out_run(
        self, cluster: LocalCluster, module_namespace: str, scenario: Recorder
    ) -> None:
        jobs = scenario.of("deadline")
        assert len(jobs) >= 3
        assert {job.body["spec"]["activeDeadlineSeconds"] for job in jobs} == {3}

        body = read(cluster, module_namespace, "deadline")
        runs = recent_runs(body)
        assert runs
        assert {run["result"] for run in runs} == {"TimedOut"}
        for run in runs:
            assert "DeadlineExceeded" in run["message"]
            # The Job controller stopped it at about 3 s, well before the loop's own timeout
            # (3 s + 30 s), which would have deleted the Job instead.
            assert run["durationMillis"] < 20_000
        assert counts(body)["timedOut"] >= 3
        assert counts(body)["succeeded"] == 0


def next_slot(every: timedelta, *, lead: timedelta = timedelta(seconds=3)) -> datetime:
    period = every // timedelta(milliseconds=1)
    return from_millis(math.ceil(millis(now() + lead) / period) * period)


def a_job_for(
    namespace: str, name: str, slot: datetime, *, owner_uid: str | None, slot_id: str
) -> dict[str, Any]:
    body = template(run_for="2s")
    metadata: dict[str, Any] = {
        "name": f"{name}-{millis(slot) // 1000}",
        "namespace": namespace,
        "annotations": {SLOT_ID: slot_id},
    }
    if owner_uid is not None:
        metadata["labels"] = {LABEL: name}
        metadata["ownerReferences"] = [
            {
                "apiVersion": "punctual.dev/v1alpha1",
                "kind": "ScheduledJob",
                "name": name,
                "uid": owner_uid,
                "controller": True,
                "blockOwnerDeletion": False,
            }
        ]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": body["spec"]}


class TestAJobThatExistsAlready:
    @pytest.mark.parametrize("ours", [True, False], ids=["the-slots-own", "someone-elses"])
    def test_is_followed_if_it_is_the_slots_and_left_alone_otherwise(
        self,
        cluster: LocalCluster,
        module_namespace: str,
        operators: Operators,
        ours: bool,
    ) -> None:
        name = "adopted" if ours else "squatted"
        apply(cluster, scheduled_job(module_namespace, name, job_target(every="10s")))
        uid = read(cluster, module_namespace, name)["metadata"]["uid"]
        slot = next_slot(timedelta(seconds=10), lead=timedelta(seconds=4))
        existing = a_job_for(
            module_namespace,
            name,
            slot,
            owner_uid=uid if ours else None,
            slot_id=f"{module_namespace}/{name}/{uid}/{millis(slot)}" if ours else "another",
        )
        cluster.api.post(f"/apis/batch/v1/namespaces/{module_namespace}/jobs", existing)
        sleep_until(slot)

        def the_slots_run() -> dict[str, Any] | None:
            runs = recent_runs(read(cluster, module_namespace, name))
            return next((run for run in runs if parse_time(run["slot"]) == slot), None)

        run = eventually(the_slots_run, timeout=60, what=f"the run of {name} for {slot}")
        job_name = existing["metadata"]["name"]
        if ours:
            assert (run["result"], run["message"]) == ("Succeeded", f"Job {job_name} complete")
        else:
            assert run["result"] == "Failed"
            assert run["message"] == (
                f"Job {job_name} exists and was not created for this slot: not touched"
            )
        jobs = cluster.api.get(f"/apis/batch/v1/namespaces/{module_namespace}/jobs")["items"]
        assert [j["metadata"]["name"] for j in jobs].count(job_name) == 1
        if not ours:  # left alone: no owner, no label added
            [squatter] = [j for j in jobs if j["metadata"]["name"] == job_name]
            assert "ownerReferences" not in squatter["metadata"]


class TestDeletingTheScheduledJob:
    def test_deletes_its_jobs(
        self, cluster: LocalCluster, module_namespace: str, operators: Operators
    ) -> None:
        apply(
            cluster,
            scheduled_job(
                module_namespace,
                "doomed",
                job_target(every="2s", run_for="1h", concurrencyPolicy="Allow"),
            ),
        )
        eventually(
            lambda: len(current_jobs(cluster, module_namespace, "doomed")) >= 2,
            timeout=30,
            what="two Jobs of the doomed ScheduledJob",
        )

        cluster.kubectl("delete", "scheduledjob", "doomed", "-n", module_namespace)

        eventually(
            lambda: current_jobs(cluster, module_namespace, "doomed") == [],
            timeout=60,
            what="the garbage collector deleting the Jobs",
        )
