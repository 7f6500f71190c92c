"""From what was observed to samples, rows, tables, CSV and plots."""

import csv
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from comparing.observing import (
    Observations,
    parse_time,
)
from comparing.systems import (
    AT_GATE,
    AT_RECEIVER,
    CRONJOB,
    ENTRY_ID,
    ENTRY_READ,
    GATE_RELEASED,
    HTTP,
    JOB_CREATED,
    JOB_WATCH,
    POD_RUNNING,
    POD_START,
    PUNCTUAL,
    QUEUE,
    RUN_STARTED,
    WARM_EXEC,
    WARM_INIT,
    WARM_MODES,
    WORKLOAD_STARTED,
)
from lib import plotting
from lib.statistics import percentile
from localcluster import LocalCluster

# -- figures ---------------------------------------------------------------------------------


@dataclass
class Sample:
    system: str
    measure: str
    obj: str
    slot: datetime
    lateness_ms: float
    part: str = "basic"
    scenario: str = ""


@dataclass
class Tally:
    duplicates: int = 0
    misses: int = 0
    expected: int = 0


def millis(delta: timedelta) -> float:
    return delta / timedelta(milliseconds=1)


@dataclass(frozen=True)
class Phase:
    """One measurement: objects of one namespace, the systems they belong to, the slots."""

    part: str
    scenario: str
    namespace: str
    owners: dict[str, list[str]]
    """System → its objects' names."""
    slots: list[datetime]
    window: timedelta | None = None
    """Scale: a Job not seen this long after its slot is a miss, and counts in the
    percentiles of Job creation as later than that (so a p99 may read ">90s")."""


class _Collection:
    """One phase's samples and per-slot counts, built from what the observers saw."""

    def __init__(self, phase: Phase) -> None:
        self.phase = phase
        self.window = set(phase.slots)
        self.system_of = {name: system for system, names in phase.owners.items() for name in names}
        self.samples: list[Sample] = []
        self.per_slot: dict[str, Counter[tuple[str, datetime]]] = defaultdict(Counter)

    def add(self, system: str, measure: str, owner: str, slot: datetime, late: timedelta) -> None:
        phase = self.phase
        self.samples.append(
            Sample(system, measure, owner, slot, millis(late), phase.part, phase.scenario)
        )

    def arrivals(self, arrivals: Sequence[dict[str, Any]]) -> dict[tuple[str, str], datetime]:
        """The HTTP target's calls; returns when each Job's container called (its first call)."""
        started: dict[tuple[str, str], datetime] = {}
        for arrival in arrivals:
            parts = arrival["path"].strip("/").split("/")
            if len(parts) == 3 and parts[0] == "started":
                started.setdefault((parts[1], parts[2]), arrival["arrived"])
            elif len(parts) == 3 and parts[0] == "http" and parts[1] == self.phase.namespace:
                system, scheduled = self.system_of.get(parts[2]), arrival["scheduled"]
                if system is None or scheduled is None:
                    continue
                slot = scheduled.replace(second=0, microsecond=0)
                if slot in self.window:
                    self.per_slot[system][(parts[2], slot)] += 1
                    self.add(system, AT_RECEIVER, parts[2], slot, arrival["arrived"] - scheduled)
        return started

    def job(
        self,
        job: dict[str, Any],
        pod: dict[str, Any] | None,
        started: Any,
        gate_late_ms: int | None = None,
    ) -> None:
        scheduled, owner = job["scheduled"], job["owner"]
        system = self.system_of.get(owner)
        if scheduled is None or system is None:
            return
        slot = scheduled.replace(second=0, microsecond=0)  # no jitter: the minute itself
        if slot not in self.window:
            return
        self.per_slot[system][(owner, slot)] += 1
        self.add(system, JOB_WATCH, owner, slot, job["observed"] - scheduled)
        if job["created"] is not None:
            self.add(system, JOB_CREATED, owner, slot, job["created"] - scheduled)
        if pod is not None and pod["at_gate"] is not None:
            self.add(system, AT_GATE, owner, slot, pod["at_gate"] - scheduled)
        if pod is not None and pod["running"] is not None:
            self.add(system, POD_RUNNING, owner, slot, pod["running"] - scheduled)
            if pod["start_time"] is not None:
                self.add(system, POD_START, owner, slot, pod["start_time"] - scheduled)
        if gate_late_ms is not None:
            self.add(system, GATE_RELEASED, owner, slot, timedelta(milliseconds=gate_late_ms))
        if started is not None:
            self.add(system, WORKLOAD_STARTED, owner, slot, started - scheduled)
            if HTTP in self.phase.owners and system == CRONJOB:  # "call my service": its call
                self.add(system, AT_RECEIVER, owner, slot, started - scheduled)

    def entry(self, entry: dict[str, Any]) -> None:
        slot = entry["scheduled"].replace(second=0, microsecond=0)
        namespace, _, owner = entry["job"].partition("/")
        if slot not in self.window or namespace != self.phase.namespace:
            return
        if owner not in self.system_of:
            return
        self.per_slot[QUEUE][(owner, slot)] += 1
        scheduled = entry["scheduled"]
        self.add(QUEUE, ENTRY_ID, owner, slot, entry["id_time"] - scheduled)
        self.add(QUEUE, ENTRY_READ, owner, slot, entry["read"] - scheduled)

    def tallies(self) -> dict[str, Tally]:
        tallies = {}
        for system, names in self.phase.owners.items():
            seen_slots = self.per_slot[system]
            expected = [(owner, slot) for owner in names for slot in self.phase.slots]
            tallies[system] = Tally(
                duplicates=sum(max(0, n - 1) for n in seen_slots.values()),
                misses=sum(1 for key in expected if seen_slots[key] == 0),
                expected=len(expected),
            )
        return tallies


