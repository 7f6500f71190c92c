"""Measuring whole minutes of slots, and the results every part adds to."""

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from comparing.figures import (
    Phase,
    Row,
    Sample,
    collect,
    run_starts,
    summarize,
)
from comparing.observing import (
    Observations,
    Observers,
    wall,
)
from comparing.systems import (
    CRONJOB,
    HTTP,
    LEAD,
    MINUTE,
    QUEUE,
    SETTLE,
)
from lib.output import load, say
from localcluster import LocalCluster, processes

# -- the run ---------------------------------------------------------------------------------


def measured_slots(armed_at: datetime, minutes: int, *, ahead: timedelta = LEAD) -> list[datetime]:
    """The next ``minutes`` slots at least ``ahead`` after ``armed_at``."""
    first = (armed_at + ahead).replace(second=0, microsecond=0) + MINUTE
    return [first + k * MINUTE for k in range(minutes)]


def sleep_until(moment: datetime, *, watched: Sequence[processes.ManagedProcess] = ()) -> None:
    while (left := (moment - wall()).total_seconds()) > 0:
        for process in watched:
            if not process.running():
                raise processes.ComponentError(process, "exited during the run")
        time.sleep(min(1.0, left))


def progress(seen: Observations, phase: Phase, slot: datetime, index: int) -> None:
    with seen.lock:
        owners = Counter(
            job["owner"]
            for (namespace, _), job in seen.jobs.items()
            if namespace == phase.namespace
            and job["scheduled"]
            and slot <= job["scheduled"] < slot + MINUTE
        )
        entries = [
            e
            for e in seen.entries
            if e["job"].startswith(phase.namespace + "/") and slot <= e["scheduled"] < slot + MINUTE
        ]
        calls = [
            a
            for a in seen.arrivals
            if a["path"].startswith(f"/http/{phase.namespace}/")
            and a["scheduled"]
            and slot <= a["scheduled"] < slot + MINUTE
        ]
    counts = []
    for system, names in phase.owners.items():
        done = (
            len(entries)
            if system == QUEUE
            else len(calls)
            if system == HTTP
            else sum(1 for name in names if owners[name])
        )
        counts.append(f"{system} {done}/{len(names)}")
    say(
        f"{phase.part} {phase.scenario} minute {index}/{len(phase.slots)} (slot {slot:%H:%M:%S}): "
        + ", ".join(counts)
    )


def measure(
    observers: Observers,
    phase: Phase,
    watched: Sequence[processes.ManagedProcess],
    *,
    settle: timedelta = SETTLE,
    after_each_slot: Callable[[], None] | None = None,
) -> None:
    for index, slot in enumerate(phase.slots, start=1):
        sleep_until(slot + settle, watched=watched)
        if after_each_slot is not None:
            after_each_slot()
        progress(observers.seen, phase, slot, index)


@dataclass
class Results:
    samples: list[Sample] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    """Further tables (outage, capabilities), printed after the lateness table."""
    outage: list[list[Any]] = field(default_factory=list)
    capabilities: list[list[str]] = field(default_factory=list)
    loads: list[str] = field(default_factory=list)
    """The machine's load as each phase ended: it is shared."""

    def add_phase(
        self, cluster: LocalCluster, seen: Observations, phase: Phase, measures: Any
    ) -> None:
        self.loads.append(f"{phase.part} {phase.scenario}: {load()}".replace("  ", " "))
        samples, tallies = collect(seen, phase)
        if any(system != CRONJOB for system in phase.owners):
            samples += run_starts(cluster, phase)
        self.samples += samples
        self.rows += summarize(
            samples,
            tallies,
            {system: measures[system] for system in phase.owners},
            part=phase.part,
            scenario=phase.scenario,
            window=phase.window,
        )
