"""Slots that came due while no replica could run them follow ``spec.missedRuns.policy``.

An outage: the only replica (kubernetes slot lock) is SIGKILLed, as when its node dies, for
three slots of three ``every: 2s`` jobs, one per policy, and started again. A job's missed slots
are those after its ``status.lastScheduleTime`` read after the kill (the high-water mark the
lock's compare-and-swap persists) that were due before the restarted replica saw the job: Skip
runs none of them, RunOnce only the newest, CatchUp all of them (at most maxCatchUp), in order;
each slot given up is counted missed once. The receiver shows which slots ran.

A stall: replicas that stop (SIGSTOP, as in a long pause) and come back at different times.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from operator_harness import (
    Call,
    Operators,
    Receiver,
    Spread,
    apply,
    counts,
    eventually,
    every_slots,
    fmt,
    http_target,
    last_schedule_time,
    now,
    parse_time,
    read,
    read_all,
    recent_runs,
    report,
    scheduled_job,
    sleep_until,
    status_lateness,
)

from localcluster import LocalCluster, LocalRedis

pytest_plugins = ["operator_fixtures"]

EVERY = timedelta(seconds=2)
POLICIES = ("Skip", "RunOnce", "CatchUp")
DOWN_FOR = 3 * EVERY
MAX_CATCH_UP = 10


@dataclass(frozen=True)
class Outage:
    """What the receiver and status showed around one kill and restart."""

    namespace: str
    killed: datetime
    restarted: datetime
    high_water: dict[str, datetime]
    """Per job: status.lastScheduleTime right after the kill."""
    missed_before: dict[str, int]
    calls: dict[str, list[Call]]
    bodies: dict[str, dict[str, Any]]

    def job(self, policy: str) -> str:
        return f"{self.namespace}/{policy.lower()}"

    def after(self, policy: str) -> list[Call]:
        """Calls for slots after the high-water mark, in arrival order."""
        mark = self.high_water[policy]
        return [call for call in self.calls[policy] if call.slot > mark]

    def first_run(self, policy: str) -> datetime:
        """The first slot after the high-water mark that ran."""
        return min(call.slot for call in self.after(policy))

    def given_up(self, policy: str) -> list[datetime]:
        """The slots after the high-water mark and before the first that ran."""
        return every_slots(self.high_water[policy], self.first_run(policy) - EVERY, EVERY)

    def down(self, policy: str) -> list[datetime]:
        """The slots due while no operator ran at all: after the mark, up to the restart."""
        return every_slots(self.high_water[policy], self.restarted, EVERY)

    def missed_counted(self, policy: str) -> int:
        return counts(self.bodies[policy.lower()])["missed"] - self.missed_before[policy]

    def missed_records(self, policy: str) -> list[dict[str, Any]]:
        """The status records of the misses counted after the restart, newest first: one per
        decision, so a slot that fell due while the restarted replica was still starting up
        is a record of its own beside the slots given up when it first saw the job."""
        mark = self.high_water[policy]
        return [
            run
            for run in recent_runs(self.bodies[policy.lower()])
            if run["result"] == "Missed" and parse_time(run["slot"]) > mark
        ]

    def burst(self, policy: str) -> list[Call]:
        """The first calls after the outage that came back to back (catch-up runs go one after
        another, on-time runs one period apart)."""
        calls = sorted(self.after(policy), key=lambda call: call.arrived)
        burst = calls[:1]
        for call in calls[1:]:
            if call.arrived - burst[-1].arrived > EVERY / 2:
                break
            burst.append(call)
        return burst


@pytest.fixture(scope="module")
def outage(
    cluster: LocalCluster,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    receiver: Receiver,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Outage]:
    namespace = module_namespace
    with Operators(cluster, tmp_path_factory.mktemp("operators"), namespace=namespace) as ops:
        apply(
            cluster,
            *(
                scheduled_job(
                    namespace,
                    policy.lower(),
                    {
                        "every": "2s",
                        "missedRuns": {"policy": policy, "maxCatchUp": MAX_CATCH_UP},
                        "history": {"succeeded": 20, "failed": 5},
                        "target": http_target(receiver, namespace, policy.lower()),
                    },
                )
                for policy in POLICIES
            ),
        )
        jobs = {f"{namespace}/{policy.lower()}" for policy in POLICIES}

        def all_called_twice() -> bool:
            return all(len(receiver.calls(job)) >= 2 for job in jobs)

        eventually(all_called_twice, timeout=30, what="two calls of every job")
        # Kill right after the three jobs' calls for one slot (they share the slot grid): the
        # next slot is ~2 s away, so no claim is on its way.
        seen = len(receiver.calls())
        eventually(
            lambda: len(receiver.calls()) >= seen + 3, timeout=10, what="a slot's three calls"
        )
        ops["r1"].kill()
        killed = now()
        bodies = read_all(cluster, namespace)
        high_water = {}
        for policy in POLICIES:
            mark = last_schedule_time(bodies[policy.lower()])
            assert mark is not None
            high_water[policy] = mark
        missed_before = {p: counts(bodies[p.lower()])["missed"] for p in POLICIES}
        sleep_until(killed + DOWN_FOR)
        restarted = now()
        ops.start("r1")

        def on_time_again() -> bool:
            # Two slots on time after the restart, and their records in status.
            skip = f"{namespace}/skip"
            late = [c for c in receiver.calls(skip) if c.slot > restarted]
            return len(late) >= 2 and all(
                (last_schedule_time(read(cluster, namespace, p.lower())) or restarted)
                >= late[1].slot
                for p in POLICIES
            )

        eventually(on_time_again, timeout=60, what="two runs on time after the restart")
        sleep_until(now() + 2.5 * timedelta(seconds=1))  # the next coalesced status write
        problems = ops.problems()
        yield Outage(
            namespace=namespace,
            killed=killed,
            restarted=restarted,
            high_water=high_water,
            missed_before=missed_before,
            calls={p: receiver.calls(f"{namespace}/{p.lower()}") for p in POLICIES},
            bodies=read_all(cluster, namespace),
        )
        assert problems == {}, f"see {ops.logs()}"


def missed_in(record: dict[str, Any]) -> int:
    """How many slots a Missed record stands for: its message starts "N slot(s) missed"."""
    count, _, _ = record["message"].partition(" slot(s) missed")
    return int(count)


class TestAfterTheOperatorWasDown:
    """Each job is judged on its own record: the replica decides on each job when it sees it,
    and on a loaded machine it sees them up to seconds apart, so their cut-offs differ."""

    def test_the_outage_spans_at_least_three_slots(self, outage: Outage) -> None:
        lines = [f"killed {fmt(outage.killed)}, restarted {fmt(outage.restarted)}"]
        for policy in POLICIES:
            after = outage.after(policy)
            lines.append(
                f"{policy}: lastScheduleTime {fmt(outage.high_water[policy])}, slots due while "
                f"down {len(outage.down(policy))}, given up {len(outage.given_up(policy))}, "
                f"counted missed {outage.missed_counted(policy)}, first calls (slot, lateness "
                f"ms) {[(fmt(c.slot), round(c.lateness_ms)) for c in after[:6]]}"
            )
        caught_up = {c.idempotency_key for p in POLICIES for c in outage.burst(p)}
        on_time = [
            c for p in POLICIES for c in outage.calls[p] if c.idempotency_key not in caught_up
        ]
        runs = [
            run
            for body in outage.bodies.values()
            for run in recent_runs(body)
            if "latenessMillis" in run and run["latenessMillis"] < EVERY / timedelta(milliseconds=1)
        ]
        lines += [
            "lateness of on-time runs at the receiver: "
            f"{Spread.of(c.lateness_ms for c in on_time)}",
            f"lateness of on-time runs in status: {Spread.of(status_lateness(runs))}",
        ]
        report("missed runs after a SIGKILL and restart (every: 2s)", lines)
        assert all(len(outage.down(policy)) >= 3 for policy in POLICIES)

    def test_no_slot_runs_twice_across_the_restart(self, outage: Outage) -> None:
        for policy in POLICIES:
            keys = [call.idempotency_key for call in outage.calls[policy]]
            assert len(keys) == len(set(keys)), policy

    def test_after_the_first_run_every_slot_runs_in_order(self, outage: Outage) -> None:
        for policy in POLICIES:
            after = outage.after(policy)
            slots = [call.slot for call in after]
            assert slots == sorted(slots), f"{policy}: not in slot order"
            assert slots == every_slots(slots[0] - EVERY, slots[-1], EVERY), policy

    @pytest.mark.parametrize("policy", POLICIES)
    def test_the_slots_given_up_are_counted_missed_once_and_never_run(
        self, outage: Outage, policy: str
    ) -> None:
        given_up = outage.given_up(policy)
        assert outage.missed_counted(policy) == len(given_up)
        missed = outage.missed_records(policy)
        if given_up:
            assert missed, "no Missed record"
            assert parse_time(missed[0]["slot"]) == given_up[-1]
            assert sum(missed_in(record) for record in missed) == len(given_up)

    def test_skip_runs_none_of_them_and_resumes_on_time(self, outage: Outage) -> None:
        # Every slot due while down is given up; the first run is one due after the restart,
        # on time, not a catch-up.
        assert set(outage.down("Skip")) <= set(outage.given_up("Skip"))
        assert len(outage.burst("Skip")) == 1
        assert outage.after("Skip")[0].lateness_ms < EVERY / timedelta(milliseconds=1) / 2

    def test_run_once_runs_only_the_newest_of_them(self, outage: Outage) -> None:
        # The newest slot due when the replica came back runs then, late; every older one is
        # given up (and counted, see above). A slot falling due while that catch-up run is
        # being claimed may follow right after it: it is merely late, not one of the missed.
        assert len(outage.given_up("RunOnce")) >= len(outage.down("RunOnce")) - 1
        assert len(outage.burst("RunOnce")) <= 2

    def test_catch_up_runs_them_all_in_order_up_to_max_catch_up(self, outage: Outage) -> None:
        burst = outage.burst("CatchUp")
        down = outage.down("CatchUp")
        assert [c.slot for c in burst] == sorted(c.slot for c in burst)
        if outage.given_up("CatchUp"):
            # The restart took long (a loaded machine): the newest maxCatchUp ran, one after
            # another, the older ones were counted missed.
            assert len(burst) >= MAX_CATCH_UP
        else:
            assert outage.first_run("CatchUp") == down[0]
            assert len(burst) >= len(down)


@pytest.fixture
def receiver_of_test() -> Iterator[Receiver]:
    with Receiver() as started:
        yield started


class TestReplicasThatFallBehind:
    @pytest.mark.usefixtures("scheduled_job_crd")
    def test_slots_missed_while_replicas_stall_at_different_times_are_counted_once(
        self,
        cluster: LocalCluster,
        redis_server: LocalRedis,
        namespace: str,
        receiver_of_test: Receiver,
        tmp_path: Path,
    ) -> None:
        receiver, second = receiver_of_test, timedelta(seconds=1)
        with Operators(
            cluster,
            tmp_path,
            namespace=namespace,
            replicas=2,
            lock_backend="redis",
            redis_url=redis_server.url,
        ) as ops:
            name = "stalled"
            spec = {"every": "1s", "target": http_target(receiver, namespace, name)}
            apply(cluster, scheduled_job(namespace, name, spec))
            job = f"{namespace}/{name}"
            eventually(lambda: len(receiver.calls(job)) >= 2, timeout=30, what="two calls")
            seen = len(receiver.calls(job))
            slot = eventually(
                lambda: receiver.calls(job)[seen:], timeout=5, what="a fresh call", interval=0.02
            )[0].slot
            missed_before = counts(read(cluster, namespace, name))["missed"]
            # Both stall after slot S; r1 comes back at S+3.5 s (runs S+3, RunOnce), stalls
            # again at S+3.8 s; r2 comes back at S+6.5 s (runs S+6); r1 at S+6.8 s.
            sleep_until(slot + 0.3 * second)
            ops["r1"].pause()
            ops["r2"].pause()
            sleep_until(slot + 3.5 * second)
            ops["r1"].resume()
            sleep_until(slot + 3.8 * second)
            ops["r1"].pause()
            sleep_until(slot + 6.5 * second)
            ops["r2"].resume()
            sleep_until(slot + 6.8 * second)
            ops["r1"].resume()
            eventually(
                lambda: len([c for c in receiver.calls(job) if c.slot > slot + 7 * second]) >= 2,
                timeout=20,
                what="two calls after the stalls",
            )
            sleep_until(now() + 2.5 * second)  # the next coalesced status writes
            body = read(cluster, namespace, name)

        ran = sorted({c.slot for c in receiver.calls(job) if c.slot > slot})
        not_run = [s for s in every_slots(slot, ran[-1], second) if s not in set(ran)]
        missed = counts(body)["missed"] - missed_before
        report(
            "two replicas stalling at different times (SIGSTOP), every: 1s, RunOnce",
            [
                f"S = {fmt(slot)}; slots run after S: {[fmt(s) for s in ran[:6]]}",
                f"slots not run: {[fmt(s) for s in not_run]}; counts.missed grew by {missed}",
                "Missed records: "
                + str(
                    [
                        (r["slot"], r["message"])
                        for r in recent_runs(body)
                        if r["result"] == "Missed"
                    ]
                ),
            ],
        )
        assert missed == len(not_run)
