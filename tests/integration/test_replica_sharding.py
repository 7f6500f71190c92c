"""Sharding on the real control plane: membership Leases, each job's owner and backup, the
take-over of a killed replica's jobs by their backups, and a paused replica.

Replicas (sharding is the command's default) hold one Lease each in the watched namespace (the
harness sets no POD_NAMESPACE) and log each new set of members (``members: r1, r2``). Jobs are
``every: 1s`` HTTP calls to the receiver, the judge: each Idempotency-Key at most once, every
slot between a job's first and last call arrived. The figures are printed (``-s`` or ``-rP``).
"""

import re
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from chart_harness import service_account_kubeconfig
from operator_harness import (
    PUNCTUAL,
    REPO_ROOT,
    Call,
    Operators,
    Receiver,
    Spread,
    api,
    apply,
    counts,
    eventually,
    every_slots,
    fmt,
    http_target,
    now,
    read_all,
    report,
    scheduled_job,
)

from localcluster import LocalCluster, LocalRedis, ports
from punctual.kube import membership
from punctual.scheduling import ownership

pytest_plugins = ["operator_fixtures"]
pytestmark = pytest.mark.usefixtures("scheduled_job_crd")

EVERY = timedelta(seconds=1)
BACKUP_DELAY_MS = 250.0
LEASE_SECONDS = membership.DURATION.total_seconds()
MEMBERS = ("r1", "r2", "r3")


@pytest.fixture
def three_replicas(  # noqa: PLR0917 - fixtures
    request: pytest.FixtureRequest,
    cluster: LocalCluster,
    redis_server: LocalRedis,
    tmp_path: Path,
    namespace: str,
    receiver: Receiver,
) -> Iterator[Operators]:
    """Three replicas on 12 jobs, once every job has been called; on the redis lock, or on the
    backend a test parametrizes this fixture with (``indirect``). Tests stop them before they
    read the calls, so that none is still on its way."""
    create_jobs(cluster, receiver, namespace, 12)
    with Operators(
        cluster,
        tmp_path,
        namespace=namespace,
        replicas=3,
        lock_backend=getattr(request, "param", "redis"),
        redis_url=redis_server.url,
    ) as operators:
        eventually(
            lambda: len({call.job for call in calls_in(receiver, namespace)}) == 12,
            timeout=30,
            what="a call of every job",
        )
        yield operators


def leases(cluster: LocalCluster, namespace: str) -> dict[str, str]:
    """Lease name → holder, of the membership Leases in ``namespace``."""
    listing = api(cluster).get(
        f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        f"?labelSelector=punctual.dev%2Fmembership%3D{membership.group_of([namespace])}"
    )
    return {item["metadata"]["name"]: item["spec"]["holderIdentity"] for item in listing["items"]}


def sees(operators: Operators, replica: str, *members: str) -> bool:
    """Whether ``replica``'s newest membership line names exactly ``members``."""
    lines = re.findall(r"members: (.*)$", operators[replica].log(), re.MULTILINE)
    return bool(lines) and lines[-1].strip() == ", ".join(sorted(members))


def create_jobs(cluster: LocalCluster, receiver: Receiver, namespace: str, count: int) -> None:
    apply(
        cluster,
        *(
            scheduled_job(
                namespace,
                f"job-{index:02d}",
                {"every": "1s", "target": http_target(receiver, namespace, f"job-{index:02d}")},
            )
            for index in range(count)
        ),
    )


def owners(cluster: LocalCluster, namespace: str) -> dict[str, ownership.Shares]:
    """Each job (``namespace/name``) → its owner and backup among the three replicas."""
    shares = {}
    for name, body in read_all(cluster, namespace).items():
        found = ownership.shares(body["metadata"]["uid"], MEMBERS)
        assert found is not None
        shares[f"{namespace}/{name}"] = found
    return shares


def claims_and_runs(operators: Operators) -> tuple[float, float, float]:
    """Slot claims (every outcome), runs, and claims backups skipped on their owner's word,
    summed over the running replicas' metrics."""
    claims = runs = skipped = 0.0
    for replica in operators.replicas.values():
        if not replica.running():
            continue
        text = replica.metrics()
        claims += _total(text, "punctual_lock_claims_total")
        runs += _total(text, "punctual_runs_total")
        skipped += _total(text, "punctual_claims_skipped_total", labels=False)
    return claims, runs, skipped


def calls_in(receiver: Receiver, namespace: str) -> list[Call]:
    """The calls of this test's jobs (the receiver is the module's)."""
    return [call for call in receiver.calls() if call.job.startswith(f"{namespace}/")]


