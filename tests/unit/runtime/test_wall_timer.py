"""The wall timer: waiters wake when the wall clock reads their target, never before."""

import asyncio
from datetime import datetime, timedelta

from runtime_doubles import LOOPTIME, SECOND, TOLERANCE, FakeWall

from punctual.runtime.timers import HEAD_START, WAKE_ROUND, WallTimer

pytestmark = LOOPTIME

MINUTE = 60 * SECOND
HOUR = 60 * MINUTE


async def woken_at(timer: WallTimer, wall: FakeWall, target: datetime) -> datetime:
    await timer.wait_until(target)
    return wall()


class TestOneWaiter:
    async def test_wakes_when_the_wall_clock_reads_its_target(self, wall: FakeWall) -> None:
        timer = WallTimer(wall=wall)
        target = wall() + 2.5 * SECOND

        await timer.wait_until(target)

        assert target <= wall() <= target + TOLERANCE

    async def test_wakes_at_a_target_hours_away_to_the_millisecond(self, wall: FakeWall) -> None:
        timer = WallTimer(wall=wall)
        target = wall() + 3 * HOUR + 0.25 * SECOND

        await timer.wait_until(target)

        assert target <= wall() <= target + TOLERANCE

    async def test_returns_at_once_for_a_target_already_passed(self, wall: FakeWall) -> None:
        timer = WallTimer(wall=wall)
        now = wall()

        await timer.wait_until(now - HOUR)
        await timer.wait_until(now)

        assert wall() == now


class TestSeveralWaiters:
    async def test_each_wake_at_their_own_target(self, wall: FakeWall) -> None:
        timer = WallTimer(wall=wall)
        start = wall()
        offsets = [5 * SECOND, 2.5 * SECOND, 90 * SECOND, HOUR, 2.5 * SECOND, 61 * SECOND]
        targets = [start + offset for offset in offsets]

        woken = await asyncio.gather(*(woken_at(timer, wall, target) for target in targets))

        for target, when in zip(targets, woken, strict=True):
            assert target <= when <= target + TOLERANCE

    async def test_a_later_waiter_with_an_earlier_target_is_not_held_up(
        self, wall: FakeWall
    ) -> None:
        timer = WallTimer(wall=wall)
        start = wall()
        far = asyncio.create_task(woken_at(timer, wall, start + HOUR))
        await asyncio.sleep(10)

        near = await woken_at(timer, wall, start + 10.5 * SECOND)
        assert start + 10.5 * SECOND <= near <= start + 10.5 * SECOND + TOLERANCE

        assert start + HOUR <= await far <= start + HOUR + TOLERANCE

    async def test_a_cancelled_waiter_leaves_the_others_on_time(self, wall: FakeWall) -> None:
        timer = WallTimer(wall=wall)
        start = wall()
        first = asyncio.create_task(woken_at(timer, wall, start + 3 * SECOND))
        second = asyncio.create_task(woken_at(timer, wall, start + 7 * SECOND))
        await asyncio.sleep(1)

        first.cancel()
        await asyncio.gather(first, return_exceptions=True)

        assert start + 7 * SECOND <= await second <= start + 7 * SECOND + TOLERANCE


class TestAWallClockJump:
    async def test_forward_wakes_a_near_waiter_within_a_second(self, wall: FakeWall) -> None:
        timer = WallTimer(wall=wall)
        start = wall()
        waiter = asyncio.create_task(woken_at(timer, wall, start + 40 * SECOND))
        await asyncio.sleep(5.5)

        wall.jump(HOUR)
        jumped_at = asyncio.get_running_loop().time()
        await waiter

        assert asyncio.get_running_loop().time() - jumped_at <= 1.0

    async def test_forward_wakes_a_far_waiter_within_a_minute(self, wall: FakeWall) -> None:
        timer = WallTimer(wall=wall)
        start = wall()
        waiter = asyncio.create_task(woken_at(timer, wall, start + HOUR))
        await asyncio.sleep(10.5)

        wall.jump(HOUR)
        jumped_at = asyncio.get_running_loop().time()
        await waiter

        assert asyncio.get_running_loop().time() - jumped_at <= 60.0

    async def test_backward_delays_the_wake_up_until_the_wall_clock_reads_the_target(
        self, wall: FakeWall
    ) -> None:
        timer = WallTimer(wall=wall)
        start, began = wall(), asyncio.get_running_loop().time()
        target = start + 10 * SECOND
        waiter = asyncio.create_task(woken_at(timer, wall, target))
        await asyncio.sleep(5.5)

        wall.jump(-HOUR)

        assert target <= await waiter <= target + TOLERANCE
        elapsed = timedelta(seconds=asyncio.get_running_loop().time() - began)
        assert abs(elapsed - (HOUR + 10 * SECOND)) <= TOLERANCE


