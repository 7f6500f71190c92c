"""A job target's warm start as the plan carries it: its lead, refused when an armed Job could
meet the previous slot's run, and its template when the gate cannot hold it
(``punctual.api.warm_pods``). ``punctual.api.planning.plan_for`` calls it for every spec."""

from datetime import timedelta

from punctual.api import job_models, models, warm_pods
from punctual.api.spec_parsing import SPEC
from punctual.scheduling import durations, overlap, timeline
from punctual.scheduling.errors import InvalidSpecError

WARM_START = f"{SPEC}.target.job.warmStart"


def warm_lead(warm_start: job_models.WarmStart) -> timedelta:
    """How long before its slot a job target's Job is armed (``warmStart.lead``), as checked
    against the schedule by ``plan_for``, which carries it as ``JobPlan.warm_lead``."""
    return durations.parse(warm_start.lead, field=f"{WARM_START}.lead")


def checked_lead(
    spec: models.ScheduledJobSpec, *, schedule: timeline.Schedule, timeout: timedelta
) -> timedelta | None:
    """The warm start's lead, refused when an armed Job could meet the previous slot's run
    still going (the lead must fit in the shortest gap between two slots, less the timeout), and
    its template when the rewrite cannot hold it (``warm_pods.check``). ``Queue`` is refused
    beside it: a later slot's Job, armed during the lead, counts as a run in flight like any
    unfinished Job of the job, so a queued slot would wait for it, and it for the queued one."""
    job = spec.target.job
    if job is None or job.warm_start is None:
        return None
    if spec.concurrency_policy is overlap.ConcurrencyPolicy.QUEUE:
        raise InvalidSpecError(
            f"{SPEC}.concurrencyPolicy",
            "Queue cannot go with spec.target.job.warmStart: the Job armed ahead of a later "
            "slot counts as a run in flight, and would hold back the slot queued before it; "
            "use Forbid, Allow or Replace",
        )
    lead = warm_lead(job.warm_start)
    period = schedule.shortest_period
    room = max(period - timeout, timedelta())
    if lead > room:
        sampled = (
            ""
            if spec.every is not None
            else " (the shortest gap in a sample of the cron schedule's slots, as for jitter)"
        )
        raise InvalidSpecError(
            f"{WARM_START}.lead",
            f"{job.warm_start.lead} is more than the {durations.format(period)} between two "
            f"slots{sampled} less spec.timeout ({spec.timeout}): at most "
            f"{durations.format(room)}, so that a Job armed ahead of its slot never runs beside "
            "the previous slot's",
        )
    warm_pods.check(job.template, mode=job.warm_start.mode)
    return lead