def _total(metrics: str, name: str, *, labels: bool = True) -> float:
    """The sum of every series of counter ``name`` in a /metrics text (``labels`` false: a
    counter without labels)."""
    pattern = rf"^{name}\{{[^}}]*\}} (\S+)$" if labels else rf"^{name} (\S+)$"
    series = re.findall(pattern, metrics, re.MULTILINE)
    return sum(float(value) for value in series)


def duplicates(calls: list[Call]) -> int:
    return len(calls) - len({call.idempotency_key for call in calls})


def unexplained_gaps(
    cluster: LocalCluster, namespace: str, calls: list[Call]
) -> dict[str, list[str]]:
    """Slots missing between each job's first and last call, beyond those its status counts
    ``missed`` or ``skippedOverlap`` (a first call slow enough to overlap the next slot)."""
    bodies = read_all(cluster, namespace)
    found: dict[str, list[str]] = {}
    for job in {call.job for call in calls}:
        slots = {call.slot for call in calls if call.job == job}
        expected = every_slots(min(slots) - EVERY, max(slots), EVERY)
        missing = sorted(set(expected) - slots)
        explained = counts(bodies[job.split("/", 1)[1]])
        if len(missing) > explained["missed"] + explained["skippedOverlap"]:
            found[job] = [fmt(slot) for slot in missing]
    return found


def missed(cluster: LocalCluster, namespace: str) -> int:
    return sum(counts(body)["missed"] for body in read_all(cluster, namespace).values())


class TestMembership:
    def test_replicas_appear_and_leave_and_a_clean_stop_releases_its_lease_at_once(
        self, cluster: LocalCluster, tmp_path: Path, namespace: str
    ) -> None:
        with Operators(cluster, tmp_path, namespace=namespace, replicas=3) as operators:
            assert sorted(leases(cluster, namespace).values()) == list(MEMBERS)
            for replica in MEMBERS:
                eventually(lambda r=replica: sees(operators, r, *MEMBERS), timeout=10, what=replica)

            operators["r3"].terminate()  # SIGTERM, waits for the exit
            stopped = time.monotonic()
            assert sorted(leases(cluster, namespace).values()) == ["r1", "r2"]
            eventually(lambda: sees(operators, "r1", "r1", "r2"), timeout=5, what="r3 gone")
            released_in = time.monotonic() - stopped

            operators["r2"].kill()
            killed = time.monotonic()
            eventually(
                lambda: sees(operators, "r1", "r1"),
                timeout=LEASE_SECONDS + 10,
                what="r2's Lease expired",
                interval=0.05,
            )
            expired_in = time.monotonic() - killed

            operators.start("r2")
            eventually(lambda: sees(operators, "r1", "r1", "r2"), timeout=10, what="r2 back")
            assert operators.problems() == {}
        report(
            "membership",
            [
                f"clean stop: seen gone {released_in:.2f}s after the exit",
                f"SIGKILL: seen gone {expired_in:.2f}s after the kill (Lease {LEASE_SECONDS:.0f}s)",
            ],
        )
        assert expired_in <= LEASE_SECONDS + 2


class TestEachSlotRunsOnceAcrossThreeShardedReplicas:
    # Every replica claimed every slot before sharding: 3 a run. The redis lock's owner tells
    # the backup in its claim, and the backup then claims nothing; the kubernetes lock's backup
    # still claims (its object cache, not the API, shows the slot taken).
    @pytest.mark.parametrize(
        ("three_replicas", "most_per_run"),
        [("redis", 1.2), ("kubernetes", 2.1)],
        indirect=["three_replicas"],
    )
    def test_claims_per_run_and_no_duplicate(
        self,
        cluster: LocalCluster,
        namespace: str,
        receiver: Receiver,
        three_replicas: Operators,
        most_per_run: float,
    ) -> None:
        claims_before, runs_before, skipped_before = claims_and_runs(three_replicas)
        time.sleep(15)  # the measurement: claims and runs over 15 s of steady running
        claims_after, runs_after, skipped_after = claims_and_runs(three_replicas)
        assert three_replicas.problems() == {}
        three_replicas.stop()
        calls = calls_in(receiver, namespace)
        runs = runs_after - runs_before
        per_run = (claims_after - claims_before) / runs
        skipped = skipped_after - skipped_before
        report(
            f"3 sharded replicas, {three_replicas.lock_backend} lock",
            [
                f"{runs:.0f} runs in 15 s, {per_run:.2f} claims per run, "
                f"{skipped / runs:.2f} claims per run skipped by backups told by the owner",
                f"lateness {Spread.of(call.lateness_ms for call in calls)}",
            ],
        )
        assert duplicates(calls) == 0
        assert unexplained_gaps(cluster, namespace, calls) == {}
        assert per_run <= most_per_run


