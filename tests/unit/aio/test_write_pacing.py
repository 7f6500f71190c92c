"""The cap on writes per second the status and Event writers share: asked every tick, it never
lets more than ``rate`` writes start in any second, and exactly ``rate`` when the rate is a
whole number of writes per tick (what a tick cannot start whole is not carried over)."""

import pytest

from punctual.aio import pacing

TICK = 0.25


def started_per_tick(rate: float, *, seconds: int, tick: float = TICK) -> list[int]:
    """What a writer with always more to write than allowed starts at each tick."""
    allowance = pacing.Allowance(rate=rate, tick=tick)
    started = []
    for index in range(int(seconds / tick)):
        allowed = allowance.allowed(index * tick)
        allowance.spend(allowed)
        started.append(allowed)
    return started


class TestTheAllowance:
    @pytest.mark.parametrize("rate", [1, 3, 5, 10, 100])
    def test_never_starts_more_than_the_rate_in_any_second(self, rate: int) -> None:
        started = started_per_tick(rate, seconds=20)
        per_tick = int(1 / TICK)

        windows = [sum(started[i : i + per_tick]) for i in range(len(started) - per_tick)]
        assert max(windows) <= rate

    @pytest.mark.parametrize(("rate", "per_second"), [(4, 4), (5, 4), (10, 8), (100, 100)])
    def test_starts_the_whole_writes_of_each_ticks_share(self, rate: int, per_second: int) -> None:
        started = started_per_tick(rate, seconds=20)

        assert sum(started) == pytest.approx(20 * per_second, abs=2)

    def test_holds_one_ticks_worth_after_an_idle_spell(self) -> None:
        allowance = pacing.Allowance(rate=100, tick=TICK)
        allowance.allowed(0.0)

        assert allowance.allowed(60.0) == 25

    def test_refuses_a_rate_that_is_not_positive(self) -> None:
        with pytest.raises(ValueError, match="positive"):
            pacing.Allowance(rate=0, tick=TICK)
