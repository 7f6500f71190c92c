"""Punctual against Kubernetes' own CronJob controller, on one local control plane.

Without ``--suite`` (the quick comparison): starts a LocalCluster (etcd, kube-apiserver,
kube-controller-manager with its CronJob and Job controllers, kube-scheduler, kwok's fake node)
and a LocalRedis, then the operator as a subprocess (``punctual run --lock-backend redis``), and
creates in one namespace:

- N CronJobs ``cron-XX`` (``*/1 * * * *``, concurrencyPolicy Forbid) and
- N ScheduledJobs ``sj-XX`` with the same schedule, policy and Job template (kwok runs the pod
  and completes it at once), and
- N ScheduledJobs ``q-XX`` (``every: 1m``) with the queue target (one shared stream).

Once everything is armed it measures M whole minutes. Observers in this process (a watch of
Jobs, a watch of pods, an XREAD BLOCK consumer, an HTTP receiver) stamp everything with the wall
clock as it arrives. Per slot and object:

- Job creation lateness: watch-observed time, and ``metadata.creationTimestamp`` (whole
  seconds), minus the scheduled time (CronJob's ``batch.kubernetes.io/cronjob-scheduled-
  timestamp``, Punctual's ``punctual.dev/scheduled-time``);
- pod start lateness: the watch-observed Running transition, and ``status.startTime`` (whole
  seconds), minus the scheduled time;
- queue lateness: the stream entry id's time, and the consumer's receipt, minus ``scheduledTime``;
- duplicates (more than one Job or entry for an object's slot) and misses (none).

``--suite [PARTS]`` runs the comparison users would run before switching, part by part
(comma-separated, all by default):

- ``workload``: on a real node (containerd, the kubelet), N CronJobs and 3 x N ScheduledJobs
  with the same Job template (``target.job``): cold (the Job created at the slot), warm with
  ``Exec`` and warm with ``Init`` (``warmStart``: the Job created ``--warm-lead`` ahead, the
  gate releasing the container at the slot). The workload image calls the receiver the moment
  its container starts, with its Job's name in the path: "workload started" beside "Job
  created (watch)" and "pod Running", and for the warm ones the gate's own lateness from its
  log line and when the pod was waiting at its gate;
- ``http``: "call my service on schedule": the same CronJobs (their container calls the
  receiver) against N ScheduledJobs with the HTTP target calling the same receiver; lateness at
  the receiver;
- ``stress``: the real node's objects measured M more minutes with one core kept busy;
- ``scale``: per N of ``--scale-sizes`` (20, 200, 1000) per-minute objects on a kwok node: the
  CronJobs alone, the ScheduledJobs alone, both together, one slot each in namespaces of their
  own; Job creation lateness, misses (no Job within ``--scale-window`` of the slot) and
  duplicates;
- ``outage``: kube-controller-manager and the operator both stopped for ``--outage`` (3 min):
  which missed slots each runs afterwards, how late, and what Punctual counts as missed;
- ``express``: what each can express (sub-minute, a DST gap, a repeated hour, jitter, missed
  slots): ``punctual next`` against the CronJob controller's code.

Prints a table (p50/p95/p99/max per system and measure, duplicates, misses) and writes
``samples.csv``, ``summary.csv``, ``table.txt`` and ``lateness.png`` (with matplotlib), and with
the suite ``outage.csv`` and ``capabilities.csv``, under ``results/compare/<timestamp>/``.

Usage: python bench/compare.py [-n N] [-m MINUTES] [--stress] [--suite [PARTS]] [--warm-lead
SECONDS] [--results-dir DIR] [--keep]
"""

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from comparing.basic import (
    run_basic,
)
from comparing.express import (
    express,
)
from comparing.figures import (
    Row,
    _ms,
    plot,
    ratio_lines,
    table,
    write_csv,
    write_table,
)
from comparing.outage import (
    run_on_kwok,
)
from comparing.running import (
    Results,
)
from comparing.systems import (
    MINUTE,
    PARTS,
    SCALE_SIZES,
    WARM_LEAD,
)
from comparing.workload import (
    run_on_real_node,
)
from lib.output import load, say
from localcluster import processes
from localcluster.binaries import REPO_ROOT

# -- the entry points ------------------------------------------------------------------------


def markdown(rows: Sequence[Row], header: str) -> str:
    """The rows as a Markdown table (p50 and p99), then the ratios: for the README."""
    lines = [
        header,
        "",
        "| part | scenario | system | measure | n | p50 ms | p99 ms | dup | miss |",
        "|---|---|---|---|--:|--:|--:|--:|--:|",
    ]
    lines += [
        f"| {r.part} | {r.scenario} | {r.system} | {r.measure} | {r.n} | "
        f"{_ms(r.p50, r.window_s)} | {_ms(r.p99, r.window_s)} | {r.duplicates} | {r.misses} |"
        for r in rows
    ]
    return "\n".join([*lines, "", *(f"- {line}" for line in ratio_lines(rows))]) + "\n"


