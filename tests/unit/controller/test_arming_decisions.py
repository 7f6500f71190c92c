"""What a replica does with a new, valid generation of a job (``arming.decide``): suspend it,
or arm it from a slot that depends on what it saw before (nothing: the job is new to it; a
job being scheduled: a spec change; a suspended job: a resume), on the high-water mark
(``status.lastScheduleTime``) and on the time. A resume also starts the failure count again."""

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from punctual.api import planning, spec_parsing
from punctual.controller import arming, failures

UID = "0b6f2c1e-8d2a-4c7e-9a51-3f1d2e4b5a69"
HTTP = {"http": {"url": "http://report-svc.reports.svc:8080/run"}}
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def at(hour: int, minute: int) -> datetime:
    return datetime(2026, 3, 2, hour, minute, tzinfo=UTC)


def text(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%dT%H:%M:%SZ")


NEW = None
SCHEDULING = arming.Seen(generation=1, suspended=False)
SUSPENDED = arming.Seen(generation=1, suspended=True)
SUSPENDED_AFTER_11_40 = arming.Seen(generation=1, suspended=True, suspended_after=at(11, 40))


def decide(
    seen: arming.Seen | None,
    status: dict[str, Any],
    *,
    offset: timedelta = timedelta(),
    **spec: Any,
) -> arming.Decision:
    parsed = spec_parsing.parse_spec({"schedule": "*/5 * * * *", "target": HTTP, **spec})
    plan = dataclasses.replace(planning.plan_for(parsed, uid=UID), offset=offset)
    return arming.decide(seen=seen, spec=parsed, status=status, plan=plan, now=NOW)


def high_water(instant: datetime) -> dict[str, Any]:
    return {"lastScheduleTime": text(instant)}


def suspended_condition(since: datetime) -> dict[str, Any]:
    condition = {"type": "Suspended", "status": "True", "lastTransitionTime": text(since)}
    return {"conditions": [condition]}


class TestWhereSchedulingStarts:
    @pytest.mark.parametrize(
        ("seen", "status", "resume_after", "suspended_through"),
        [
            # New to this replica: from the high-water mark, wherever it is; else from now.
            (NEW, {}, NOW, None),
            (NEW, high_water(at(11, 50)), at(11, 50), None),
            (NEW, high_water(at(12, 10)), at(12, 10), None),
            # A spec change: from now, or from a mark ahead of it; never a past slot.
            (SCHEDULING, {}, NOW, None),
            (SCHEDULING, high_water(at(11, 50)), NOW, None),
            (SCHEDULING, high_water(at(12, 10)), at(12, 10), None),
            # A resume: from the slot the suspension came after, the Suspended condition's
            # time, the mark or now, the first known; never before the mark. The slots up to
            # now were passed by the suspension.
            (SUSPENDED_AFTER_11_40, high_water(at(11, 30)), at(11, 40), NOW),
            (SUSPENDED_AFTER_11_40, high_water(at(11, 50)), at(11, 50), NOW),
            (
                SUSPENDED_AFTER_11_40,
                {**high_water(at(11, 30)), **suspended_condition(at(11, 45))},
                at(11, 40),
                NOW,
            ),
            (
                SUSPENDED,
                {**high_water(at(11, 30)), **suspended_condition(at(11, 45))},
                at(11, 45),
                NOW,
            ),
            (SUSPENDED, high_water(at(11, 50)), at(11, 50), NOW),
            (SUSPENDED, {}, NOW, NOW),
        ],
    )
    def test_it_arms_from_what_it_saw_the_mark_and_now(
        self,
        seen: arming.Seen | None,
        status: dict[str, Any],
        resume_after: datetime,
        suspended_through: datetime | None,
    ) -> None:
        decision = decide(seen, status)
        assert isinstance(decision, arming.Arm)
        assert (decision.resume_after, decision.suspended_through) == (
            resume_after,
            suspended_through,
        )

    @pytest.mark.parametrize("seen", [NEW, SCHEDULING, SUSPENDED])
    def test_now_is_the_nominal_time_of_a_slot_firing_now(self, seen: arming.Seen | None) -> None:
        decision = decide(seen, {}, offset=timedelta(minutes=1))
        assert isinstance(decision, arming.Arm)
        assert decision.resume_after == at(11, 59)

    @pytest.mark.parametrize(
        "status",
        [
            {"lastScheduleTime": "2026-03-02t11:50:00z"},
            {"lastScheduleTime": "0001-01-01T00:00:00+01:00"},
            {"lastScheduleTime": 7},
            {"conditions": [{"type": "Suspended", "status": "True"}]},
            {"conditions": "Suspended"},
        ],
    )
    def test_a_status_it_cannot_read_counts_as_no_mark(self, status: dict[str, Any]) -> None:
        assert decide(SUSPENDED, status) == arming.Arm(resume_after=NOW, suspended_through=NOW)


class TestTheFailureCount:
    @pytest.mark.parametrize(
        ("seen", "count", "threshold", "reset"),
        [
            (SUSPENDED, 2, None, True),
            (SUSPENDED, 0, None, False),
            (SUSPENDED, "2", None, False),
            # Resumed while this replica was away: the count still at the threshold says so.
            (SCHEDULING, 3, 3, True),
            (NEW, 4, 3, True),
            (NEW, 2, 3, False),
            (SCHEDULING, 5, None, False),
        ],
    )
    def test_it_starts_again_when_the_job_is_resumed(
        self, seen: arming.Seen | None, count: Any, threshold: int | None, reset: bool
    ) -> None:
        spec = {} if threshold is None else {"suspendAfterFailures": threshold}
        decision = decide(seen, {"consecutiveFailures": count}, **spec)
        assert isinstance(decision, arming.Arm)
        assert decision.reset_failures is reset


class TestSuspending:
    @pytest.mark.parametrize(
        ("seen", "newly", "suspended_after"),
        [
            (NEW, True, None),
            (SCHEDULING, True, None),
            (SUSPENDED, False, None),
            (SUSPENDED_AFTER_11_40, False, at(11, 40)),
        ],
    )
    def test_a_suspension_already_seen_keeps_the_slot_it_came_after(
        self, seen: arming.Seen | None, newly: bool, suspended_after: datetime | None
    ) -> None:
        decision = decide(seen, high_water(at(11, 50)), suspend=True)
        assert isinstance(decision, arming.Suspend)
        assert (decision.newly, decision.suspended_after) == (newly, suspended_after)

    @pytest.mark.parametrize(
        ("count", "threshold", "reason", "message"),
        [
            (0, None, "Suspended", "spec.suspend is true: no new slots"),
            (2, 3, "Suspended", "spec.suspend is true: no new slots"),
            (3, 3, failures.REASON, failures.message(count=3, threshold=3)),
            (4, 3, failures.REASON, failures.message(count=4, threshold=3)),
        ],
    )
    def test_its_reason_says_whether_the_failures_paused_it(
        self, count: int, threshold: int | None, reason: str, message: str
    ) -> None:
        spec = {} if threshold is None else {"suspendAfterFailures": threshold}
        decision = decide(SCHEDULING, {"consecutiveFailures": count}, suspend=True, **spec)
        assert isinstance(decision, arming.Suspend)
        assert (decision.reason, decision.message) == (reason, message)