def collect(seen: Observations, phase: Phase) -> tuple[list[Sample], dict[str, Tally]]:
    with seen.lock:
        jobs, pods, gates = dict(seen.jobs), dict(seen.pods), dict(seen.gates)
        entries, arrivals = list(seen.entries), list(seen.arrivals)
    collection = _Collection(phase)
    started = collection.arrivals(arrivals)
    for key, job in jobs.items():
        if key[0] == phase.namespace:
            collection.job(job, pods.get(key), started.get(key), gates.get(key))
    for entry in entries:
        collection.entry(entry)
    return collection.samples, collection.tallies()


def run_starts(cluster: LocalCluster, phase: Phase) -> list[Sample]:
    """``latenessMillis`` of the runs in the ScheduledJobs' status (runs of the window)."""
    window = set(phase.slots)
    listing = cluster.api.get(
        f"/apis/punctual.dev/v1alpha1/namespaces/{phase.namespace}/scheduledjobs"
    )
    system_of = {name: system for system, names in phase.owners.items() for name in names}
    samples = []
    for item in listing["items"]:
        name = item["metadata"]["name"]
        for run in (item.get("status") or {}).get("recentRuns") or []:
            slot = parse_time(run["slot"])
            if slot in window and "latenessMillis" in run and name in system_of:
                samples.append(
                    Sample(
                        system_of[name],
                        RUN_STARTED,
                        name,
                        slot,
                        run["latenessMillis"],
                        phase.part,
                        phase.scenario,
                    )
                )
    return samples


@dataclass
class Row:
    system: str
    measure: str
    n: int
    p50: float
    p95: float
    p99: float
    max: float
    duplicates: int
    misses: int
    part: str = "basic"
    scenario: str = ""
    window_s: float | None = None


def summarize(
    samples: Sequence[Sample],
    tallies: dict[str, Tally],
    measures: dict[str, Sequence[str]],
    *,
    part: str = "basic",
    scenario: str = "",
    window: timedelta | None = None,
) -> list[Row]:
    rows = []
    for system, names in measures.items():
        for measure in names:
            values = [
                s.lateness_ms
                for s in samples
                if (s.system, s.measure, s.part, s.scenario) == (system, measure, part, scenario)
            ]
            seen = len(values)
            if window is not None and measure == JOB_WATCH:
                values += [math.inf] * tallies[system].misses  # later than the window
            values.sort()
            rows.append(
                Row(
                    system=system,
                    measure=measure,
                    n=seen,
                    p50=percentile(values, 0.50),
                    p95=percentile(values, 0.95),
                    p99=percentile(values, 0.99),
                    max=values[-1] if values else math.nan,
                    duplicates=tallies[system].duplicates,
                    misses=tallies[system].misses,
                    part=part,
                    scenario=scenario,
                    window_s=window.total_seconds() if window is not None else None,
                )
            )
    return rows


