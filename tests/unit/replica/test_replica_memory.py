"""The replica's heap once it changed shape: a cycle frozen while it lived is collected when the
memory settles, and a change of the fleet settles it once, after the last of a rollout's
changes."""

import asyncio
import gc
import time
import weakref
from collections.abc import Iterator

import pytest

from punctual import replica
from punctual.replica import memory
from punctual.replica import settings as replica_settings

LOOPTIME = pytest.mark.looptime(
    start=time.monotonic, end=lambda: time.monotonic() + 3600, noop_cycles=1
)


class Node:
    """An object in a cycle, as a cancelled task, its frames and its exception are."""

    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def unfrozen_afterwards() -> Iterator[None]:
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("unfrozen_afterwards")
def test_a_cycle_frozen_while_it_lived_is_collected_when_the_memory_settles() -> None:
    first, second = Node(), Node()
    first.other, second.other = second, first
    alive = weakref.ref(first)
    gc.freeze()
    del first, second
    gc.collect()
    assert alive() is not None, "a frozen cycle is out of the collector's sight"

    memory.settle()

    assert alive() is None


class Reconciler:
    def __init__(self) -> None:
        self.members: list[frozenset[str]] = []

    def members_changed(self, members: frozenset[str]) -> None:
        self.members.append(members)


@LOOPTIME
async def test_a_rollouts_changes_of_the_fleet_settle_the_memory_once_after_the_last() -> None:
    settled: list[float] = []
    loop = asyncio.get_running_loop()
    operator = replica.Replica(
        replica_settings.ReplicaSettings(replica_id="r1", metrics_port=0),
        settle_memory=lambda: settled.append(loop.time()),
    )
    reconciler = operator._reconciler = Reconciler()  # type: ignore[assignment]
    started = loop.time()

    operator.members_changed(frozenset({"r1", "r2"}))
    await asyncio.sleep(4)
    operator.members_changed(frozenset({"r1", "r2", "r3"}))
    await asyncio.sleep(60)

    assert reconciler.members == [frozenset({"r1", "r2"}), frozenset({"r1", "r2", "r3"})]
    after_the_last = replica.SETTLE_AFTER_MEMBERS_CHANGE.total_seconds()
    assert settled == [pytest.approx(started + 4 + after_the_last)]
