"""Whether the lock backend answers: a slot lock wrapper that notices, and says so on changes.

When the backend stops answering (Redis down, a wrong password, a failover in progress), every
claim fails closed and no slot runs: correct, but silent in status unless someone says why.
``HealthTrackingLock`` sees each claim's fate and tells its listeners when the backend goes
from answering to not answering and back; the controller turns that into
``Ready=False, reason LockBackendUnavailable`` on every scheduled job, and ``Ready=True`` again.

Recovery is noticed at the next claim that gets an answer, or sooner by ``watch()``, which
pings a backend that can be pinged (``Pingable``) every ``probe_every`` while it is down: a job
that fires once a day must not stay "unavailable" all day after a 30-second blip.

A lost claim is an answer ("another replica owns the slot"): only ``LockUnavailableError``
counts as the backend not answering. Cancellation passes through untouched.
"""

import asyncio
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Protocol, runtime_checkable

from punctual.contracts import protocols, records

logger = logging.getLogger(__name__)

Listener = Callable[[bool, str], None]
"""Called with ``(available, message)`` on every change; ``message`` says why when not."""


@runtime_checkable
class Pingable(Protocol):
    async def ping(self) -> None:
        """Raise ``LockUnavailableError`` unless the backend answers."""
        ...


class HealthTrackingLock:
    """``protocols.SlotLock`` around ``inner`` that tracks whether the backend answers."""

    def __init__(
        self,
        inner: protocols.SlotLock,
        *,
        backend: str,
        probe_every: timedelta = timedelta(seconds=1),
    ) -> None:
        self._inner = inner
        self._backend = backend
        self._probe_every = probe_every.total_seconds()
        self._available = True
        self._message = ""
        self._listeners: list[Listener] = []
        self._down = asyncio.Event()

    def __repr__(self) -> str:
        return f"HealthTrackingLock({self._inner!r})"

    @property
    def available(self) -> bool:
        return self._available

    @property
    def message(self) -> str:
        """Why the backend is unavailable (empty while it answers); safe to show: the lock's
        errors carry redacted URLs only."""
        return self._message

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    async def claim(self, claim: records.Claim) -> bool:
        try:
            won = await self._inner.claim(claim)
        except protocols.LockUnavailableError as error:
            self._mark(available=False, detail=str(error))
            raise
        self._mark(available=True)
        return won

    async def watch(self) -> None:
        """Until cancelled: while the backend is down, ping it every ``probe_every``."""
        if not isinstance(self._inner, Pingable):
            return  # recovery is noticed at the next claim that gets an answer
        while True:
            await self._down.wait()
            await asyncio.sleep(self._probe_every)
            try:
                await self._inner.ping()
            except protocols.LockUnavailableError as error:
                self._mark(available=False, detail=str(error))
            except Exception:  # a probe that fails oddly is no news: try again
                logger.exception("probing the %s lock backend failed", self._backend)
            else:
                self._mark(available=True)

    def _mark(self, *, available: bool, detail: str = "") -> None:
        message = (
            ""
            if available
            else f"the {self._backend} lock backend does not answer, so no slot can be claimed "
            f"and none runs: {detail}"
        )
        changed = available != self._available
        self._available, self._message = available, message
        if available:
            self._down.clear()
        else:
            self._down.set()
        if not changed:
            return
        if available:
            logger.warning("the %s lock backend answers again", self._backend)
        else:
            logger.warning("%s", message)
        for listener in self._listeners:
            try:
                listener(available, message)
            except Exception:  # one listener's bug must not hide the change from the others
                logger.exception("a lock health listener failed")
