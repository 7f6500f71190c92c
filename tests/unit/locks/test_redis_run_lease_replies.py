"""What the Redis run leases make of what they read back, with a scripted client in place of
Redis: whatever else writes to that Redis may leave bytes that are not UTF-8 or fields HOLD
never wrote, and none of it may end the detector or lose a lease the take-over removed."""

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from punctual.contracts import records
from punctual.locks import redis_leases
from punctual.redis_io import connections
from punctual.runtime import leases
from punctual.scheduling import slots

JOB = slots.JobRef(namespace="reports", name="nightly", uid="5f0c1d2e-0000-4000-8000-00000000abcd")
SLOT = datetime(2026, 1, 1, 2, 30, tzinfo=UTC)
SLOT_ID = slots.slot_id(JOB, SLOT)
STARTED = SLOT + timedelta(milliseconds=40)
AS_WRITTEN = records.Lease(
    job=JOB,
    slot=SLOT,
    slot_id=SLOT_ID,
    replica="punctual-7d9f-abcde",
    attempt=2,
    started_at=STARTED,
)
MISSING: dict[str, tuple[str, Any]] = {
    "attempt": ("attempt", 1),
    "startedAt": ("started_at", None),
    "replica": ("replica", "?"),
}
"""What a missing field reads as: the attribute, its value."""
_SCRIPTS = {
    redis_leases.HOLD: "hold",
    redis_leases.RENEW: "renew",
    redis_leases.RELEASE: "release",
    redis_leases.EXPIRED: "expired",
    redis_leases.TAKE_OVER: "take_over",
}


class ScriptedRedis:
    """Answers each script with the reply the test gave it."""

    def __init__(self, **replies: Any) -> None:
        self.replies = replies

    def register_script(self, text: str) -> Any:
        name = _SCRIPTS[text]

        async def call(*, keys: list[str], args: list[Any]) -> Any:
            return self.replies[name]

        return call


def run_leases(**replies: Any) -> redis_leases.RedisRunLeases:
    client: Any = ScriptedRedis(**replies)
    return redis_leases.RedisRunLeases(connections.Connection(client, "redis://test", None))


def as_hold_wrote_it(**changes: bytes) -> list[bytes]:
    fields = {
        "replica": b"punctual-7d9f-abcde",
        "attempt": b"2",
        "startedAt": str(redis_leases._millis(STARTED)).encode(),
        "slot": str(redis_leases._millis(SLOT)).encode(),
        **changes,
    }
    return [part for name, value in fields.items() for part in (name.encode(), value)]


async def taken_over(run: list[bytes]) -> records.Lease:
    [lease] = await run_leases(take_over=[SLOT_ID.encode(), run]).take_over([SLOT_ID])
    return lease


class TestALeaseTakenOver:
    async def test_reads_as_hold_wrote_it(self) -> None:
        assert await taken_over(as_hold_wrote_it()) == AS_WRITTEN

    async def test_whose_run_expired_with_it_is_still_recorded(self) -> None:
        lease = await taken_over([])

        assert (lease.slot, lease.replica, lease.attempt, lease.started_at) == (SLOT, "?", 1, None)

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            pytest.param("attempt", b"x", id="attempt-not-a-number"),
            pytest.param("attempt", b" 2", id="attempt-with-a-space"),
            pytest.param("attempt", b"2_0", id="attempt-with-an-underscore"),
            pytest.param("attempt", "\u00b2".encode(), id="attempt-a-unicode-digit"),
            pytest.param("attempt", b"\xff", id="attempt-not-utf-8"),
            pytest.param("startedAt", b"-5", id="started-negative"),
            pytest.param("startedAt", b"9" * 16, id="started-past-year-9999"),
            pytest.param("startedAt", b"9" * 40, id="started-a-huge-number"),
            pytest.param("replica", b"r2\r\nforged: log line", id="replica-with-a-newline"),
            pytest.param("replica", b"r" * 10_000, id="replica-too-long"),
            pytest.param("replica", b"", id="replica-empty"),
        ],
    )
    async def test_a_field_hold_did_not_write_counts_as_missing(
        self, field: str, value: bytes
    ) -> None:
        lease = await taken_over(as_hold_wrote_it(**{field: value}))

        attribute, missing = MISSING[field]
        assert lease == dataclasses.replace(AS_WRITTEN, **{attribute: missing})

    async def test_is_of_the_slot_its_id_names_whatever_the_hash_says(self) -> None:
        lease = await taken_over(as_hold_wrote_it(slot=b"0"))

        assert lease.slot == SLOT


class TestALeaseOfARunAskedForByHand:
    """Its id names its token, not an instant: the instant it was asked for is the hash's."""

    RUN_NOW_ID = slots.run_now_slot_id(JOB, "deploy-42")

    async def taken_over(self, run: list[bytes]) -> records.Lease:
        backend = run_leases(take_over=[self.RUN_NOW_ID.encode(), run])
        [lease] = await backend.take_over([self.RUN_NOW_ID])
        return lease

    async def test_reads_its_job_from_its_id_and_when_it_was_asked_from_the_hash(self) -> None:
        lease = await self.taken_over(as_hold_wrote_it())

        assert lease == dataclasses.replace(AS_WRITTEN, slot_id=self.RUN_NOW_ID)

    async def test_a_slot_field_hold_did_not_write_reads_as_the_epoch(self) -> None:
        lease = await self.taken_over(as_hold_wrote_it(slot=b"x"))

        assert (lease.job, lease.slot) == (JOB, datetime(1970, 1, 1, tzinfo=UTC))

    async def test_is_taken_over_by_the_detector_of_its_job(self) -> None:
        backend = run_leases(
            expired=[self.RUN_NOW_ID.encode()],
            take_over=[self.RUN_NOW_ID.encode(), as_hold_wrote_it()],
        )
        lost: list[records.Lease] = []

        async def on_lost(lease: records.Lease) -> None:
            lost.append(lease)

        detector = leases.LossDetector(backend, jobs=lambda: [JOB], on_lost=on_lost)

        assert await detector.scan() == 1
        assert [lease.slot_id for lease in lost] == [self.RUN_NOW_ID]


class TestTheExpiredLeasesListed:
    async def test_a_member_that_is_not_utf_8_reads_as_escapes(self) -> None:
        listed = await run_leases(expired=[b"ns/\xffjob/uid/1", SLOT_ID.encode()]).expired(limit=10)

        assert listed == ["ns/\\xffjob/uid/1", SLOT_ID]

    async def test_such_a_member_is_left_alone_and_the_others_taken_over(self) -> None:
        backend = run_leases(
            expired=[b"\xff\xfe", SLOT_ID.encode()],
            take_over=[SLOT_ID.encode(), as_hold_wrote_it()],
        )
        lost: list[records.Lease] = []

        async def on_lost(lease: records.Lease) -> None:
            lost.append(lease)

        detector = leases.LossDetector(backend, jobs=lambda: [JOB], on_lost=on_lost)

        assert await detector.scan() == 1
        assert [lease.slot_id for lease in lost] == [SLOT_ID]


class TestRenewals:
    async def test_a_slot_id_that_is_not_utf_8_reads_as_escapes(self) -> None:
        lease = records.Lease(job=JOB, slot=SLOT, slot_id=SLOT_ID, replica="r1")

        gone = await run_leases(renew=[b"\xff"]).renew([lease], ttl=timedelta(seconds=15))

        assert gone == ["\\xff"]
