"""Where every expected slot of a job went: ran, missed by policy, failed, lost, or unexplained.

The receiver's record of Idempotency-Keys is the ground truth of what ran. A slot that did not
arrive must be accounted for, in this order:

- a non-success record in ``status.recentRuns`` for that slot (Failed, TimedOut: ``failed``;
  SkippedOverlap, Missed: ``policy``), or inside the range a ``Missed`` record's count covers
  ("N slot(s) missed, the newest ..." names only the newest of the N);
- a ``Lost`` record (durable runs), or a claim of the slot (a Redis lock key, or a
  ``status.lastScheduleTime`` a watch saw) with no record and no call: the replica that claimed
  it died before its request left (``lost``);
- anything else is ``unexplained``: a slot nobody claimed, ran or counted, which must not happen.

Pure functions over plain data, so the accounting itself is unit-tested
(``tests/unit/bench/test_slot_accounting.py``).
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

POLICY_RESULTS = frozenset({"Missed", "SkippedOverlap"})
FAILED_RESULTS = frozenset({"Failed", "TimedOut"})
_MISSED_COUNT = re.compile(r"^(\d+) slot\(s\) missed")


@dataclass(frozen=True, slots=True)
class Record:
    """A non-success run record seen in status."""

    slot: datetime
    result: str
    message: str = ""

    @property
    def missed_count(self) -> int:
        """How many slots a ``Missed`` record stands for (1 when its message does not say)."""
        found = _MISSED_COUNT.match(self.message)
        return int(found.group(1)) if found else 1


@dataclass
class Tally:
    job: str
    expected: int = 0
    ran: int = 0
    policy: int = 0
    failed: int = 0
    lost: int = 0
    unexplained: int = 0
    duplicates: int = 0
    lost_recorded: int = 0
    """Of ``lost``: those status records as Lost (durable runs, once the operator has them)."""
    lost_slots: list[datetime] = field(default_factory=list)
    unexplained_slots: list[datetime] = field(default_factory=list)

    def add(self, other: "Tally") -> None:
        for name in (
            "expected", "ran", "policy", "failed", "lost", "unexplained", "duplicates",
            "lost_recorded",
        ):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.lost_slots += other.lost_slots
        self.unexplained_slots += other.unexplained_slots


def expected_slots(start: datetime, end: datetime, every: timedelta) -> list[datetime]:
    """The slots of an ``every`` schedule in ``(start, end]``: multiples of it since the epoch."""
    epoch = datetime(1970, 1, 1, tzinfo=start.tzinfo)
    period = every // timedelta(milliseconds=1)
    first = ((start - epoch) // timedelta(milliseconds=1) // period + 1) * period
    last = (end - epoch) // timedelta(milliseconds=1)
    return [epoch + timedelta(milliseconds=ms) for ms in range(first, last + 1, period)]


def account(
    job: str,
    *,
    expected: Iterable[datetime],
    keys_received: Iterable[datetime],
    records: Iterable[Record],
    claimed: Iterable[datetime],
    every: timedelta,
) -> Tally:
    """Where each of ``expected`` went. ``keys_received`` has one entry per call (repeats are
    duplicates, counted whether or not the slot is in ``expected``)."""
    received_list = list(keys_received)
    received = set(received_list)
    tally = Tally(job=job, duplicates=len(received_list) - len(received))
    by_slot: dict[datetime, Record] = {}
    covered: set[datetime] = set()
    for record in records:
        by_slot[record.slot] = record
        if record.result == "Missed":
            covered.update(record.slot - every * back for back in range(record.missed_count))
    claimed_slots = set(claimed)
    for slot in expected:
        tally.expected += 1
        if slot in received:
            tally.ran += 1
            continue
        record = by_slot.get(slot)
        if record is not None and record.result in FAILED_RESULTS:
            tally.failed += 1
        elif (record is not None and record.result in POLICY_RESULTS) or slot in covered:
            tally.policy += 1
        elif record is not None and record.result == "Lost":
            tally.lost += 1
            tally.lost_recorded += 1
            tally.lost_slots.append(slot)
        elif slot in claimed_slots:
            tally.lost += 1
            tally.lost_slots.append(slot)
        else:
            tally.unexplained += 1
            tally.unexplained_slots.append(slot)
    return tally


def total(tallies: Iterable[Tally]) -> Tally:
    summed = Tally(job="total")
    for tally in tallies:
        summed.add(tally)
    return summed


def table(tallies: Iterable[Tally], *, per_job: bool = True) -> list[str]:
    rows = list(tallies)
    header = (
        f"{'job':<24} {'expected':>8} {'ran':>6} {'policy':>6} {'failed':>6} {'lost':>5} "
        f"{'unexpl.':>7} {'dupl.':>5}"
    )

    def line(tally: Tally) -> str:
        return (
            f"{tally.job:<24} {tally.expected:>8} {tally.ran:>6} {tally.policy:>6} "
            f"{tally.failed:>6} {tally.lost:>5} {tally.unexplained:>7} {tally.duplicates:>5}"
        )

    lines = [header, *(line(tally) for tally in rows)] if per_job else [header]
    lines.append(line(total(rows)))
    return lines


def records_from_status(status: Mapping[str, object]) -> list[Record]:
    """The non-success records of one ScheduledJob's ``status.recentRuns``."""
    runs = status.get("recentRuns") or []
    assert isinstance(runs, list)
    return [
        Record(
            slot=datetime.fromisoformat(run["slot"]),
            result=run["result"],
            message=run.get("message", ""),
        )
        for run in runs
        if run.get("result") != "Succeeded"
    ]
