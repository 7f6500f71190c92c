"""A pool's places are shared fairly by group: a group holds at most its cap, a place given back
goes to the waiting group holding the fewest (round robin among equals), so one group's burst or
long hold never makes another group's caller wait."""

import asyncio

import pytest

from punctual.aio import places

A, B, C = "tenant-a", "tenant-b", "tenant-c"


@pytest.mark.parametrize(
    ("held", "free", "per_group", "takes"),
    [
        (0, 100, 50, True),
        (49, 51, 50, True),
        (50, 50, 50, False),
        (0, 0, 50, False),
        (3, 1, 50, True),
        (0, 1, 1, True),
        (1, 99, 1, False),
    ],
)
def test_a_group_takes_a_free_place_below_its_cap(
    held: int, free: int, per_group: int, takes: bool
) -> None:
    assert places.may_take(held=held, free=free, per_group=per_group) is takes


@pytest.mark.parametrize(
    ("waiting", "held", "per_group", "chosen"),
    [
        ([], {A: 50}, 50, None),
        ([A], {A: 49}, 50, A),
        ([A], {A: 50}, 50, None),
        ([A, B], {A: 50, B: 0}, 50, B),
        ([A, B], {A: 40, B: 40}, 50, A),
        ([B, A], {A: 40, B: 40}, 50, B),
        ([A, B, C], {A: 30, B: 10, C: 10}, 50, B),
        ([A, B, C], {A: 99, B: 1}, 100, C),
        ([A, B], {A: 1, B: 1}, 1, None),
    ],
    ids=[
        "nobody-waits",
        "alone-below-its-cap",
        "alone-at-its-cap",
        "the-one-at-its-cap-waits",
        "equals-first-in-turn",
        "equals-first-in-turn-again",
        "the-fewest-first-in-turn",
        "one-holding-none",
        "everyone-at-its-cap",
    ],
)
def test_a_freed_place_goes_to_the_waiting_group_holding_the_fewest(
    waiting: list[str], held: dict[str, int], per_group: int, chosen: str | None
) -> None:
    assert places.next_group(waiting, held, per_group=per_group) == chosen


async def holders(
    origin: places.FairPlaces, namespace: str, count: int
) -> list[asyncio.Task[None]]:
    tasks = [asyncio.create_task(origin.acquire(namespace)) for _ in range(count)]
    await asyncio.sleep(0)
    return tasks


async def cancel(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


@pytest.mark.looptime
class TestOnTheLoopsClock:
    """No socket here: the places alone, on a clock that moves only when the loop waits."""

    async def test_b_gets_a_place_at_once_while_a_holds_all_it_may_and_wants_more(
        self,
    ) -> None:
        origin = places.FairPlaces(limit=100, per_group=50)
        a_calls = await holders(origin, A, 300)  # 50 held for as long as their target hangs
        start = asyncio.get_running_loop().time()

        async with asyncio.timeout(1):
            await origin.acquire(B)

        assert asyncio.get_running_loop().time() - start == 0
        assert sum(task.done() for task in a_calls) == 50
        await cancel(a_calls)

    async def test_b_waits_for_the_first_place_given_back_not_behind_as_queue(self) -> None:
        origin = places.FairPlaces(limit=100, per_group=100)  # no cap beneath the pool's
        a_calls = await holders(origin, A, 300)
        b_call = asyncio.create_task(origin.acquire(B))
        loop = asyncio.get_running_loop()
        start = loop.time()
        loop.call_later(2, origin.release, A)  # A's first call ends after 2 s

        async with asyncio.timeout(3):
            await b_call

        assert loop.time() - start == pytest.approx(2)
        assert sum(task.done() for task in a_calls) == 100  # A's 101st still waits
        await cancel(a_calls)

    async def test_places_given_back_go_round_by_group(self) -> None:
        origin = places.FairPlaces(limit=3, per_group=3)
        served: list[str] = []

        async def call(namespace: str) -> None:
            await origin.acquire(namespace)
            served.append(namespace)
            await asyncio.sleep(1)
            origin.release(namespace)

        calls = [asyncio.create_task(call(A)) for _ in range(6)]
        await asyncio.sleep(0)
        calls += [asyncio.create_task(call(B)) for _ in range(3)]
        calls += [asyncio.create_task(call(C)) for _ in range(3)]
        await asyncio.gather(*calls)

        # A's first three hold every place; then each second, one place per group.
        assert served == [A, A, A, B, C, A, B, C, A, B, C, A]

    async def test_a_call_cancelled_while_waiting_takes_no_place(self) -> None:
        origin = places.FairPlaces(limit=1, per_group=1)
        await origin.acquire(A)
        waiting = [asyncio.create_task(origin.acquire(A)) for _ in range(2)]
        b_call = asyncio.create_task(origin.acquire(B))
        await asyncio.sleep(0)
        waiting[0].cancel()
        waiting[1].cancel()

        origin.release(A)
        await asyncio.wait_for(b_call, timeout=1)
        origin.release(B)
        await asyncio.wait_for(origin.acquire(A), timeout=1)  # nothing left holding a place


class TestTakingAPlaceWithoutWaiting:
    def test_a_group_below_its_cap_takes_one_and_one_at_it_does_not(self) -> None:
        origin = places.FairPlaces(limit=10, per_group=2)

        taken = [origin.try_acquire(A) for _ in range(3)]

        assert taken == [True, True, False]
        assert origin.try_acquire(B)

    def test_a_place_given_back_can_be_taken_again(self) -> None:
        origin = places.FairPlaces(limit=10, per_group=1)
        origin.try_acquire(A)

        origin.release(A)

        assert origin.try_acquire(A)