def _ms(value: float, window_s: float | None = None) -> str:
    if math.isnan(value):
        return "-"
    if math.isinf(value):
        return f">{window_s:.0f}s"  # the unit is in the cell: it is not ms
    return f"{value:.1f}" if abs(value) < 100 else f"{value:.0f}"


RATIOS = (
    (CRONJOB, PUNCTUAL, JOB_WATCH, "Job creation p99 (watch)"),
    (CRONJOB, PUNCTUAL, WORKLOAD_STARTED, "workload start p99"),
    (CRONJOB, WARM_EXEC, WORKLOAD_STARTED, "workload start p99, warm (Exec)"),
    (CRONJOB, WARM_INIT, WORKLOAD_STARTED, "workload start p99, warm (Init)"),
    (CRONJOB, HTTP, AT_RECEIVER, "request at the receiver p99"),
)


def ratio_lines(rows: Sequence[Row]) -> list[str]:
    """CronJob's p99 over Punctual's, per part and scenario, where both were measured."""
    by_key = {(row.part, row.scenario, row.system, row.measure): row for row in rows}
    lines = []
    for part, scenario in dict.fromkeys((row.part, row.scenario) for row in rows):
        # Scale: each system alone is set against the other alone at the same N.
        their_scenario = scenario.replace("Punctual alone", "CronJob alone")
        for cron_system, our_system, measure, label in RATIOS:
            cron = by_key.get((part, their_scenario, cron_system, measure))
            ours = by_key.get((part, scenario, our_system, measure))
            if cron is None or ours is None or math.isnan(cron.p99) or math.isnan(ours.p99):
                continue
            where = f"[{part} {scenario.replace('Punctual alone', 'each alone')}] "
            where = where.replace(" ]", "]") if part != "basic" else ""
            factor = f"{cron.p99 / ours.p99:.1f}x lower" if ours.p99 > 0 else "n/a"
            if math.isinf(cron.p99) and cron.window_s and 0 < ours.p99 < math.inf:
                factor = f"more than {cron.window_s * 1000 / ours.p99:.0f}x lower"
            cron_p99, our_p99 = (
                _ms(row.p99, row.window_s) + ("" if math.isinf(row.p99) else " ms")
                for row in (cron, ours)
            )
            lines.append(f"{where}{label}: CronJob {cron_p99}, Punctual {our_p99}: {factor}")
    return lines


def table(rows: Sequence[Row], *, header: str) -> str:
    lines = [header]
    grouped = dict.fromkeys((row.part, row.scenario) for row in rows)
    width = max([15, *(len(row.system) for row in rows)])
    for part, scenario in grouped:
        if part != "basic":
            lines.append(f"-- {part}{': ' + scenario if scenario else ''}")
        lines.append(
            f"{'system':<{width}} {'measure':<32} {'n':>5} {'p50':>8} {'p95':>8} {'p99':>8} "
            f"{'max':>8} {'dup':>4} {'miss':>4}"
        )
        for row in rows:
            if (row.part, row.scenario) == (part, scenario):
                lines.append(
                    f"{row.system:<{width}} {row.measure:<32} {row.n:>5} "
                    f"{_ms(row.p50, row.window_s):>8} {_ms(row.p95, row.window_s):>8} "
                    f"{_ms(row.p99, row.window_s):>8} {_ms(row.max, row.window_s):>8} "
                    f"{row.duplicates:>4} {row.misses:>4}"
                )
    lines.extend(ratio_lines(rows))
    windows = {row.window_s for row in rows if row.window_s is not None}
    for window_s in sorted(windows):
        lines.append(
            f"scale: n counts the Jobs seen; a slot without a Job {window_s:.0f} s after it is a "
            f"miss, and counts as >{window_s:.0f}s in the Job creation (watch) percentiles."
        )
    lines.append(
        "creationTimestamp and startTime have whole-second resolution (rounded down); the "
        "watch-observed times include the watch's delivery, the same for both systems."
    )
    if any(row.system in WARM_MODES for row in rows):
        lines.append(
            "warm: the Job and its pod are made ahead of the slot (negative lateness); the "
            "gate's lateMs is its own clock reading as it released, from its log line."
        )
    return "\n".join(lines)


