"""What a job's owner told this replica, its backup, it claimed (``protocols.TellsBackups``):
slots the backup's loop then leaves to the owner. A hint only, and outside input: bounded in
number and in how far ahead it may reach, so that no message can make a backup leave many
slots, or one far in the future."""

from collections.abc import Sequence
from datetime import datetime, timedelta

from punctual.contracts import protocols
from punctual.scheduling import slots

MAX_NOTICED = 16
"""Slots a backup holds notices of at once, per job: notices beyond are ignored (it then
claims those slots, as without notices)."""
NOTICE_AHEAD = timedelta(seconds=5)
"""How far past this replica's clock a noticed slot may be (the owner's clock runs a little
ahead, or the owner was early): a notice further ahead is ignored, so that no message can make
a backup leave a slot far in the future."""


class Notices:
    """The slots ahead of one job's loop its owner said it claimed."""

    def __init__(
        self, *, job: slots.JobRef, wall: protocols.WallClock, store: protocols.RunStore
    ) -> None:
        self._job = job
        self._wall = wall
        self._store = store
        self._noticed: set[datetime] = set()

    def __bool__(self) -> bool:
        return bool(self._noticed)

    def clear(self) -> None:
        self._noticed.clear()

    def take(self, slot: datetime, *, handled_through: datetime | None) -> bool:
        """Keep the notice of ``slot`` unless it is behind the loop (``handled_through``), too
        far ahead, or one too many; whether it was kept."""
        if (
            (handled_through is not None and slot <= handled_through)
            or slot > self._wall() + NOTICE_AHEAD
            or len(self._noticed) >= MAX_NOTICED
        ):
            return False
        self._noticed.add(slot)
        return True

    def unnoticed(self, due: Sequence[datetime], *, through: datetime) -> Sequence[datetime]:
        """``due`` but the slots the owner said it claimed (each told to the store); notices
        up to ``through`` are dropped (the loop is past them)."""
        left = []
        for slot in due:
            if slot in self._noticed:
                self._store.claim_skipped(self._job, slot=slot)
            else:
                left.append(slot)
        self._noticed = {slot for slot in self._noticed if slot > through}
        return left
