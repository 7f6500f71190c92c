"""Calls run outside their caller's context, in a copy of the first caller's: what every
caller shares stays reachable, and one cause is kept, not one per task."""

import asyncio
import contextvars

import pytest

from punctual.aio import context

_poster: contextvars.ContextVar[str] = contextvars.ContextVar("poster")
_cause: contextvars.ContextVar[str] = contextvars.ContextVar("cause")


async def test_tasks_started_by_a_call_keep_the_first_events_context_not_their_own() -> None:
    detached = context.Detached()
    seen: list[tuple[str, str]] = []
    spawned: list[asyncio.Task[None]] = []

    async def long_lived() -> None:
        seen.append((_poster.get("-"), _cause.get("-")))

    async def observe() -> None:
        spawned.append(asyncio.create_task(long_lived()))

    async def event(cause: str) -> None:  # what kopf does around a handler call
        _poster.set("queue")
        token = _cause.set(cause)
        try:
            await detached.run(observe())
        finally:
            _cause.reset(token)

    await asyncio.create_task(event("first"))
    await asyncio.create_task(event("second"))
    await asyncio.gather(*spawned)
    # kopf's poster is reachable; the second event's cause is not kept by its tasks.
    assert seen == [("queue", "first"), ("queue", "first")]


async def test_a_failing_call_raises_to_the_handler() -> None:
    async def observe() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        await context.Detached().run(observe())
