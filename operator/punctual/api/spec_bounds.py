"""What the platform team allows one job (``punctual run``'s flags, as ``Bounds``), and the
check of a target's sizes against them, measured as the operator keeps and sends them.

``punctual.api.planning.plan_for`` applies the bounds to every spec before it is armed.
"""

import json
import sys
from dataclasses import dataclass
from datetime import timedelta

import pydantic

from punctual.api import models, task_models
from punctual.api.spec_parsing import SPEC
from punctual.scheduling import overlap, timeline
from punctual.scheduling.errors import InvalidSpecError

KIB = 1024
SCHEDULE_HORIZON_YEARS = 10
"""How soon a schedule must fire, at the latest, to be accepted (``punctual run
--schedule-horizon-years``): a schedule that names only times that never come (a local time in
every spring-forward gap, with ``dst.nonexistent: Skip``; the fifth Monday of February) would
never run. Ten years accept every yearly schedule and 29 February, at most eight years from the
next one (2096 to 2104)."""
YEAR = timedelta(days=366)
"""A year of the horizon: the longest calendar year, so N of them cover N calendar years."""
LONGEST_SCHEDULE_HORIZON_YEARS = timeline.SEARCH_HORIZON // YEAR
"""The horizon cannot reach past the search for a schedule's next slot."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Bounds:
    """What the platform team allows one job: ``punctual run``'s flags, each named in the
    message of the spec it refuses. The operator is shared by every namespace it watches, so
    one tenant's job must not cost the others what it takes: a schedule faster than the
    platform allows, a run that holds its place for days, a spec the operator keeps in memory
    and sends on every run, or runs that pile up behind a target that never answers.

    Sizes are measured on what the operator keeps and sends (compact JSON, UTF-8 bytes), not on
    the YAML users wrote.
    """

    min_period: timedelta = timedelta(seconds=1)
    """The shortest time allowed between two slots of a schedule (``--min-period``)."""
    max_timeout: timedelta = timedelta(hours=24)
    """The longest ``spec.timeout`` (``--max-timeout``)."""
    max_runs_in_flight: int = overlap.MAX_RUNS_IN_FLIGHT
    """The most runs of one job in flight at once (``--max-runs-in-flight-per-job``): a slot
    due at that many is skipped and counted ``SkippedInFlightLimit``."""
    max_queued: int = 100
    """The largest ``spec.maxQueued`` (``--max-queued-runs-per-job``)."""
    max_job_template_bytes: int = 64 * KIB
    """The largest ``spec.target.job.template``, as JSON (``--max-job-template-bytes``)."""
    max_http_body_bytes: int = 64 * KIB
    """The largest ``spec.target.http.body`` (``--max-http-body-bytes``)."""
    max_http_headers_bytes: int = 16 * KIB
    """The largest ``spec.target.http.headers``, as sent: ``Name: value`` and a line break
    each (``--max-http-headers-bytes``)."""
    max_queue_payload_bytes: int = 64 * KIB
    """The largest ``spec.target.queue.payload``, or a task's arguments (and a taskiq task's
    labels, a BullMQ job's data), as JSON (``--max-queue-payload-bytes``)."""
    schedule_horizon_years: int = SCHEDULE_HORIZON_YEARS
    """A schedule must fire within this many years of now (``--schedule-horizon-years``; see
    ``check_fires``)."""

    def __post_init__(self) -> None:
        if self.min_period < timedelta(milliseconds=1):
            raise InvalidSpecError("--min-period", "must be at least 1ms")
        if self.max_timeout <= timedelta():
            raise InvalidSpecError("--max-timeout", "must be more than 0")
        for flag, value in (
            ("--max-runs-in-flight-per-job", self.max_runs_in_flight),
            ("--max-queued-runs-per-job", self.max_queued),
            ("--max-job-template-bytes", self.max_job_template_bytes),
            ("--max-http-body-bytes", self.max_http_body_bytes),
            ("--max-http-headers-bytes", self.max_http_headers_bytes),
            ("--max-queue-payload-bytes", self.max_queue_payload_bytes),
        ):
            if value < 1:
                raise InvalidSpecError(flag, "must be at least 1")
        if not 1 <= self.schedule_horizon_years <= LONGEST_SCHEDULE_HORIZON_YEARS:
            raise InvalidSpecError(
                "--schedule-horizon-years",
                f"must be 1 to {LONGEST_SCHEDULE_HORIZON_YEARS} (how far the search for a "
                "schedule's next slot looks)",
            )


DEFAULT_BOUNDS = Bounds()
"""The bounds of an operator run with the defaults of its flags."""
UNBOUNDED = Bounds(
    min_period=timedelta(milliseconds=1),
    max_timeout=timedelta.max,
    max_runs_in_flight=sys.maxsize,
    max_queued=sys.maxsize,
    max_job_template_bytes=sys.maxsize,
    max_http_body_bytes=sys.maxsize,
    max_http_headers_bytes=sys.maxsize,
    max_queue_payload_bytes=sys.maxsize,
)
"""Only what the API itself allows: for the commands that check a spec without knowing the
operator's flags (``punctual convert``, ``punctual backfill``). The operator checks its own
bounds when the spec is applied."""


def check_sizes(target: models.Target, *, bounds: Bounds) -> None:
    """Refuse a target field larger than the platform allows, measured as kept and sent."""
    measured: list[tuple[str, int, int, str]] = []
    if target.job is not None:
        measured.append(
            (
                "job.template",
                _json_bytes(target.job.template),
                bounds.max_job_template_bytes,
                "--max-job-template-bytes",
            )
        )
    if target.http is not None:
        headers = "".join(f"{name}: {value}\r\n" for name, value in target.http.headers.items())
        measured.append(
            (
                "http.headers",
                _utf8_bytes(headers),
                bounds.max_http_headers_bytes,
                "--max-http-headers-bytes",
            )
        )
        if target.http.body is not None:
            measured.append(
                (
                    "http.body",
                    _utf8_bytes(target.http.body),
                    bounds.max_http_body_bytes,
                    "--max-http-body-bytes",
                )
            )
    if target.queue is not None and target.queue.payload is not None:
        measured.append(
            (
                "queue.payload",
                _json_bytes(target.queue.payload),
                bounds.max_queue_payload_bytes,
                "--max-queue-payload-bytes",
            )
        )
    found = None if target.queue is None else target.queue.task()
    if found is not None:
        name, task = found
        sent: dict[str, pydantic.JsonValue] = (
            {"data": task.data or {}}
            if isinstance(task, task_models.BullmqJob)
            else {"arguments": task.arguments or {}}
        )
        if isinstance(task, task_models.TaskiqTask):
            sent["labels"] = task.labels or {}
        for field, value in sent.items():
            measured.append(
                (
                    f"queue.{name}.{field}",
                    _json_bytes(value),
                    bounds.max_queue_payload_bytes,
                    "--max-queue-payload-bytes",
                )
            )
    for field, size, limit, flag in measured:
        if size > limit:
            raise InvalidSpecError(
                f"{SPEC}.target.{field}",
                f"{size} bytes, more than the {limit} this operator allows (punctual run {flag})",
            )


def _json_bytes(value: object) -> int:
    """The size of ``value`` as compact JSON in UTF-8: how the operator sends it."""
    return _utf8_bytes(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def _utf8_bytes(text: str) -> int:
    """The size of ``text`` in UTF-8; a lone surrogate (JSON may escape one) counted as the
    three bytes it would take, never an error."""
    return len(text.encode(errors="surrogatepass"))
