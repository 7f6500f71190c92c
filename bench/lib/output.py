"""Progress lines, each with the time, the seconds since the benchmark started and the machine's
load: the machine may be shared, and every figure is read beside its load."""

import os
import sys
import time

_started = time.monotonic()


def load() -> str:
    """The machine's load averages and its cores, to print beside every figure."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def say(message: str) -> None:
    """A progress line on stderr (the figures go to stdout)."""
    elapsed = time.monotonic() - _started
    stamp = time.strftime("%H:%M:%S")
    print(
        f"[{stamp} +{elapsed:.1f}s load {os.getloadavg()[0]:.2f}] {message}",
        file=sys.stderr,
        flush=True,
    )