def write_csv(directory: Path, samples: Sequence[Sample], rows: Sequence[Row]) -> None:
    with (directory / "samples.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["part", "scenario", "system", "measure", "object", "slot", "lateness_ms"])
        for s in samples:
            writer.writerow(
                [
                    s.part,
                    s.scenario,
                    s.system,
                    s.measure,
                    s.obj,
                    s.slot.isoformat(),
                    f"{s.lateness_ms:.3f}",
                ]
            )
    with (directory / "summary.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "part",
                "scenario",
                "system",
                "measure",
                "n",
                "p50_ms",
                "p95_ms",
                "p99_ms",
                "max_ms",
                "duplicates",
                "misses",
            ]
        )
        for r in rows:
            writer.writerow(
                [
                    r.part,
                    r.scenario,
                    r.system,
                    r.measure,
                    r.n,
                    r.p50,
                    r.p95,
                    r.p99,
                    r.max,
                    r.duplicates,
                    r.misses,
                ]
            )


def write_table(directory: Path, name: str, header: Sequence[str], lines: Sequence[Any]) -> None:
    with (directory / name).open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(lines)


PLOTTED = (
    JOB_WATCH,
    POD_RUNNING,
    GATE_RELEASED,
    WORKLOAD_STARTED,
    AT_RECEIVER,
    ENTRY_ID,
    RUN_STARTED,
)
"""The measures in the box plot (whole seconds say nothing in a box at 0), those of a row
whose median is after the slot: a warm Job made ahead has no place on a log scale of lateness."""
HISTOGRAM = (
    (CRONJOB, JOB_WATCH),
    (PUNCTUAL, JOB_WATCH),
    (QUEUE, ENTRY_ID),
    (CRONJOB, WORKLOAD_STARTED),
    (PUNCTUAL, WORKLOAD_STARTED),
    (WARM_INIT, WORKLOAD_STARTED),
    (WARM_EXEC, WORKLOAD_STARTED),
    (HTTP, AT_RECEIVER),
)


def plot(
    directory: Path, samples: Sequence[Sample], rows: Sequence[Row], title: str
) -> Path | None:
    """Box plots of every distribution side by side (log scale); None without matplotlib."""
    plt = plotting.pyplot()
    if plt is None:
        return None
    by_group: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for s in samples:
        by_group[(s.part, s.scenario, s.system, s.measure)].append(max(s.lateness_ms, 0.1))
    groups = [
        (row.part, row.scenario, row.system, row.measure)
        for row in rows
        if row.measure in PLOTTED and row.n and row.p50 > 0
    ]
    data = [by_group[group] for group in groups]
    figure, (boxes, hist) = plt.subplots(
        1, 2, figsize=(max(15, 0.45 * len(groups) + 7), 7), width_ratios=(max(2, len(groups)), 8)
    )
    boxes.boxplot(data, orientation="vertical", whis=(1, 99), showfliers=True)
    labels = [f"{'' if p == 'basic' else p + ' ' + sc + chr(10)}{s}\n{m}" for p, sc, s, m in groups]
    boxes.set_xticks(range(1, len(groups) + 1), labels, rotation=60, ha="right", fontsize=7)
    boxes.set_yscale("log")
    boxes.set_ylabel("lateness (ms, log scale; whiskers p1-p99)")
    boxes.set_title("lateness against the scheduled time")
    # The headline distributions, pooled over the scenarios they were measured in.
    # A slot measured for two parts (the CronJobs of workload and http) counts once.
    unique = {(s.system, s.measure, s.obj, s.slot, s.scenario): s for s in samples}.values()
    shown = {
        pair: [max(s.lateness_ms, 0.1) for s in unique if (s.system, s.measure) == pair]
        for pair in HISTOGRAM
    }
    shown = {pair: values for pair, values in shown.items() if values}
    every_value = [value for values in shown.values() for value in values] or [1.0]
    low = math.floor(10 * math.log10(min(every_value)))
    high = math.ceil(10 * math.log10(max(every_value))) + 1
    bins = [10 ** (k / 10) for k in range(low, high + 1)]  # ten bins per decade
    for (system, measure), values in shown.items():
        hist.hist(values, bins=bins, alpha=0.5, label=f"{system}: {measure}")
    hist.set_xscale("log")
    hist.set_xlabel("lateness (ms, log scale)")
    hist.set_ylabel("slots")
    hist.legend(fontsize=8)
    hist.set_title("Job creation, workload start and HTTP lateness (all scenarios)")
    figure.suptitle(title)
    figure.tight_layout()
    path = directory / "lateness.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
