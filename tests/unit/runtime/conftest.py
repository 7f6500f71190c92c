"""Fixtures for the runtime tests: a wall clock, a store, a lock and the supervisor using them.

Override ``lock``, ``stagger`` or ``base`` in a test class or module to change what the
supervisor is built from. The supervisor is always shut down at the end of the test, so no run
or loop outlives it (the autouse leftover-task check in tests/conftest.py makes sure).
"""

from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import pytest
from runtime_doubles import BASE, FakeWall

from punctual.contracts import protocols
from punctual.locks.memory import MemoryLock
from punctual.runtime.supervisor import Supervisor
from punctual.stores.memory import MemoryStore

GRACE = timedelta(seconds=5)


@pytest.fixture
def base() -> datetime:
    """What the wall clock reads when the test starts."""
    return BASE


@pytest.fixture
def wall(base: datetime) -> FakeWall:
    return FakeWall(base)


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def lock() -> protocols.SlotLock:
    return MemoryLock()


@pytest.fixture
def stagger() -> timedelta:
    return timedelta()


@pytest.fixture
async def supervisor(
    wall: FakeWall, lock: protocols.SlotLock, store: MemoryStore, stagger: timedelta
) -> AsyncIterator[Supervisor]:
    supervisor = Supervisor(
        wall=wall, lock=lock, store=store, replica="replica-a", stagger=stagger, grace=GRACE
    )
    yield supervisor
    await supervisor.shutdown()
