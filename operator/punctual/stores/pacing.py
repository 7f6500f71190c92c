"""A cap on the writes one replica starts per second: the status writer's, the Event writer's.

``Allowance`` is a token bucket refilled at ``rate`` per second up to one tick's worth (no
burst: every second starts ``rate`` writes at most, give or take one tick's). A writer asks it,
at each tick, how many writes may start now, and spends what it starts.
"""

import math


class Allowance:
    """Writes that may start now, at most ``rate`` a second, ``tick`` seconds apart."""

    def __init__(self, *, rate: float, tick: float) -> None:
        if rate <= 0:
            raise ValueError("the rate must be positive")
        self._rate = rate
        self._burst = max(1.0, rate * tick)
        self._left = self._burst
        self._refilled: float | None = None

    def allowed(self, now: float) -> int:
        """How many writes may start at ``now`` (a monotonic clock's seconds)."""
        if self._refilled is not None:
            refill = (now - self._refilled) * self._rate
            self._left = min(self._burst, self._left + refill)
        self._refilled = now
        return max(0, math.floor(self._left + 1e-9))  # 0.1 s × 10/s is 0.9999…

    def spend(self, writes: int) -> None:
        self._left -= writes
