"""Cost of one next-slot computation for a cron schedule in a DST zone.

Punctual's cron schedule (croniter on naive local time, then the DST rules) against raw croniter
on aware datetimes (the common hand-written approach, which fires a daily 02:30 twice on a
fall-back night), side by side over the same slots.

Usage: python bench/next_slot.py [--slots 1000000] [--schedule '*/5 * * * *']
"""

import argparse
import time
from collections.abc import Callable
from datetime import UTC, datetime

from croniter import croniter

from punctual.scheduling import cron, zones

ZONE = "Europe/Copenhagen"
START = datetime(2026, 1, 1, tzinfo=UTC)


def punctual_slots(expression: str, count: int) -> Callable[[], datetime]:
    schedule = cron.parse(expression, zone=zones.parse(ZONE))

    def run() -> datetime:
        at = START
        for _ in range(count):
            at = schedule.next_after(at).at
        return at

    return run


def raw_croniter_slots(expression: str, count: int) -> Callable[[], datetime]:
    def run() -> datetime:
        iterator = croniter(expression, START.astimezone(zones.parse(ZONE)))
        at = START
        for _ in range(count):
            at = iterator.get_next(datetime)
        return at

    return run


def measure(label: str, run: Callable[[], datetime], count: int) -> float:
    print(f"  {label} ...", flush=True, end="")
    started = time.perf_counter()
    last = run()
    micros = (time.perf_counter() - started) / count * 1e6
    print(f" {micros:.1f} µs per slot (last slot {last:%Y-%m-%d %H:%M})")
    return micros


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--slots", type=int, default=1_000_000)
    parser.add_argument("--schedule", default="*/5 * * * *")
    arguments = parser.parse_args()
    print(f"Next-slot cost: {arguments.schedule!r} in {ZONE}, {arguments.slots:,} slots each")
    ours = measure("punctual", punctual_slots(arguments.schedule, arguments.slots), arguments.slots)
    raw = measure(
        "raw croniter (aware)",
        raw_croniter_slots(arguments.schedule, arguments.slots),
        arguments.slots,
    )
    print(f"{'':<2}punctual / raw croniter: {ours / raw:.2f}×")


if __name__ == "__main__":
    main()
