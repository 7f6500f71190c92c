"""The tasks of one job, its slot loop's and its runs', started in one place.

Closing a job cancels every task it started and waits for them, whichever side started them:
a cancelled run records itself as it ends, and a slot loop cancelled while counting missed slots
still counts the ones it won, so neither may be left to finish after the close. ``job_loop`` and
``runs`` each start their tasks here, and neither has to know the other's.
"""

import asyncio
import contextvars
import logging
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import TypeVar

logger = logging.getLogger(__name__)
_T = TypeVar("_T")
_CALLBACKS = contextvars.Context()
"""Where the tasks' done callbacks run: they read no context variable, and each would otherwise
run in a copy of the context current when it was added, one more object per callback for the
garbage collector to walk (with 10,000 jobs, 20,000)."""


class JobTasks:
    """Every task of one job still going: each leaves the set as it ends."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[object]] = set()

    def spawn(
        self,
        coroutine: Coroutine[None, None, _T],
        *,
        name: str,
        on_done: "Callable[[asyncio.Task[_T]], object] | None" = None,
    ) -> asyncio.Task[_T]:
        """``coroutine`` in a task of this job; ``on_done`` called with it once it is done (it
        must read no context variable)."""
        task = asyncio.create_task(coroutine, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard, context=_CALLBACKS)
        if on_done is not None:
            task.add_done_callback(on_done, context=_CALLBACKS)
        return task

    def cancel(self) -> set[asyncio.Task[object]]:
        """Cancel every task; those still to end (see ``wait_for``)."""
        for task in self._tasks:
            task.cancel()
        return set(self._tasks)


async def wait_for(cancelled: set[asyncio.Task[object]], *, grace: timedelta) -> None:
    """Wait for ``cancelled`` tasks (of one job or many) at most ``grace``; name those left."""
    if cancelled:
        _, pending = await asyncio.wait(cancelled, timeout=grace.total_seconds())
        for task in pending:
            logger.warning("%s did not stop within %s", task.get_name(), grace)
