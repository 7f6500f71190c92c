"""The targets ``make bench-scale``'s rows are held against, as one screen after its table.

A run measures only the job counts and phases it was asked for: a target whose rows are not in
it says so ("not measured") instead of passing. Each verdict carries the load average of the
rows it was judged on, since the machine is shared and every figure depends on it.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Row = Mapping[str, Any]

CLAIMS_PER_RUN = {"redis": 1.05, "kubernetes": 1.2}
"""The most claims per run (won or lost, every replica's), per lock backend."""
FLEET_CPU_RATIO = {"redis": 1.3, "kubernetes": 1.5}
"""The most CPU per 1,000 runs of a fleet of replicas, against one replica's on the same jobs."""
CARRIED = 0.99
"""The share of 1,000 runs a second a window must count to have carried them: its edges cut a
few runs off."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    target: str
    measured: str
    """The figures judged, or ``not measured``."""
    met: bool | None
    """``None``: not measured in this run."""
    load: str = ""


def verdicts(rows: Sequence[Row], *, lock_backend: str) -> list[Verdict]:
    """Every target, judged on the rows of one run with ``lock_backend``."""
    return [
        _fleet_cpu(rows, lock_backend=lock_backend),
        _each(
            f"claims per run ≤ {CLAIMS_PER_RUN[lock_backend]} ({lock_backend} lock)",
            [r for r in rows if r.get("phase") in {"steady", "replicas"}],
            key="claims_per_run",
            bound=CLAIMS_PER_RUN[lock_backend],
        ),
        _each(
            "RSS ≤ 250 MB at 10,000 jobs, one replica, also after a restart",
            _rows(rows, jobs=10_000, phases={"steady", "restart"}, replicas=1),
            key="rss_mb",
            bound=250,
        ),
        _each(
            "no replica over 400 MB in a 30,000-job fleet of 3",
            _rows(rows, jobs=30_000, phases={"replicas"}, replicas=3),
            key="rss_mb",
            bound=400,
        ),
        _each(
            "p99 ≤ 50 ms at 10,000 jobs every 10s, one replica",
            _rows(rows, jobs=10_000, every="10s", phases={"steady"}, replicas=1),
            key="recv_p99_ms",
            bound=50,
        ),
        _each(
            "p99 ≤ 100 ms at 30,000 jobs every 30s, 3 replicas",
            _rows(rows, jobs=30_000, every="30s", phases={"replicas"}, replicas=3),
            key="recv_p99_ms",
            bound=100,
        ),
        _thousand_a_second(rows, lock_backend=lock_backend),
    ]


def summary(judged: Sequence[Verdict]) -> str:
    marks = {True: "met", False: "MISSED", None: "-"}
    width = max(len(verdict.target) for verdict in judged)
    return "\n".join(
        f"{marks[verdict.met]:>6}  {verdict.target.ljust(width)}  {verdict.measured}"
        + (f"  (load {verdict.load})" if verdict.load else "")
        for verdict in judged
    )


def _rows(
    rows: Sequence[Row],
    *,
    jobs: int,
    phases: set[str],
    replicas: int,
    every: str | None = None,
) -> list[Row]:
    return [
        row
        for row in rows
        if row.get("jobs") == jobs
        and row.get("phase") in phases
        and row.get("replicas") == replicas
        and (every is None or row.get("every") == every)
    ]


def _load(rows: Sequence[Row]) -> str:
    return ", ".join(str(row["load1"]) for row in rows if "load1" in row)


def _judged(target: str, rows: Sequence[Row], measured: str, *, met: Callable[[], bool]) -> Verdict:
    if not rows:
        return Verdict(target=target, measured="not measured", met=None)
    return Verdict(target=target, measured=measured, met=met(), load=_load(rows))


def _each(target: str, rows: Sequence[Row], *, key: str, bound: float) -> Verdict:
    """Met when every row's ``key`` is at most ``bound``."""
    chosen = [row for row in rows if row.get(key) is not None]
    figures = ", ".join(f"{row['jobs']} {row['phase']}: {row[key]}" for row in chosen)
    return _judged(target, chosen, figures, met=lambda: all(r[key] <= bound for r in chosen))


def _fleet_cpu(rows: Sequence[Row], *, lock_backend: str) -> Verdict:
    bound = FLEET_CPU_RATIO[lock_backend]
    target = f"fleet CPU per 1,000 runs, 3 replicas ≤ {bound}× one's ({lock_backend} lock)"
    pairs = [
        (one, fleet)
        for fleet in rows
        if fleet.get("phase") == "replicas" and fleet.get("fleet_cpu_s_per_1k_runs")
        for one in _rows(rows, jobs=fleet["jobs"], phases={"steady"}, replicas=1)
        if one.get("every") == fleet.get("every") and one.get("fleet_cpu_s_per_1k_runs")
    ]
    ratios = [
        (one["jobs"], fleet["fleet_cpu_s_per_1k_runs"] / one["fleet_cpu_s_per_1k_runs"])
        for one, fleet in pairs
    ]
    figures = ", ".join(f"{jobs}: {ratio:.2f}×" for jobs, ratio in ratios)
    return _judged(
        target,
        [row for pair in pairs for row in pair],
        figures,
        met=lambda: all(ratio <= bound for _, ratio in ratios),
    )


def _thousand_a_second(rows: Sequence[Row], *, lock_backend: str) -> Verdict:
    chosen = [
        row
        for row in rows
        if row.get("jobs") == 1_000
        and row.get("every") == "1s"
        and row.get("phase") in {"steady", "replicas"}
    ]
    figures = ", ".join(
        f"{row['replicas']} replica(s): {row.get('runs_per_s')} runs/s, p99 "
        f"{row.get('recv_p99_ms')} ms, {row.get('missing_slots')} missed, "
        f"{row.get('duplicates')} duplicates"
        for row in chosen
    )
    return _judged(
        f"1,000 runs a second at p99 ≤ 100 ms, 0 missed, 0 duplicates ({lock_backend} lock)",
        chosen,
        figures,
        met=lambda: all(
            row.get("runs_per_s", 0) >= CARRIED * 1_000
            and row.get("recv_p99_ms", float("inf")) <= 100
            and row.get("missing_slots") == 0
            and row.get("duplicates") == 0
            for row in chosen
        ),
    )
