"""``bench/compare.py`` (``make compare``) in its smallest useful form: N=2, M=2; and the
suite's real-node and capability parts (``--suite workload,http,express``) at N=2, one slot,
the warm rows with them.

It starts a control plane, Redis and the operator of its own, so this test needs none of the
session's fixtures; it takes three to four minutes (it waits for whole minutes).
"""

import csv
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPARE = REPO_ROOT / "bench" / "compare.py"
SYSTEMS = {"CronJob", "Punctual Job", "Punctual queue"}


@pytest.mark.timeout(900)
def test_a_small_comparison_prints_its_table_and_writes_csv_and_png(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(COMPARE), "-n", "2", "-m", "2", "--results-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=840,
        cwd=REPO_ROOT,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output

    assert "minute 1/2" in output
    assert "minute 2/2" in output
    assert "system" in output
    assert "p99" in output
    [results] = tmp_path.iterdir()
    assert (results / "table.txt").read_text().startswith("lateness in ms")
    with (results / "summary.csv").open() as handle:
        summary = list(csv.DictReader(handle))
    assert {row["system"] for row in summary} == SYSTEMS
    for row in summary:
        if row["measure"] in ("Job created (watch)", "entry id time"):
            assert int(row["n"]) == 4, row  # 2 objects x 2 slots
            assert int(row["duplicates"]) == 0, row
            assert int(row["misses"]) == 0, row
    with (results / "samples.csv").open() as handle:
        samples = list(csv.DictReader(handle))
    assert {sample["system"] for sample in samples} == SYSTEMS
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib is not installed yet: no lateness.png to check")
    assert (results / "lateness.png").stat().st_size > 0


@pytest.mark.real_node
@pytest.mark.timeout(900)
def test_the_suites_workload_http_and_express_parts_run_at_a_tiny_size(tmp_path: Path) -> None:
    # Parts 1, 2 and 5 of the suite on a real node: 2 objects per system, 1 slot.
    result = subprocess.run(
        [sys.executable, str(COMPARE), "--suite", "workload,http,express", "-m", "1",
         "--node-n", "2", "--results-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=840, cwd=REPO_ROOT, check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output

    [results] = tmp_path.iterdir()
    with (results / "summary.csv").open() as handle:
        summary = {
            (row["part"], row["system"], row["measure"]): row for row in csv.DictReader(handle)
        }
    for key in (
        ("workload", "CronJob", "workload started (its call)"),
        ("workload", "Punctual Job", "workload started (its call)"),
        ("workload", "Punctual Job, warm (Exec)", "workload started (its call)"),
        ("workload", "Punctual Job, warm (Exec)", "gate released (its lateMs)"),
        ("workload", "Punctual Job, warm (Init)", "workload started (its call)"),
        ("workload", "Punctual Job, warm (Init)", "gate released (its lateMs)"),
        ("http", "CronJob", "request at the receiver"),
        ("http", "Punctual HTTP", "request at the receiver"),
    ):
        row = summary[key]
        assert (row["n"], row["duplicates"], row["misses"]) == ("2", "0", "0"), row
    text = (results / "table.txt").read_text()
    assert "[workload] workload start p99: CronJob" in text
    assert "[workload] workload start p99, warm (Exec): CronJob" in text
    assert "[http] request at the receiver p99: CronJob" in text
    with (results / "capabilities.csv").open() as handle:
        capabilities = list(csv.DictReader(handle))
    assert [row["what"].split()[0] for row in capabilities] == [
        "every", "DST", "repeated", "jitter", "slots",
    ]  # fmt: skip
    assert "ShiftedForward" in capabilities[1]["Punctual"]
    assert "SecondOfRepeated" in capabilities[2]["Punctual"]
