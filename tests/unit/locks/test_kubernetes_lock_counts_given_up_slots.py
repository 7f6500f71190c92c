"""The kubernetes lock claims the slots a job gave up, made together only to be counted missed,
in one write of the newest of them: each is won if it is past the high-water mark that write
replaced. Claimed one write each, a loop that fell behind wrote up to 16 slots before the one it
runs, and so fell further behind.

Across replicas each slot is still counted once: a write moves the mark only from the version
it read, so two replicas counting the same slots win each at most once between them.
"""

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from punctual.contracts import protocols, records
from punctual.kube import objects
from punctual.locks import kubernetes
from punctual.scheduling import slots, timeline
from status_api_double import JOB, FakeStatusApi, scheduled_job

MARK = datetime(2026, 11, 30, 1, 29, 59, tzinfo=UTC)
GIVEN_UP = [MARK + timedelta(seconds=n) for n in range(1, 5)]


def counted(slot: datetime) -> records.Claim:
    return records.Claim(
        job=JOB,
        slot=slot,
        slot_id=slots.slot_id(JOB, slot),
        holder="r1:1",
        ttl=timedelta(1),
        purpose=records.CountedMissed(),
    )


def lock_on(api: FakeStatusApi) -> kubernetes.KubernetesLock:
    cache = objects.ObjectCache()
    cache.remember(api.body)
    return kubernetes.KubernetesLock(api=api, cache=cache)  # type: ignore[arg-type]


def marked_at(mark: datetime) -> FakeStatusApi:
    return FakeStatusApi(scheduled_job(lastScheduleTime=timeline.rfc3339(mark)))


async def count_together(lock: kubernetes.KubernetesLock, given_up: list[datetime]) -> list[bool]:
    return list(await asyncio.gather(*(lock.claim(counted(slot)) for slot in given_up)))


class TestWhichSlotsAWriteWins:
    @pytest.mark.parametrize(
        ("high_water", "won"),
        [
            pytest.param(None, GIVEN_UP, id="no-mark-all"),
            pytest.param(MARK, GIVEN_UP, id="mark-before-all"),
            pytest.param(GIVEN_UP[1], GIVEN_UP[2:], id="mark-among-them-those-past-it"),
            pytest.param(GIVEN_UP[-1], [], id="mark-at-the-newest-none"),
            pytest.param(GIVEN_UP[-1] + timedelta(seconds=1), [], id="mark-past-all-none"),
        ],
    )
    def test_a_slot_is_won_when_it_is_past_the_mark(
        self, high_water: datetime | None, won: list[datetime]
    ) -> None:
        assert kubernetes.past_mark(GIVEN_UP, high_water=high_water) == frozenset(won)


class TestSlotsCountedTogether:
    async def test_are_one_write_of_the_newest_and_each_is_won(self) -> None:
        api = marked_at(MARK)

        assert await count_together(lock_on(api), GIVEN_UP) == [True] * len(GIVEN_UP)

        assert api.landed == [{"lastScheduleTime": timeline.rfc3339(GIVEN_UP[-1])}]

    async def test_those_another_replica_counted_first_are_lost(self) -> None:
        api = marked_at(MARK)
        lock = lock_on(api)
        api.meddle(lastScheduleTime=timeline.rfc3339(GIVEN_UP[1]))  # its write, not yet seen

        assert await count_together(lock, GIVEN_UP) == [False, False, True, True]

        assert api.refused == 1  # the conflict: read again, and decided on what it shows
        assert api.landed == [{"lastScheduleTime": timeline.rfc3339(GIVEN_UP[-1])}]

    async def test_none_is_written_when_the_mark_has_passed_them_all(self) -> None:
        api = marked_at(GIVEN_UP[-1])

        assert await count_together(lock_on(api), GIVEN_UP) == [False] * len(GIVEN_UP)

        assert api.landed == []

    async def test_two_replicas_counting_the_same_slots_count_each_once(self) -> None:
        api = marked_at(MARK)
        one, other = lock_on(api), lock_on(api)
        api.faults = ["slow"]  # the first write is on the wire while the other replica counts

        first = asyncio.ensure_future(count_together(one, GIVEN_UP[:3]))
        await api.held.wait()
        second = asyncio.ensure_future(count_together(other, GIVEN_UP))
        await asyncio.sleep(0.01)
        api.release.set()

        won = [a or b for a, b in zip(await first, (await second)[:3], strict=True)]
        assert won == [True] * 3
        assert not any(a and b for a, b in zip(await first, await second, strict=False))
        assert (await second)[3]  # the one slot only the other replica gave up
        assert api.status["lastScheduleTime"] == timeline.rfc3339(GIVEN_UP[-1])

    async def test_an_unavailable_api_server_fails_each_closed(self) -> None:
        api = marked_at(MARK)
        lock = lock_on(api)
        api.faults = ["unavailable"]  # the one write's

        answers = await asyncio.gather(
            *(lock.claim(counted(slot)) for slot in GIVEN_UP), return_exceptions=True
        )

        assert all(isinstance(answer, protocols.LockUnavailableError) for answer in answers)
        assert api.landed == []


async def counting_on_a_slow_write(api: FakeStatusApi) -> list["asyncio.Future[bool]"]:
    """The given-up slots' claims, counted together, their one write on the wire."""
    lock = lock_on(api)
    api.faults = ["slow"]
    claims = [asyncio.ensure_future(lock.claim(counted(slot))) for slot in GIVEN_UP]
    await api.held.wait()
    return claims


class TestACancelledCount:
    async def test_its_write_goes_to_its_end_and_answers_the_others(self) -> None:
        api = marked_at(MARK)
        claims = await counting_on_a_slow_write(api)

        claims[0].cancel()  # the one whose write is on the wire
        await asyncio.sleep(0.01)
        assert not claims[0].done()
        api.release.set()

        with pytest.raises(asyncio.CancelledError):
            await claims[0]
        assert await asyncio.gather(*claims[1:]) == [True] * (len(GIVEN_UP) - 1)
        assert len(api.landed) == 1

    async def test_one_waiting_for_the_write_leaves_the_others_answered(self) -> None:
        api = marked_at(MARK)
        claims = await counting_on_a_slow_write(api)

        claims[1].cancel()
        api.release.set()

        with pytest.raises(asyncio.CancelledError):
            await claims[1]
        assert await asyncio.gather(claims[0], *claims[2:]) == [True] * (len(GIVEN_UP) - 1)
        assert len(api.landed) == 1
