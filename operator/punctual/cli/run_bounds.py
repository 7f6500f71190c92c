"""The bounds of ``punctual run``: what the platform allows one job (``spec_bounds.Bounds``), and
one namespace's jobs together, declared as options and read back.

Apart from the other options (``run_flags``) because they are one concept with one home in the
help (a group of their own) and one record to fill: a spec past them is refused at admission
and reported ``InvalidSpec``, the flag named in the message."""

import argparse

from punctual.api import spec_bounds
from punctual.scheduling import backfill, durations, overlap


def add(parser: argparse.ArgumentParser) -> None:
    """Declare the bounds per job as a group of options on ``parser`` and, with them, the
    bounds on a namespace's jobs together (not a spec's: applied to runs as they come due, and
    to backfills as they are asked for)."""
    bounds = spec_bounds.DEFAULT_BOUNDS
    group = parser.add_argument_group(
        "bounds per job and per namespace",
        "what one ScheduledJob, and one namespace's jobs together, may ask of this shared "
        "operator; a spec past them is refused by the webhook and reported InvalidSpec, naming "
        "the field",
    )
    group.add_argument(
        "--min-period",
        default=durations.format(bounds.min_period),
        metavar="DURATION",
        help="the shortest time allowed between two slots of a schedule, every: or cron "
        f"(default: {durations.format(bounds.min_period)}; lower it to allow sub-second "
        "schedules)",
    )
    group.add_argument(
        "--max-timeout",
        default=durations.format(bounds.max_timeout),
        metavar="DURATION",
        help=f"the longest spec.timeout (default: {durations.format(bounds.max_timeout)})",
    )
    group.add_argument(
        "--max-runs-in-flight-per-job",
        type=int,
        default=bounds.max_runs_in_flight,
        metavar="N",
        help="the most runs of one job in flight at once, whatever its concurrencyPolicy; a "
        "slot due at that many is skipped and counted SkippedInFlightLimit (default: "
        f"{bounds.max_runs_in_flight})",
    )
    group.add_argument(
        "--max-runs-in-flight-per-namespace",
        type=int,
        default=overlap.MAX_RUNS_IN_FLIGHT_PER_NAMESPACE,
        metavar="N",
        help="the most runs of one namespace's jobs in flight at once on this replica; a slot "
        "that would add one more is skipped and counted SkippedInFlightLimit (default: "
        f"{overlap.MAX_RUNS_IN_FLIGHT_PER_NAMESPACE}); per replica: with sharding, a "
        "namespace's jobs are spread over the replicas",
    )
    group.add_argument(
        "--max-queued-runs-per-job",
        type=int,
        default=bounds.max_queued,
        metavar="N",
        help=f"the largest spec.maxQueued (default: {bounds.max_queued})",
    )
    group.add_argument(
        "--max-queued-runs-per-namespace",
        type=int,
        default=overlap.MAX_QUEUED_RUNS_PER_NAMESPACE,
        metavar="N",
        help="the most runs of one namespace's jobs queued at once on this replica "
        "(concurrencyPolicy Queue); a slot that would be queued as one more is skipped and "
        f"counted SkippedQueueLimit (default: {overlap.MAX_QUEUED_RUNS_PER_NAMESPACE}); per "
        "replica",
    )
    group.add_argument(
        "--max-backfills-per-namespace",
        type=int,
        default=backfill.MAX_BACKFILLS_PER_NAMESPACE,
        metavar="N",
        help="the most backfills (punctual.dev/backfill) of one namespace's jobs going at once "
        "on this replica; one more waits, status.backfill.waiting saying why, and starts when "
        f"one of them ends (default: {backfill.MAX_BACKFILLS_PER_NAMESPACE}); per replica",
    )
    group.add_argument(
        "--schedule-horizon-years",
        type=int,
        default=bounds.schedule_horizon_years,
        metavar="N",
        help="a schedule must fire within the next N years, or its spec is invalid; 1 to "
        f"{spec_bounds.LONGEST_SCHEDULE_HORIZON_YEARS} (default: {bounds.schedule_horizon_years}, "
        "which accepts every yearly schedule and 29 February)",
    )
    for flag, default, field in (
        ("--max-job-template-bytes", bounds.max_job_template_bytes, "job.template, as JSON"),
        ("--max-http-body-bytes", bounds.max_http_body_bytes, "http.body, in UTF-8"),
        (
            "--max-http-headers-bytes",
            bounds.max_http_headers_bytes,
            "http.headers, as sent ('Name: value' and a line break each)",
        ),
        ("--max-queue-payload-bytes", bounds.max_queue_payload_bytes, "queue.payload, as JSON"),
    ):
        group.add_argument(
            flag,
            type=int,
            default=default,
            metavar="BYTES",
            help=f"the largest spec.target.{field} (default: {default})",
        )


def read(arguments: argparse.Namespace) -> spec_bounds.Bounds:
    """The bounds per job from the parsed options; raises ``InvalidSpecError`` naming the
    option. The bounds per namespace are not a spec's: the settings take them as they are."""
    return spec_bounds.Bounds(
        min_period=durations.parse(arguments.min_period, field="--min-period"),
        max_timeout=durations.parse(arguments.max_timeout, field="--max-timeout"),
        max_runs_in_flight=arguments.max_runs_in_flight_per_job,
        max_queued=arguments.max_queued_runs_per_job,
        max_job_template_bytes=arguments.max_job_template_bytes,
        max_http_body_bytes=arguments.max_http_body_bytes,
        max_http_headers_bytes=arguments.max_http_headers_bytes,
        max_queue_payload_bytes=arguments.max_queue_payload_bytes,
        schedule_horizon_years=arguments.schedule_horizon_years,
    )
