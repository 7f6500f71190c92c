"""A job's timing and policies, resolved from its spec: everything the slot loop obeys."""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from punctual.scheduling import missed, overlap, timeline


@dataclass(frozen=True, slots=True, kw_only=True)
class JobPlan:
    schedule: timeline.Schedule
    offset: timedelta = timedelta()
    """This job's jitter offset: every slot fires at its nominal time plus this."""
    missed_runs: missed.MissedRuns = missed.MissedRuns()
    concurrency: overlap.ConcurrencyPolicy = overlap.ConcurrencyPolicy.FORBID
    max_queued: int = 1
    max_runs_in_flight: int = overlap.MAX_RUNS_IN_FLIGHT
    """The platform's cap on this job's runs in flight at once, whatever its policy."""
    timeout: timedelta = timedelta(minutes=10)
    retry_lost_runs: bool = False
    """Run a slot once more (same slot id) when its first run is recorded Lost."""
    _lock_ttl: timedelta = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Once per plan, not once per claim: read on every slot's claim.
        ttl = max(2 * self.schedule.shortest_period, self.timeout + timedelta(seconds=60))
        object.__setattr__(self, "_lock_ttl", ttl)

    def nominal(self, fires_at: datetime) -> datetime:
        """The nominal time of a slot firing at ``fires_at``: a time on the job's slot timeline.
        Where scheduling starts "from now" (a job new to a replica: its first sight, a spec
        change, a membership change), now is this: a slot whose nominal time has passed may still
        be ahead, up to the offset, and the replica that ran the job before may have let it go."""
        return fires_at - self.offset

    @property
    def lock_ttl(self) -> timedelta:
        """How long a slot claim outlives its holder: ``max(2 × period, timeout + 60s)``."""
        return self._lock_ttl
