"""``make bench-scale`` holds its rows against the targets: a target without its rows in the run
is not measured (never met), one with them is met only if every row is within its bound."""

from typing import Any

import pytest

from scale_targets import Verdict, summary, verdicts


def row(**fields: Any) -> dict[str, Any]:
    return {"jobs": 1_000, "every": "1s", "phase": "steady", "replicas": 1, "load1": 1.5} | fields


def verdict(rows: list[dict[str, Any]], starts: str, *, lock: str = "redis") -> Verdict:
    (found,) = [v for v in verdicts(rows, lock_backend=lock) if v.target.startswith(starts)]
    return found


def test_a_run_without_the_rows_of_a_target_has_it_not_measured() -> None:
    judged = verdicts([], lock_backend="redis")

    assert {v.met for v in judged} == {None}
    assert {v.measured for v in judged} == {"not measured"}


@pytest.mark.parametrize(
    ("lock", "one", "three", "met"),
    [
        ("redis", 0.6, 0.78, True),
        ("redis", 0.6, 0.79, False),
        ("kubernetes", 0.6, 0.9, True),
        ("kubernetes", 0.6, 0.91, False),
    ],
)
def test_the_fleets_cpu_is_held_against_one_replicas_on_the_same_jobs(
    lock: str, one: float, three: float, met: bool
) -> None:
    rows = [
        row(fleet_cpu_s_per_1k_runs=one),
        row(phase="replicas", replicas=3, fleet_cpu_s_per_1k_runs=three),
        row(jobs=100, phase="replicas", replicas=3, fleet_cpu_s_per_1k_runs=9.0),  # no pair
    ]

    judged = verdict(rows, "fleet CPU", lock=lock)

    assert judged.met is met
    assert judged.measured == f"1000: {three / one:.2f}×"
    assert judged.load == "1.5, 1.5"


@pytest.mark.parametrize(
    ("lock", "claims", "met"),
    [("redis", 1.05, True), ("redis", 1.06, False), ("kubernetes", 1.2, True)],
)
def test_claims_per_run_have_a_bound_per_lock_backend(lock: str, claims: float, met: bool) -> None:
    rows = [row(claims_per_run=1.0), row(phase="replicas", replicas=3, claims_per_run=claims)]

    assert verdict(rows, "claims per run", lock=lock).met is met


@pytest.mark.parametrize(
    ("steady", "restart", "met"), [(240.0, 250.0, True), (240.0, 251.0, False)]
)
def test_memory_at_ten_thousand_jobs_counts_after_a_restart_too(
    steady: float, restart: float, met: bool
) -> None:
    rows = [
        row(jobs=10_000, every="10s", rss_mb=steady),
        row(jobs=10_000, every="10s", phase="restart", rss_mb=restart),
    ]

    assert verdict(rows, "RSS ≤ 250 MB").met is met


def test_the_tail_at_ten_thousand_jobs_is_judged_only_on_its_own_schedule() -> None:
    rows = [
        row(jobs=10_000, every="1s", recv_p99_ms=900.0),
        row(jobs=10_000, every="10s", recv_p99_ms=49.0),
    ]

    assert verdict(rows, "p99 ≤ 50 ms").met is True


@pytest.mark.parametrize(
    ("fields", "met"),
    [
        ({"runs_per_s": 998.0, "recv_p99_ms": 62.0, "missing_slots": 0, "duplicates": 0}, True),
        ({"runs_per_s": 5.8, "recv_p99_ms": 62.0, "missing_slots": 0, "duplicates": 0}, False),
        ({"runs_per_s": 998.0, "recv_p99_ms": 101.0, "missing_slots": 0, "duplicates": 0}, False),
        ({"runs_per_s": 998.0, "recv_p99_ms": 62.0, "missing_slots": 1, "duplicates": 0}, False),
        ({"runs_per_s": 998.0, "recv_p99_ms": 62.0, "missing_slots": 0, "duplicates": 1}, False),
    ],
)
def test_a_thousand_runs_a_second_are_carried_on_time_without_a_miss_or_a_duplicate(
    fields: dict[str, Any], met: bool
) -> None:
    assert verdict([row(**fields)], "1,000 runs a second").met is met


def test_the_summary_is_a_line_per_target_with_the_load_beside_it() -> None:
    lines = summary(
        [
            Verdict(target="a", measured="1", met=True, load="2.0"),
            Verdict(target="bb", measured="not measured", met=None),
            Verdict(target="c", measured="3", met=False, load="4.1"),
        ]
    ).splitlines()

    assert lines == [
        "   met  a   1  (load 2.0)",
        "     -  bb  not measured",
        "MISSED  c   3  (load 4.1)",
    ]
