"""The queue target's executor: the slot's stream entry was appended when the slot was claimed.

The queue target claims its slots through a lock that appends the stream entry in the same
atomic step (``punctual.targets.queue.stream``), so a run has nothing left to do but report
which entry it was: ``enqueued <entry id>``. Consumers do the work.
"""

from typing import Protocol

from punctual.contracts import records


class Entries(Protocol):
    """Where the claim left the id of the entry it appended (the job's stream lock)."""

    def take_entry(self, slot_id: str) -> str | None: ...


class QueueExecutor:
    """``protocols.Executor`` of one queue-target job."""

    def __init__(self, entries: Entries, *, stream: str) -> None:
        self._entries = entries
        self._stream = stream

    def __repr__(self) -> str:
        return f"QueueExecutor({self._stream!r})"

    async def __call__(self, context: records.RunContext) -> records.Outcome:
        entry = self._entries.take_entry(context.slot_id)
        # A won claim always appended the entry; only its id can be missing (a lost reply).
        return records.Outcome(True, f"enqueued {entry or '(id unknown)'}")
