"""What the benchmarks observe the same way: the operator's Prometheus metrics as samples (and a
histogram's quantile, as PromQL computes it), a process's CPU time and memory, and the calls a
receiver of its own process got (``bench/scale_receiver.py``), each with its lateness."""

import collections
import math
import os
import sys
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from localcluster import ports, processes

BENCH = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse_metrics(text: str) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def total(samples: Samples, name: str, **labels: str) -> float:
    wanted = set(labels.items())
    return sum(
        value
        for (sample, sample_labels), value in samples.items()
        if sample == name and wanted <= set(sample_labels)
    )


def buckets(samples: Samples, name: str) -> dict[float, float]:
    found: dict[float, float] = {}
    for (sample, labels), value in samples.items():
        if sample == f"{name}_bucket":
            found[float(dict(labels)["le"])] = value
    return found


def histogram_quantile(quantile: float, cumulative: Mapping[float, float]) -> float:
    """Like PromQL's ``histogram_quantile``: linear inside the bucket, in the bounds' unit."""
    bounds = sorted(cumulative)
    if not bounds or cumulative[bounds[-1]] <= 0:
        return math.nan
    rank = quantile * cumulative[bounds[-1]]
    lower, below = 0.0, 0.0
    for bound in bounds:
        count = cumulative[bound]
        if count >= rank:
            if math.isinf(bound):
                return lower
            inside = count - below
            return lower + (bound - lower) * ((rank - below) / inside if inside else 0.0)
        lower, below = bound, count
    return lower


def highest_bucket(cumulative: Mapping[float, float]) -> float:
    """The upper bound of the highest bucket with observations (the histogram's "max")."""
    previous = 0.0
    highest = math.nan
    for bound in sorted(cumulative):
        if cumulative[bound] > previous:
            highest = bound
        previous = cumulative[bound]
    return highest


def proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def proc_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


def main_thread_cpu_ms(pid: int) -> tuple[float, float]:
    """Milliseconds the main thread of ``pid`` (a replica's event loop) has run on a CPU, and
    has waited for one while it could have run (the kernel's schedstat): the second is the
    time the loop lost to the machine's other processes."""
    ran, waited, _ = Path(f"/proc/{pid}/schedstat").read_text().split()
    return int(ran) / 1e6, int(waited) / 1e6


@dataclass(frozen=True, slots=True)
class Call:
    arrived_ns: int
    scheduled_ns: int
    key: str

    @property
    def lateness_ms(self) -> float:
        return (self.arrived_ns - self.scheduled_ns) / 1e6


def _rfc3339_ns(text: str) -> int:
    instant = datetime.fromisoformat(text)
    return (instant - EPOCH) // timedelta(microseconds=1) * 1000


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class ReceiverProcess:
    """``bench/scale_receiver.py`` in a process of its own; every call it ever got, by key."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.port = ports.free_port()
        self.seen: collections.Counter[str] = collections.Counter()
        self._dumps = 0
        ready = run_dir / "receiver.ready"
        self.process = processes.start(
            "receiver",
            [
                sys.executable,
                str(BENCH / "scale_receiver.py"),
                "--port",
                str(self.port),
                "--ready-file",
                str(ready),
            ],
            run_dir,
        )
        processes.wait_until(self.process, ready.exists, "the receiver listens", 30)

    def url(self, path: str) -> str:
        return f"http://{ports.LOOPBACK}:{self.port}{path}"

    def dump(self, label: str) -> list[Call]:
        """The calls since the previous dump (also kept under ``run_dir``)."""
        self._dumps += 1
        path = self.run_dir / f"calls-{self._dumps:02d}-{label}.csv"
        with urllib.request.urlopen(self.url(f"/__dump?path={path}"), timeout=120) as reply:
            reply.read()
        calls = []
        with path.open() as rows:
            for row in rows:
                arrived, scheduled, key = row.rstrip("\n").split(",", 2)
                calls.append(Call(int(arrived), _rfc3339_ns(scheduled), key))
        self.seen.update(call.key for call in calls)
        return calls

    def stop(self) -> None:
        self.process.stop(grace=5)
