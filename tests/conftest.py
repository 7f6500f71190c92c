"""Fixtures for every test under ``tests/``.

``no_leftover_tasks`` (autouse) fails an async test that leaves asyncio tasks behind: whatever a
test starts (loops, runs, watchers) must be finished or cancelled and awaited by the end of its
own teardown. The check runs in the test's event loop after every other fixture of the test has
been torn down, since autouse fixtures are set up first and torn down last.

Only tests that run in the function-scoped loop (the default) are checked: the fixture lives
there, and a module- or session-scoped loop legitimately keeps tasks across tests.

With looptime and pytest-asyncio >= 1, fixtures run on the real clock and only the test itself on
the fake one: at teardown the loop time steps from the fake clock to ``time.monotonic()``. A timer
the test left behind at a fake time below the real clock then fires at once, so a task that merely
sleeps would finish in teardown and slip through this check. Start the fake clock at the real one
(``pytest.mark.looptime(start=time.monotonic)``) to keep such timers in the future.
"""

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

import programs

SETTLE_ITERATIONS = 3
"""Loop iterations a task gets to finish on its own before it counts as left behind."""
CLEANUP_TIMEOUT = 1.0
"""How long leftovers may take to honour their cancellation (after the test failed anyway)."""


def _test_loop_scope(item: pytest.Item) -> str | None:
    """The loop scope an async test runs in, or None for a test that is not async."""
    if not pytest_asyncio.is_async_test(item):
        return None
    marker = item.get_closest_marker("asyncio")
    scope = None
    if marker is not None:
        scope = marker.kwargs.get("loop_scope") or marker.kwargs.get("scope")
    return scope or item.config.getini("asyncio_default_test_loop_scope") or "function"


def _others() -> set[asyncio.Task[object]]:
    return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]


@pytest_asyncio.fixture(autouse=True, loop_scope="function")
async def no_leftover_tasks(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    # This fixture runs in the function-scoped loop: it can only watch tests that run there.
    if _test_loop_scope(request.node) != "function":
        yield
        return
    before = _others()
    yield
    for _ in range(SETTLE_ITERATIONS):
        if not (_others() - before):
            break
        await asyncio.sleep(0)
    leftovers = sorted(_others() - before, key=lambda task: task.get_name())
    if not leftovers:
        return
    for task in leftovers:
        task.cancel()
    await asyncio.wait(leftovers, timeout=CLEANUP_TIMEOUT)
    names = ", ".join(repr(task.get_name()) for task in leftovers)
    pytest.fail(f"the test left {len(leftovers)} asyncio task(s) behind: {names}", pytrace=False)


def pytest_configure(config: pytest.Config) -> None:
    # Before any test or fixture starts a process: see tests/programs.py.
    programs.install_hook()
