"""The suite's express part: what each system can express."""

import contextlib
import io
import json

from comparing.running import (
    Results,
)
from punctual.cli import main as punctual_cli

# -- the suite: what each can express --------------------------------------------------------

CRONJOB_SOURCE = (
    "k8s.io/kubernetes v1.35 pkg/controller/cronjob (utils.go mostRecentScheduleTime, "
    "getTimeHashInMinutes; cronjob_controllerv2.go getJobName), github.com/robfig/cron/v3 "
    "v3.0.1 spec.go (SpecSchedule.Next)"
)


def punctual_next(*arguments: str) -> str:
    """``punctual next`` as a user runs it (in this process): the local times it prints."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = punctual_cli.main(["next", *arguments, "-o", "json"])
    if status != 0:
        raise RuntimeError(f"punctual next {' '.join(arguments)} failed ({status})")
    return "; ".join(
        f"{item['local']}{' (' + item['adjustment'] + ')' if 'adjustment' in item else ''}"
        for item in json.loads(printed.getvalue())
    )


def capabilities() -> list[list[str]]:
    """Rows: what, CronJob (its controller's code), Punctual (``punctual next`` or the spec)."""
    berlin = ["--tz", "Europe/Berlin"]
    gap = ["30 2 * * *", *berlin, "--after", "2027-03-27T12:00:00Z", "-n", "2"]
    repeated = ["30 2 * * *", *berlin, "--after", "2027-10-30T12:00:00Z", "-n", "3"]
    return [
        [
            "every 10 seconds",
            "no: 5-field cron, minute resolution; '@every 10s' parses, but Jobs are named "
            "<name>-<minutes since epoch>, so at most one Job per minute",
            "every: 10s -> "
            + punctual_next("--every", "10s", "-n", "3", "--after", "2027-01-01T00:00:05Z"),
        ],
        [
            "DST gap: 02:30 Europe/Berlin on 2027-03-28 (02:00-03:00 does not exist)",
            "skipped: Next() adds whole hours and finds no 02:xx that day; next run "
            "2027-03-29T02:30+02:00",
            "dst.nonexistent ShiftForward (default) -> "
            + punctual_next(*gap)
            + " | Skip -> "
            + punctual_next(*gap, "--nonexistent", "Skip"),
        ],
        [
            "repeated hour: 02:30 Europe/Berlin on 2027-10-31 (02:00-03:00 twice)",
            "runs twice: 02:30+02:00 and 02:30+01:00 (distinct UTC minutes, two Jobs)",
            "dst.ambiguous First (default) -> "
            + punctual_next(*repeated)
            + " | Both -> "
            + punctual_next(*repeated, "--ambiguous", "Both"),
        ],
        [
            "jitter (spread N objects with one schedule)",
            "no: every CronJob with one schedule fires in the same controller pass",
            "jitter: 30s -> a fixed offset in [0, 30s) per object, from its uid, the same on "
            "every replica",
        ],
        [
            "slots missed during an outage",
            "only the newest missed slot runs (mostRecentScheduleTime); more than 100 missed: "
            "a TooManyMissedTimes warning; startingDeadlineSeconds may skip it",
            "missedRuns.policy Skip | RunOnce (default, CronJob's) | CatchUp (oldest first, "
            "up to maxCatchUp) and startingDeadline; missed slots counted in status.counts.missed",
        ],
    ]


def express(results: Results) -> None:
    rows = capabilities()
    results.capabilities = rows
    lines = [f"what each can express (CronJob: read from {CRONJOB_SOURCE})"]
    for what, cron, ours in rows:
        lines += [f"- {what}", f"    CronJob:  {cron}", f"    Punctual: {ours}"]
    results.texts.append("\n".join(lines))