def write_results(results: Results, directory: Path, header: str) -> None:
    text = table(results.rows, header=header) if results.rows else header
    loads = ["the machine's load as each phase ended:", *results.loads] if results.loads else []
    text = "\n\n".join([text, *results.texts, "\n".join(loads)]).rstrip()
    print(text, flush=True)
    (directory / "table.txt").write_text(text + "\n")
    write_csv(directory, results.samples, results.rows)
    if results.rows:
        (directory / "summary.md").write_text(markdown(results.rows, header))
    if results.outage:
        write_table(
            directory,
            "outage.csv",
            ["system", "objects", "slots_in_outage", "missed_slots_run", "which",
             "created_after_restart_s", "counted_missed", "next_slot_ran"],
            results.outage,
        )  # fmt: skip
    if results.capabilities:
        write_table(
            directory, "capabilities.csv", ["what", "CronJob", "Punctual"], results.capabilities
        )
    title = f"Punctual vs CronJob: {header.split(';', maxsplit=1)[0]}"
    if results.rows and plot(directory, results.samples, results.rows, title) is None:
        say("matplotlib is not installed: no lateness.png (add it to the dev group)")


def run(arguments: argparse.Namespace) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    directory = Path(arguments.results_dir or REPO_ROOT / "results" / "compare") / stamp
    directory.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="punctual-compare-"))
    processes.install_signal_handlers()
    results = Results()
    began, load_before = time.monotonic(), load()
    try:
        if arguments.suite is None:
            header = run_basic(arguments, run_dir, results)
        else:
            parts = arguments.suite
            say(f"suite: {', '.join(parts)}; run directory {run_dir}; {load_before}")
            if "express" in parts:
                express(results)
            if {"workload", "http", "stress"} & set(parts):
                run_on_real_node(arguments, parts, run_dir, results)
            if {"scale", "outage"} & set(parts):
                run_on_kwok(arguments, parts, run_dir, results)
            minutes = (time.monotonic() - began) / 60
            sizes = []
            if {"workload", "http", "stress"} & set(parts):
                sizes.append(
                    f"real node N={arguments.node_n} per system, M={arguments.m}, "
                    f"warm lead {arguments.warm_lead.total_seconds():.0f} s"
                )
            if "scale" in parts:
                sizes.append(f"scale N={','.join(map(str, arguments.scale_sizes))}, one slot")
            if "outage" in parts:
                sizes.append(f"outage {arguments.outage:.0f} s")
            header = "; ".join(
                [
                    f"suite ({', '.join(parts)}) in {minutes:.1f} min",
                    "lateness in ms against the scheduled time",
                    *sizes,
                    f"{load_before} at the start, {load()} at the end",
                    *(["one core loaded throughout (--stress)"] if arguments.stress else []),
                ]
            )
    finally:
        if not arguments.keep:
            shutil.rmtree(run_dir, ignore_errors=True)
        else:
            say(f"kept {run_dir}")
    write_results(results, directory, header)
    say(f"results in {directory}")
    return directory


def parts_list(text: str) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    unknown = set(chosen) - set(PARTS)
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"parts are a comma-separated choice of {', '.join(PARTS)} (not {sorted(unknown)})"
        )
    return [part for part in PARTS if part in chosen]


def sizes_list(text: str) -> list[int]:
    return [int(size) for size in text.split(",")]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/compare.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=20, help="objects per system (default 20)")
    parser.add_argument(
        "-m", type=int, default=5, help="minutes (slots) measured (default 5; the suite: 1)"
    )
    parser.add_argument(
        "--stress", action="store_true", help="load one core with a busy process during the run"
    )
    parser.add_argument(
        "--suite",
        nargs="?",
        const=",".join(PARTS),
        type=parts_list,
        help=f"run the suite's parts (comma-separated; default all: {','.join(PARTS)})",
    )
    parser.add_argument(
        "--node-n", type=int, default=20, help="suite: objects per system on the real node (20)"
    )
    parser.add_argument(
        "--warm-lead",
        type=lambda text: timedelta(seconds=int(text)),
        default=WARM_LEAD,
        metavar="SECONDS",
        help="suite: how far ahead of its slot a warm Job is made (default 30; 1 to 59)",
    )
    parser.add_argument(
        "--scale-sizes",
        type=sizes_list,
        default=list(SCALE_SIZES),
        help="suite: the N of the scale part (default 20,200,1000)",
    )
    parser.add_argument(
        "--scale-window",
        type=float,
        default=90,
        help="suite: seconds after a scale slot by which a Job counts as missed (default 90)",
    )
    parser.add_argument(
        "--outage", type=float, default=180, help="suite: seconds both controllers stay stopped"
    )
    parser.add_argument(
        "--outage-n", type=int, default=3, help="suite: objects per system in the outage part"
    )
    parser.add_argument(
        "--results-dir", help="where the <timestamp>/ folder goes (default results/compare)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the run directory (logs)")
    arguments = parser.parse_args(argv)
    if arguments.suite is not None and "-m" not in (argv or sys.argv[1:]):
        arguments.m = 1
    if arguments.n < 1 or arguments.m < 1 or arguments.node_n < 1:
        parser.error("-n, -m and --node-n must be at least 1")
    if not timedelta(0) < arguments.warm_lead < MINUTE:
        parser.error("--warm-lead must leave the run a timeout in the minute: 1 to 59 seconds")
    try:
        run(arguments)
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except processes.ComponentError as error:
        say(f"failed: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
