"""The kubernetes lock's claim carries the status its replica has pending, in the same patch
and under the same resourceVersion precondition: one write where there were two that raced.

Whatever happens to the claim (it wins, loses the slot, conflicts with another write, meets an
unavailable API server, is cancelled after it landed), each run is counted on the object once.
"""

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from punctual.contracts import protocols, records
from punctual.kube import objects
from punctual.locks import kubernetes
from punctual.scheduling import slots, timeline
from status_api_double import JOB, FakeStatusApi, scheduled_job, store_on

PREVIOUS = datetime(2026, 11, 30, 1, 29, 59, tzinfo=UTC)
SLOT = PREVIOUS + timedelta(seconds=1)


def claim_of(slot: datetime) -> records.Claim:
    return records.Claim(
        job=JOB, slot=slot, slot_id=slots.slot_id(JOB, slot), holder="r1:1", ttl=timedelta(1)
    )


class Replica:
    """One replica's status store and kubernetes lock, sharing its cache, as ``punctual run``
    wires them; it has run the previous slot and has yet to write it."""

    def __init__(self, api: FakeStatusApi, *, carrying: bool = True) -> None:
        self.api = api
        cache = objects.ObjectCache()
        self.store = store_on(api, wall=lambda: SLOT, clock=lambda: 0.0, cache=cache)
        self.lock = kubernetes.KubernetesLock(
            api=api,  # type: ignore[arg-type]
            cache=cache,
            carrier=self.store if carrying else None,
        )
        self.store.run_finished(
            JOB,
            records.RunRecord(
                slot=PREVIOUS,
                scheduled_time=PREVIOUS,
                result=records.RunResult.SUCCEEDED,
                started_at=PREVIOUS,
                finished_at=PREVIOUS + timedelta(milliseconds=30),
                replica="r1",
            ),
        )

    async def succeeded_on_the_object(self) -> int:
        """Once the status writer has written everything left."""
        await self.store._flush(due_only=False)
        return int(self.api.status.get("counts", {}).get("succeeded", 0))


def at_previous_slot() -> FakeStatusApi:
    return FakeStatusApi(scheduled_job(lastScheduleTime=timeline.rfc3339(PREVIOUS)))


async def test_the_winning_claim_writes_the_slot_and_the_pending_status_in_one_patch() -> None:
    replica = Replica(at_previous_slot())

    assert await replica.lock.claim(claim_of(SLOT))

    [patch] = replica.api.landed
    assert patch["lastScheduleTime"] == timeline.rfc3339(SLOT)
    assert patch["counts"]["succeeded"] == 1
    assert await replica.succeeded_on_the_object() == 1
    assert len(replica.api.landed) == 1  # the status writer had nothing left to write


async def test_a_claim_that_loses_the_slot_leaves_the_status_to_the_writer() -> None:
    replica = Replica(at_previous_slot())
    replica.api.meddle(lastScheduleTime=timeline.rfc3339(SLOT))  # another replica won it

    assert not await replica.lock.claim(claim_of(SLOT))

    assert replica.api.landed == []
    assert await replica.succeeded_on_the_object() == 1


async def test_a_claim_that_conflicts_with_another_write_carries_its_status_onto_that_one() -> None:
    replica = Replica(at_previous_slot())
    replica.api.meddle(counts={"failed": 1})  # another replica's status write

    assert await replica.lock.claim(claim_of(SLOT))

    assert replica.api.refused == 1
    assert replica.api.status["counts"]["succeeded"] == 1
    assert replica.api.status["counts"]["failed"] == 1
    assert await replica.succeeded_on_the_object() == 1


@pytest.mark.parametrize("fault", ["unavailable", "answer lost"])
async def test_an_unavailable_api_server_fails_the_claim_closed_and_counts_the_run_once(
    fault: str,
) -> None:
    replica = Replica(at_previous_slot())
    replica.api.faults.append(fault)

    with pytest.raises(protocols.LockUnavailableError):
        await replica.lock.claim(claim_of(SLOT))

    assert await replica.succeeded_on_the_object() == 1


@pytest.mark.parametrize("answer", ["answer held", "refusal held"])
async def test_a_claim_cancelled_in_flight_stops_once_answered_and_counts_the_run_once(
    answer: str,
) -> None:
    replica = Replica(at_previous_slot())
    replica.api.faults.append(answer)
    claiming = asyncio.create_task(replica.lock.claim(claim_of(SLOT)))
    await replica.api.held.wait()

    claiming.cancel()
    await asyncio.sleep(0.01)
    assert not claiming.done()  # only the answer tells whether what it carried landed
    replica.api.release.set()

    with pytest.raises(asyncio.CancelledError):
        await claiming
    assert await replica.succeeded_on_the_object() == 1
    assert len(replica.api.landed) == 1  # landed with the claim, or written once by the writer


async def test_a_slot_already_claimed_carries_nothing_away_from_the_writer() -> None:
    replica = Replica(FakeStatusApi(scheduled_job(lastScheduleTime=timeline.rfc3339(SLOT))))

    assert not await replica.lock.claim(claim_of(SLOT))

    assert await replica.succeeded_on_the_object() == 1


async def test_without_a_carrier_the_claim_writes_the_slot_alone() -> None:
    replica = Replica(at_previous_slot(), carrying=False)

    assert await replica.lock.claim(claim_of(SLOT))

    assert replica.api.landed == [{"lastScheduleTime": timeline.rfc3339(SLOT)}]


class TestClaimsOfOneJobTakeTurns:
    async def test_slots_claimed_together_land_oldest_first_even_when_the_first_is_slow(
        self,
    ) -> None:
        api = FakeStatusApi(scheduled_job(lastScheduleTime=timeline.rfc3339(PREVIOUS)))
        replica = Replica(api, carrying=False)
        api.faults = ["slow"]
        slots_given_up = [SLOT + timedelta(seconds=n) for n in range(3)]

        claims = [asyncio.ensure_future(replica.lock.claim(claim_of(s))) for s in slots_given_up]
        await api.held.wait()
        await asyncio.sleep(0.01)  # the newer claims would land now, were they not waiting
        api.release.set()

        assert await asyncio.gather(*claims) == [True, True, True]
        assert [patch["lastScheduleTime"] for patch in api.landed] == [
            timeline.rfc3339(s) for s in slots_given_up
        ]


class TestAHighWaterMarkWrittenByHand:
    @pytest.mark.parametrize(
        "text",
        [
            pytest.param("2026-11-30T01:29:59z", id="a-lowercase-z"),
            pytest.param("0001-01-01T00:00:00+01:00", id="before-year-one-in-utc"),
        ],
    )
    async def test_that_cannot_be_read_is_no_mark_and_the_claim_replaces_it(
        self, text: str
    ) -> None:
        replica = Replica(FakeStatusApi(scheduled_job(lastScheduleTime=text)))

        assert await replica.lock.claim(claim_of(SLOT))

        assert replica.api.status["lastScheduleTime"] == timeline.rfc3339(SLOT)
        assert not await replica.lock.claim(claim_of(SLOT))  # readable again: claimed once
