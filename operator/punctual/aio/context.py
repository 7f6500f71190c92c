"""Calls run detached from their caller's ``contextvars`` context."""

import asyncio
import contextvars
from collections.abc import Coroutine
from typing import Any


class Detached:
    """Runs calls outside the context of whoever made them, in a copy of the first caller's.

    A task inherits a copy of the context it is created in. A framework's handler context may
    hold a large cause (kopf's: the event's body, patch, loggers and memo), and long-lived tasks
    started by a call would each keep their caller's for as long as they live. Instead, every
    call runs in a copy of one context, taken at the first call: what the framework put there
    for every handler stays reachable (kopf's event poster), and one cause is kept, not one per
    task.
    """

    def __init__(self) -> None:
        self._base: contextvars.Context | None = None

    async def run(self, call: Coroutine[Any, Any, None]) -> None:
        if self._base is None:
            self._base = contextvars.copy_context()
        await asyncio.create_task(call, context=self._base.copy())
