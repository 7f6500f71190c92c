"""Drift, side by side in real time: a naive sleep loop against Punctual's slot loop.

The naive loop, ``await work(); await asyncio.sleep(interval)``, drifts by the work's duration
and every wake-up's lateness on each tick. Punctual computes each slot from the previous slot
and waits toward it on the wall clock, so its lateness does not accumulate. Both run at once in
one event loop; the table shows the final tick's lateness of each and their ratio.

Usage: python bench/loop_drift.py
"""

import asyncio
import statistics
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from punctual.contracts import records
from punctual.locks import memory as memory_lock
from punctual.runtime import clocks, supervisor
from punctual.scheduling import interval, plans, slots
from punctual.stores import memory as memory_store


@dataclass(frozen=True)
class Scenario:
    ticks: int
    interval: timedelta
    work: timedelta


SCENARIOS = (
    Scenario(ticks=200, interval=timedelta(milliseconds=50), work=timedelta(milliseconds=5)),
    Scenario(ticks=10, interval=timedelta(milliseconds=100), work=timedelta(milliseconds=20)),
)


async def naive(scenario: Scenario) -> list[timedelta]:
    """Lateness of each tick against ``first start + k × interval``."""
    starts: list[datetime] = []
    while len(starts) < scenario.ticks:
        starts.append(clocks.system_wall())
        await asyncio.sleep(scenario.work.total_seconds())
        await asyncio.sleep(scenario.interval.total_seconds())
    return [start - (starts[0] + k * scenario.interval) for k, start in enumerate(starts)]


async def punctual(scenario: Scenario) -> list[timedelta]:
    """Lateness of each run's start against its slot."""
    store = memory_store.MemoryStore()
    done = asyncio.Event()
    job = slots.JobRef(namespace="bench", name="drift", uid="bench")

    async def work(_: records.RunContext) -> records.Outcome:
        if len(store.jobs[job].started) >= scenario.ticks:
            done.set()
        await asyncio.sleep(scenario.work.total_seconds())
        return records.Outcome(succeeded=True)

    scheduler = supervisor.Supervisor(
        wall=clocks.system_wall,
        lock=memory_lock.MemoryLock(),
        store=store,
        replica="bench",
    )
    plan = plans.JobPlan(schedule=interval.IntervalSchedule(every=scenario.interval))
    scheduler.arm(job, plan, work, resume_after=clocks.system_wall())
    await done.wait()
    await scheduler.shutdown()
    runs = store.jobs[job].started[: scenario.ticks]
    return [run.started_at - run.scheduled_time for run in runs]


def _ms(duration: timedelta) -> str:
    return f"{duration.total_seconds() * 1000:+10.3f} ms"


async def main() -> None:
    print("Drift: final-tick lateness, naive sleep loop vs Punctual, side by side in real time")
    header = ("naive final", 16), ("punctual final", 18), ("punctual p50", 16), ("ratio", 10)
    print(f"{'scenario':<28}" + "".join(f"{title:>{width}}" for title, width in header))
    for scenario in SCENARIOS:
        naive_lateness, punctual_lateness = await asyncio.gather(
            naive(scenario), punctual(scenario)
        )
        final_naive, final_punctual = naive_lateness[-1], punctual_lateness[-1]
        median = statistics.median(punctual_lateness)
        ratio = final_naive / max(final_punctual, timedelta(microseconds=1))
        label = (
            f"{scenario.ticks} × {scenario.interval // timedelta(milliseconds=1)} ms, "
            f"{scenario.work // timedelta(milliseconds=1)} ms work"
        )
        print(
            f"{label:<28}{_ms(final_naive):>16}{_ms(final_punctual):>18}{_ms(median):>16}{ratio:>9.0f}×"
        )
    print(f"(measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC)")


if __name__ == "__main__":
    asyncio.run(main())