class TestAKilledOwnersSlotsRunByItsBackups:
    def test_within_the_backup_delay_none_missed_none_twice(
        self, cluster: LocalCluster, namespace: str, receiver: Receiver, three_replicas: Operators
    ) -> None:
        shares = owners(cluster, namespace)
        killed = Counter(share.owner for share in shares.values()).most_common(1)[0][0]
        time.sleep(3)  # a few slots of every job in steady running before the kill
        three_replicas[killed].kill()
        killed_at = now()
        survivors = [member for member in MEMBERS if member != killed]
        eventually(
            lambda: all(sees(three_replicas, r, *survivors) for r in survivors),
            timeout=LEASE_SECONDS + 10,
            what="the survivors agree",
            interval=0.05,
        )
        reconverged = (now() - killed_at).total_seconds()
        # Slots after the hand-over from the backups to the orphans' new owners, where a slot
        # run by both would show as a duplicate.
        time.sleep(5)
        assert three_replicas.problems() == {}
        three_replicas.stop()
        calls = calls_in(receiver, namespace)
        orphans = {job for job, share in shares.items() if share.owner == killed}
        taken = [
            call
            for call in calls
            if call.job in orphans and killed_at < call.slot <= killed_at + timedelta(seconds=5)
        ]
        lateness = Spread.of(call.lateness_ms for call in taken)
        lost_slots = missed(cluster, namespace)
        report(
            f"SIGKILL of {killed} (owner of {len(orphans)} of 12 jobs)",
            [
                f"its jobs' slots in the next 5 s, run by backups: {len(taken)}, "
                f"lateness {lateness}",
                f"members reconverged {reconverged:.2f}s after the kill",
                f"missed {lost_slots}, twice {duplicates(calls)}",
            ],
        )
        assert lost_slots == 0
        assert duplicates(calls) == 0
        assert unexplained_gaps(cluster, namespace, calls) == {}
        assert len(taken) >= 4 * len(orphans)
        assert lateness.p99 <= BACKUP_DELAY_MS + 100


class TestAPausedReplicaRunsNoSlotTwice:
    def test_stopped_for_twenty_seconds_then_resumed(
        self, cluster: LocalCluster, namespace: str, receiver: Receiver, three_replicas: Operators
    ) -> None:
        three_replicas["r1"].pause()
        time.sleep(20)
        three_replicas["r1"].resume()
        eventually(
            lambda: all(sees(three_replicas, r, *MEMBERS) for r in MEMBERS),
            timeout=15,
            what="r1 back among the members",
        )
        time.sleep(3)  # slots after r1's return, where one it still took for its own runs twice
        assert three_replicas.problems() == {}
        three_replicas.stop()
        calls = calls_in(receiver, namespace)
        report("SIGSTOP of r1 for 20 s", [f"{len(calls)} calls, {duplicates(calls)} twice"])
        assert duplicates(calls) == 0
        assert unexplained_gaps(cluster, namespace, calls) == {}


class TestWithoutTheLeaseRole:
    def test_the_command_stops_at_once_saying_what_to_grant(
        self, cluster: LocalCluster, tmp_path: Path, namespace: str
    ) -> None:
        cluster.kubectl("create", "serviceaccount", "no-leases", f"--namespace={namespace}")
        kubeconfig = service_account_kubeconfig(
            cluster, namespace, "no-leases", tmp_path / "kubeconfig"
        )
        result = subprocess.run(
            [
                str(PUNCTUAL), "run", f"--namespace={namespace}", "--replica-id=r1",
                f"--bind-address={ports.LOOPBACK}", f"--metrics-port={ports.free_port()}",
                f"--health-port={ports.free_port()}",
            ],
            env={**cluster.env, "KUBECONFIG": str(kubeconfig)},
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

        assert result.returncode == 1, result.stdout + result.stderr
        assert (
            "punctual run: sharding needs get, list, watch, create, update and delete on leases "
            f"(coordination.k8s.io) in namespace '{namespace}' (--membership-namespace), and "
            "the API server refused them: grant them (the chart does), or run with "
            "--sharding off"
        ) in result.stdout
        assert "Traceback" not in result.stdout + result.stderr
