"""What a job was armed with: its plan, executor and lock, and the executor's abilities."""

from dataclasses import dataclass

from punctual.contracts import protocols, records
from punctual.scheduling import plans


@dataclass(frozen=True, slots=True, kw_only=True)
class Armed:
    """What the job was armed with. Each firing carries the one it was decided under: a slot
    queued before a re-arm runs with the plan and executor it was admitted with."""

    plan: plans.JobPlan
    executor: protocols.Executor
    lock: protocols.SlotLock
    # ``executor`` again, where it has these abilities: checked once per arm, not per slot (an
    # isinstance against a runtime-checkable protocol costs microseconds on every call).
    runs_view: protocols.SeesRuns | None = None
    job_namer: protocols.NamesJobs | None = None
    preparer: protocols.PreparesRuns | None = None
    arms_ahead: protocols.ArmsAhead | None = None
    claim_is_the_run: bool = False
    """The job claims through a lock of its own whose won claim is the run's effect (the queue
    target's claim appends the entry): a claim answered late has run, late, whatever the
    missed-run policy would have said."""

    def job_name(self, context: records.RunContext) -> str | None:
        """The object the executor names for the run (a Job), if it names one."""
        return self.job_namer.job_name(context) if self.job_namer is not None else None
