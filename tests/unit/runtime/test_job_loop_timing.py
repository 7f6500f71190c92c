"""When runs start: exactly at their slot, for ever; shifted by jitter and stagger; across DST."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from runtime_doubles import BASE, JOB, LOOPTIME, SECOND, TOLERANCE, FakeWall, Target, every

from punctual.runtime.supervisor import Supervisor
from punctual.scheduling import cron, dst, plans, slots
from punctual.scheduling.missed import MissedRunPolicy
from punctual.stores.memory import MemoryStore

pytestmark = LOOPTIME


class TestNoDrift:
    async def test_the_ten_thousandth_run_starts_exactly_at_its_slot(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall, duration=0.3 * SECOND)
        wall.base = start = BASE + SECOND / 2
        supervisor.arm(JOB, every(SECOND), target, resume_after=start)

        await wall.sleep(10_000 * SECOND)

        history = store.jobs[JOB]
        assert len(history.started) == 10_000
        expected = [BASE + index * SECOND for index in range(1, 10_001)]
        assert [run.slot for run in history.started] == expected
        last = history.started[-1]
        assert last.slot == BASE + 10_000 * SECOND
        assert abs(last.started_at - last.slot) <= TOLERANCE
        assert max(abs(run.started_at - run.slot) for run in history.started) <= TOLERANCE


class TestManyJobs:
    async def test_share_one_timer_and_each_start_at_its_own_slots(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        # 200 jobs, every 1s to 7s, with jitter offsets from 0 to 400 ms.
        jobs = {
            slots.JobRef(namespace="load", name=f"job-{index}", uid=f"uid-{index}"): every(
                (1 + index % 7) * SECOND, offset=(index % 5) * 0.1 * SECOND
            )
            for index in range(200)
        }
        for job, plan in jobs.items():
            supervisor.arm(job, plan, Target(wall, duration=0.5 * SECOND), resume_after=BASE)

        await wall.sleep(30.5 * SECOND)

        for job, plan in jobs.items():
            period = plan.schedule.shortest_period
            started = store.jobs[job].started
            assert [run.slot for run in started] == [
                BASE + count * period for count in range(1, 30 // period.seconds + 1)
            ]
            for run in started:
                assert abs(run.started_at - (run.slot + plan.offset)) <= TOLERANCE


class TestJitter:
    async def test_shifts_the_start_by_the_offset(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = Target(wall)
        plan = every(10 * SECOND, offset=3.25 * SECOND)
        supervisor.arm(JOB, plan, target, resume_after=BASE + 5 * SECOND)
        await wall.sleep_until(BASE + 35 * SECOND)

        expected = [BASE + seconds * SECOND for seconds in (10, 20, 30)]
        assert target.slots == expected
        for began, slot in zip(target.started, expected, strict=True):
            assert abs(began - (slot + 3.25 * SECOND)) <= TOLERANCE

    async def test_keeps_the_nominal_slot_and_its_id(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        plan = every(10 * SECOND, offset=3.25 * SECOND)
        supervisor.arm(JOB, plan, target, resume_after=BASE + 5 * SECOND)
        await wall.sleep_until(BASE + 15 * SECOND)

        [context] = target.contexts
        slot = BASE + 10 * SECOND
        assert context.slot == slot
        assert context.slot_id == slots.slot_id(JOB, slot)
        assert context.slot_id.endswith("/1767225610000")
        assert context.scheduled_time == slot + 3.25 * SECOND
        [record] = store.jobs[JOB].finished
        assert abs(record.lateness) <= TOLERANCE  # type: ignore[arg-type]

    async def test_does_not_make_a_slot_overdue_before_its_jittered_time(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        # Armed after the nominal slot but before its jittered fire time: it is not missed.
        target = Target(wall)
        plan = every(10 * SECOND, offset=3.25 * SECOND, policy=MissedRunPolicy.SKIP)
        wall.base = BASE + 11 * SECOND
        supervisor.arm(JOB, plan, target, resume_after=BASE)
        await wall.sleep_until(BASE + 15 * SECOND)

        assert target.slots == [BASE + 10 * SECOND]
        assert store.jobs[JOB].missed == 0

    async def test_moves_the_starting_deadline_with_the_slot(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        # Armed 7 s after the nominal slot: 2 s after its jittered fire time, within 3 s.
        target = Target(wall)
        plan = every(10 * SECOND, offset=5 * SECOND, starting_deadline=3 * SECOND)
        wall.base = BASE + 17 * SECOND
        supervisor.arm(JOB, plan, target, resume_after=BASE)
        await wall.sleep_until(BASE + 18 * SECOND)

        assert target.slots == [BASE + 10 * SECOND]


COPENHAGEN = ZoneInfo("Europe/Copenhagen")


def daily_at_half_past_two(rules: dst.DstRules = dst.DstRules()) -> plans.JobPlan:
    return plans.JobPlan(schedule=cron.parse("30 2 * * *", zone=COPENHAGEN, rules=rules))


def utc(*fields: int) -> datetime:
    return datetime(*fields, tzinfo=UTC)


class TestADailyCronScheduleAcrossTheFallBackNight:
    """On 2026-10-25, Copenhagen's clocks go from 03:00 CEST back to 02:00 CET (01:00 UTC):
    02:30 happens twice, at 00:30 UTC and at 01:30 UTC."""

    @pytest.fixture
    def base(self) -> datetime:
        return utc(2026, 10, 24, 23, 0)  # 01:00 CEST

    async def test_runs_02_30_once_by_default(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        supervisor.arm(JOB, daily_at_half_past_two(), target, resume_after=wall())
        await wall.sleep_until(utc(2026, 10, 25, 23, 0))

        assert target.slots == [utc(2026, 10, 25, 0, 30)]  # 02:30 CEST
        assert abs(target.started[0] - utc(2026, 10, 25, 0, 30)) <= TOLERANCE
        assert store.jobs[JOB].missed == 0

    async def test_then_runs_at_02_30_winter_time_the_next_day(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = Target(wall)
        supervisor.arm(JOB, daily_at_half_past_two(), target, resume_after=wall())
        await wall.sleep_until(utc(2026, 10, 26, 2, 0))

        assert target.slots == [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]

    @pytest.mark.parametrize(
        ("ambiguous", "expected"),
        [
            (dst.Ambiguous.FIRST, [utc(2026, 10, 25, 0, 30)]),
            (dst.Ambiguous.SECOND, [utc(2026, 10, 25, 1, 30)]),
            (dst.Ambiguous.BOTH, [utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 1, 30)]),
        ],
    )
    async def test_runs_the_occurrences_its_ambiguous_rule_picks(
        self,
        supervisor: Supervisor,
        wall: FakeWall,
        ambiguous: dst.Ambiguous,
        expected: list[datetime],
    ) -> None:
        target = Target(wall)
        plan = daily_at_half_past_two(dst.DstRules(ambiguous=ambiguous))
        supervisor.arm(JOB, plan, target, resume_after=wall())
        await wall.sleep_until(utc(2026, 10, 25, 23, 0))

        assert target.slots == expected
        for began, slot in zip(target.started, expected, strict=True):
            assert abs(began - slot) <= TOLERANCE

    async def test_re_armed_between_the_two_02_30s_does_not_run_the_second(
        self, supervisor: Supervisor, wall: FakeWall, store: MemoryStore
    ) -> None:
        target = Target(wall)
        supervisor.arm(JOB, daily_at_half_past_two(), target, resume_after=wall())
        await wall.sleep_until(utc(2026, 10, 25, 0, 45))  # 02:45 CEST, after the run

        supervisor.arm(JOB, daily_at_half_past_two(), target, resume_after=target.slots[-1])
        await wall.sleep_until(utc(2026, 10, 25, 23, 0))

        assert target.slots == [utc(2026, 10, 25, 0, 30)]
        assert store.jobs[JOB].missed == 0

    async def test_an_hourly_schedule_runs_in_both_copies_of_the_repeated_hour(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = Target(wall)
        plan = plans.JobPlan(schedule=cron.parse("30 * * * *", zone=COPENHAGEN))
        supervisor.arm(JOB, plan, target, resume_after=wall())
        await wall.sleep_until(utc(2026, 10, 25, 3, 0))

        assert target.slots == [utc(2026, 10, 24, 23, 30)] + [
            utc(2026, 10, 25, hour, 30) for hour in range(3)
        ]


class TestADailyCronScheduleAcrossTheSpringForwardNight:
    """On 2026-03-29, Copenhagen's clocks jump from 02:00 CET to 03:00 CEST (01:00 UTC):
    02:30 does not exist."""

    @pytest.fixture
    def base(self) -> datetime:
        return utc(2026, 3, 28, 23, 0)  # 00:00 CET

    async def test_shifts_02_30_forward_to_the_end_of_the_gap(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = Target(wall)
        supervisor.arm(JOB, daily_at_half_past_two(), target, resume_after=wall())
        await wall.sleep_until(utc(2026, 3, 29, 22, 0))

        assert target.slots == [utc(2026, 3, 29, 1, 0)]  # 03:00 CEST
        assert abs(target.started[0] - utc(2026, 3, 29, 1, 0)) <= TOLERANCE

    async def test_with_skip_does_not_run_that_day(
        self, supervisor: Supervisor, wall: FakeWall
    ) -> None:
        target = Target(wall)
        plan = daily_at_half_past_two(dst.DstRules(nonexistent=dst.Nonexistent.SKIP))
        supervisor.arm(JOB, plan, target, resume_after=wall())
        await wall.sleep_until(utc(2026, 3, 30, 1, 0))

        assert target.slots == [utc(2026, 3, 30, 0, 30)]  # 02:30 CEST the next day
