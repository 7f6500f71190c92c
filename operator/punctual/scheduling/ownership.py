"""Which replicas schedule a job: rendezvous (highest-random-weight) hashing of its uid.

Every replica computes the same answer from the same set of live members, without talking:
each member's weight for a job is a hash of the member's name and the job's uid; the heaviest
member owns the job, the next one is its backup. When a member leaves, only the jobs it owned
or backed up move (the others keep their two members, in the same order); when one joins, only
the jobs it now owns or backs up move. Ownership is an efficiency hint: the slot lock alone
makes a slot run once.
"""

import enum
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass


class Role(enum.StrEnum):
    OWNER = "Owner"
    """Claims and runs each slot when it is due."""
    BACKUP = "Backup"
    """Claims each slot a short delay after it is due, in case the owner did not."""
    NONE = "None"
    """Does not arm the job."""


@dataclass(frozen=True, slots=True)
class Shares:
    """A job's two members: ``backup`` is None when there is only one live member."""

    owner: str
    backup: str | None

    def role_of(self, member: str) -> Role:
        if member == self.owner:
            return Role.OWNER
        if member == self.backup:
            return Role.BACKUP
        return Role.NONE


def weight(member: str, key: str) -> int:
    """A 64-bit weight, the same on every replica and every Python (not ``hash``: salted)."""
    digest = hashlib.blake2b(f"{member}\0{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def shares(key: str, members: Iterable[str]) -> Shares | None:
    """The owner and backup of ``key`` among ``members`` (ties go to the smaller name); None
    when there is no member."""
    first: tuple[int, str] | None = None
    second: tuple[int, str] | None = None
    for member in members:
        ranked = (weight(member, key), member)
        if first is None or _heavier(ranked, first):
            first, second = ranked, first
        elif second is None or _heavier(ranked, second):
            second = ranked
    if first is None:
        return None
    return Shares(owner=first[1], backup=second[1] if second is not None else None)


def role(key: str, members: Iterable[str], member: str) -> Role:
    """``member``'s role for ``key`` among ``members``."""
    found = shares(key, members)
    return Role.NONE if found is None else found.role_of(member)


def _heavier(left: tuple[int, str], right: tuple[int, str]) -> bool:
    if left[0] != right[0]:
        return left[0] > right[0]
    return left[1] < right[1]
