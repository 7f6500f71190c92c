from punctual.contracts import records

"""An in-process slot lock: one replica only (development and unit tests)."""


class MemoryLock:
    def __init__(self) -> None:
        self._holders: dict[str, str] = {}

    async def claim(self, claim: records.Claim) -> bool:
        # Expiry is moot in one process: a slot is never claimed twice by design.
        return self._holders.setdefault(claim.slot_id, claim.holder) == claim.holder

    @property
    def claimed(self) -> frozenset[str]:
        return frozenset(self._holders)
