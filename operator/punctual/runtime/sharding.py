"""This replica's share of the jobs among the live members: each job's role here (owner,
backup or none, from ``scheduling.ownership``) and the indexes the supervisor reads it by.

Apart from the supervisor (``supervisor``), which arms and stops the loops a role asks for:
the roles follow the members, the loops follow the roles.
"""

from dataclasses import dataclass
from datetime import timedelta

from punctual.scheduling import ownership, slots

BACKUP_DELAY = timedelta(milliseconds=250)


@dataclass(frozen=True, slots=True, kw_only=True)
class Sharding:
    """This replica's name among the members, and how long after a slot a backup claims it."""

    member: str
    backup_delay: timedelta = BACKUP_DELAY


class Roles:
    """The roles of the jobs held here (owned or backed up), among the live members."""

    def __init__(self, sharding: Sharding) -> None:
        self._sharding = sharding
        self._members = frozenset({sharding.member})
        self._backed_up: dict[str, slots.JobRef] = {}
        """The jobs backed up here, by uid (what claim notices name)."""
        self._held: set[slots.JobRef] = set()
        """The jobs owned or backed up here; ``held`` copies it in one step (the metrics server
        reads it from its own thread while the event loop changes it)."""

    @property
    def held(self) -> frozenset[slots.JobRef]:
        return frozenset(self._held)

    def holds(self, job: slots.JobRef) -> bool:
        return job in self._held

    def backed_up(self, uid: str) -> slots.JobRef | None:
        """The job of ``uid`` if this replica backs it up."""
        return self._backed_up.get(uid)

    def members_changed(self, members: frozenset[str]) -> None:
        """The live members are now ``members`` (this replica always among them)."""
        self._members = members | {self._sharding.member}

    def shares(self, job: slots.JobRef) -> ownership.Shares:
        found = ownership.shares(job.uid, self._members)
        if found is None:  # never: this replica always counts itself a member
            raise RuntimeError("no members")
        return found

    def role(self, job: slots.JobRef, shares: ownership.Shares | None = None) -> ownership.Role:
        """``job``'s role here, from ``shares`` (its shares among the members, if known)."""
        return (shares or self.shares(job)).role_of(self._sharding.member)

    def record(self, job: slots.JobRef, role: ownership.Role) -> None:
        """``job`` now has ``role`` here."""
        if role == ownership.Role.NONE:
            self._held.discard(job)
        else:
            self._held.add(job)
        if role == ownership.Role.BACKUP:
            self._backed_up[job.uid] = job
        else:
            self._backed_up.pop(job.uid, None)

    def drop(self, job: slots.JobRef) -> None:
        """``job`` is held here no more (suspended, forgotten)."""
        self._held.discard(job)
        self._backed_up.pop(job.uid, None)

    def delay(self, role: ownership.Role) -> timedelta:
        """How long after a slot a job with ``role`` here claims it."""
        return self._sharding.backup_delay if role == ownership.Role.BACKUP else timedelta()