class TestWaitersDueAtOnce:
    """Due at one instant, waiters wake in turns across their namespaces: what each does next
    queues behind those woken before it."""

    async def test_wake_in_turns_across_namespaces_not_in_the_order_they_parked(
        self, wall: FakeWall
    ) -> None:
        timer = WallTimer(wall=wall)
        target = wall() + 10 * SECOND
        woken: list[str] = []

        async def wait(name: str, namespace: str) -> None:
            await timer.wait_until(target, namespace=namespace)
            woken.append(name)

        parked = [(f"a{index}", "tenant-a") for index in range(1, 5)]
        parked += [("b1", "tenant-b"), ("b2", "tenant-b")]
        await asyncio.gather(*(wait(name, namespace) for name, namespace in parked))

        assert woken == ["a1", "b1", "a2", "b2", "a3", "a4"]

    async def test_the_turns_go_on_from_one_instant_to_the_next(self, wall: FakeWall) -> None:
        timer = WallTimer(wall=wall)
        start = wall()
        woken: list[str] = []

        async def wait(name: str, namespace: str, seconds: int) -> None:
            await timer.wait_until(start + seconds * SECOND, namespace=namespace)
            woken.append(name)

        await asyncio.gather(
            wait("a1 at 1s", "tenant-a", 1),
            wait("a2 at 1s", "tenant-a", 1),
            wait("b at 1s", "tenant-b", 1),
            wait("a at 2s", "tenant-a", 2),
            wait("b at 2s", "tenant-b", 2),
        )

        # tenant-a had the last turn at 1 s: tenant-b goes first at 2 s.
        assert woken == ["a1 at 1s", "b at 1s", "a2 at 1s", "b at 2s", "a at 2s"]

    async def test_wake_a_round_at_a_time_and_the_loop_serves_others_in_between(
        self, wall: FakeWall
    ) -> None:
        timer = WallTimer(wall=wall)
        target = wall() + 10 * SECOND
        woken: list[str] = []

        async def wait(index: int) -> None:
            await timer.wait_until(target, namespace="tenant-a")
            woken.append(f"a{index}")
            if index == 0:  # the first woken's claim: work it hands to the loop
                asyncio.get_running_loop().call_soon(woken.append, "claim of a0")

        await asyncio.gather(*(wait(index) for index in range(3 * WAKE_ROUND)))

        assert len(woken) == 3 * WAKE_ROUND + 1
        assert woken.index("claim of a0") == WAKE_ROUND

    async def test_the_largest_namespaces_rest_waits_a_head_start_for_the_others(
        self, wall: FakeWall
    ) -> None:
        timer = WallTimer(wall=wall)
        target = wall() + 10 * SECOND
        woken: dict[str, datetime] = {}

        async def wait(name: str, namespace: str) -> None:
            await timer.wait_until(target, namespace=namespace)
            woken[name] = wall()

        parked = [(f"a{index}", "tenant-a") for index in range(1, 6)]
        parked += [(f"b{index}", "tenant-b") for index in range(1, 3)]
        parked += [("c1", "tenant-c")]
        await asyncio.gather(*(wait(name, namespace) for name, namespace in parked))

        # Turns take every waiter of b and c, and as many of a's as b has, in the first round.
        first_round = {name for name, at in woken.items() if at < target + HEAD_START}
        assert first_round == {"a1", "a2", "b1", "b2", "c1"}
        assert all(woken[name] >= target + HEAD_START for name in ("a3", "a4", "a5"))
        assert max(woken.values()) <= target + HEAD_START + TOLERANCE

    async def test_one_namespaces_waiters_due_at_once_wait_no_head_start(
        self, wall: FakeWall
    ) -> None:
        timer = WallTimer(wall=wall)
        target = wall() + 10 * SECOND

        woken = await asyncio.gather(
            *(woken_at(timer, wall, target) for _ in range(3 * WAKE_ROUND))
        )

        assert max(woken) < target + HEAD_START
