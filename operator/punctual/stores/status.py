"""The run store behind ``status``: what happened, written to the ScheduledJob, coalesced.

The rule: each replica writes a job's status only when it has something new to say (it ran,
skipped or missed a slot, or a condition changed), at most once per ``interval`` per job
(default 5 s); condition changes are written at the next tick. A 1-second job therefore costs
one status write per 5 seconds per replica that ran it, not one per run. And one replica writes
at most ``writes_per_second`` statuses (default 100), whatever the number of jobs: the API
server's load (and every replica's, which sees each write as a watch event) is bounded. With
more jobs than that rate allows, each job's status is written less often than ``interval``
(10,000 jobs: every 100 s), condition changes first; what is pending meanwhile is coalesced
(counts added up, only the run records the status can show kept).

The kubernetes slot lock's claim is a status write of its own, one per slot: it carries what
this replica has pending for the job (``carry``), so with that backend status rides along at
claim rate and this writer only writes what no claim took (a job whose slots other replicas
win, a condition set between slots).

Writes are merges onto the newest known body, with its resourceVersion as a precondition:
counts are added, recent runs merged, ``lastScheduleTime`` only moves forward, and other
replicas' active runs are kept. On a conflict the merge starts again from a fresh read. A
write that may have landed although it failed (a 5xx, a cancellation) is kept *in doubt*: the
next write looks whether the object shows its run records before it adds its counts again.
That look is exact, as every write names the version it merges onto as its precondition, but
for one case: none of its runs is among the newest ``history`` that recentRuns keeps (runs
reported long after they ran), and then it is written again. (The kubernetes lock waits for the
answer to a claim cancelled in flight, so only a failed answer leaves its status in doubt.)
"""

import asyncio
import collections
import contextlib
import dataclasses
import logging
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from punctual.contracts import protocols, records
from punctual.kube import events, objects, status
from punctual.scheduling import overlap, slots, timeline

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

_COUNT_KEYS = {
    records.RunResult.SUCCEEDED: "succeeded",
    records.RunResult.FAILED: "failed",
    records.RunResult.TIMED_OUT: "timedOut",
    records.RunResult.SKIPPED_OVERLAP: "skippedOverlap",
    records.RunResult.MISSED: "missed",
    records.RunResult.LOST: "lost",
}
_RUNS = {records.RunResult.SUCCEEDED, records.RunResult.FAILED, records.RunResult.TIMED_OUT}
MIN_BATCH = 4
"""Writes a tick may start whatever the spread (a few writes at once cost nothing)."""
ACTIVE_HEARTBEAT = 30.0
"""Seconds: a run in progress is stated again at least this often, with a fresh
``heartbeatTime``, so that a heartbeat older than this tells users its replica stopped."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Condition:
    type: str
    status: bool
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class History:
    succeeded: int = 3
    failed: int = 3

    def shown(
        self,
        newest_first: Iterable[_T],
        *,
        succeeded: Callable[[_T], bool],
        key: Callable[[_T], str] | None = None,
    ) -> list[_T]:
        """Of ``newest_first``, what a status shows: the first ``succeeded`` successes and
        ``failed`` others (and, with ``key``, the first of each key only)."""
        seen: set[str] = set()
        room = {True: self.succeeded, False: self.failed}
        kept: list[_T] = []
        for item in newest_first:
            success = succeeded(item)
            if room[success] <= 0:
                continue
            if key is not None:
                name = key(item)
                if name in seen:
                    continue
                seen.add(name)
            room[success] -= 1
            kept.append(item)
        return kept


@dataclass
class _Pending:
    """What this replica has to say about one job since its last write."""

    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    run_records: list[records.RunRecord] = field(default_factory=list)
    claimed: datetime | None = None
    conditions: dict[str, Condition] = field(default_factory=dict)
    observed_generation: int | None = None
    since: float = 0.0
    urgent: bool = False
    heartbeat: bool = False
    """The runs in progress are due to be stated again (with a fresh ``heartbeatTime``)."""
    in_doubt: list["_Pending"] = field(default_factory=list)
    """Earlier writes that failed but may have landed, each on its own (none of them in doubt
    itself): delivered again only if the object does not show them (``settled``)."""

    def absorb(self, older: "_Pending") -> None:
        """Take back what a failed write could not deliver."""
        self.counts.update(older.counts)
        self.run_records[:0] = older.run_records
        self.claimed = _latest(self.claimed, older.claimed)
        self.conditions = {**older.conditions, **self.conditions}
        if self.observed_generation is None:
            self.observed_generation = older.observed_generation
        self.since = min(self.since, older.since)
        self.urgent = self.urgent or older.urgent
        self.heartbeat = self.heartbeat or older.heartbeat
        self.in_doubt[:0] = older.in_doubt

    @property
    def empty(self) -> bool:
        return not (
            self.counts
            or self.run_records
            or self.claimed
            or self.conditions
            or self.observed_generation is not None
            or self.heartbeat
        )

    def settled(self, current: Mapping[str, Any]) -> "_Pending":
        """What to write onto ``current``: this, and the writes in doubt it does not show (a
        copy: the write built on it may fail in turn). Those it shows had landed: forgotten."""
        self.in_doubt = [doubtful for doubtful in self.in_doubt if not _shows(current, doubtful)]
        settled = _Pending(
            counts=collections.Counter(self.counts),
            run_records=list(self.run_records),
            claimed=self.claimed,
            conditions=dict(self.conditions),
            observed_generation=self.observed_generation,
            since=self.since,
            urgent=self.urgent,
            heartbeat=self.heartbeat,
        )
        for doubtful in self.in_doubt:
            settled.absorb(doubtful)
        return settled

    def doubted(self) -> "_Pending":
        """This after a write of it failed in a way that may have landed."""
        fresh = dataclasses.replace(self, in_doubt=[])
        return _Pending(
            since=self.since,
            urgent=self.urgent,
            in_doubt=[*([] if fresh.empty else [fresh]), *self.in_doubt],
        )


class StatusStore:
    def __init__(
        self,
        *,
        api: status.StatusApi,
        cache: objects.ObjectCache,
        replica: str,
        wall: protocols.WallClock,
        interval: timedelta = timedelta(seconds=5),
        tick: timedelta = timedelta(milliseconds=250),
        concurrency: int = 16,
        writes_per_second: int = 100,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if writes_per_second < 1:
            raise ValueError("writes_per_second must be at least 1")
        self._api = api
        self._cache = cache
        self._replica = replica
        self._wall = wall
        self._interval = interval.total_seconds()
        self._tick = tick.total_seconds()
        self._writers = asyncio.Semaphore(concurrency)
        self._rate = float(writes_per_second)
        self._burst = max(1.0, self._rate * self._tick)
        self._allowance = self._burst
        """Writes that may start now: refilled at ``_rate`` per second, up to a tick's worth
        (no burst: every second starts ``_rate`` writes at most, give or take one tick's)."""
        self._refilled: float | None = None
        self._clock = clock or (lambda: asyncio.get_running_loop().time())
        self._pending: dict[slots.JobRef, _Pending] = {}
        """In insertion order, which is the order of ``since``."""
        self._urgent: set[slots.JobRef] = set()
        self._active: collections.defaultdict[slots.JobRef, dict[datetime, records.ActiveRun]] = (
            collections.defaultdict(dict)
        )
        self._upcoming: dict[slots.JobRef, datetime] = {}
        self._history: dict[slots.JobRef, History] = {}
        self._stated: dict[slots.JobRef, float] = {}
        """When each job's runs in progress were last written (``_clock``)."""
        self._next_heartbeat = 0.0
        self._closing = False

    # The RunStore seam: called by the scheduler, never blocks.

    def slot_upcoming(self, job: slots.JobRef, *, scheduled_time: datetime) -> None:
        self._upcoming[job] = scheduled_time  # written along with the next change, if any

    def run_started(self, job: slots.JobRef, run: records.ActiveRun) -> None:
        self._active[job][run.slot] = run
        self._note(job).claimed = _latest(self._note(job).claimed, run.slot)

    def run_finished(self, job: slots.JobRef, record: records.RunRecord) -> None:
        runs = self._active.get(job)
        if runs is not None:
            runs.pop(record.slot, None)
            if not runs:
                del self._active[job]
        pending = self._note(job)
        pending.counts[_COUNT_KEYS[record.result]] += 1
        pending.run_records.append(record)
        _trim(pending.run_records, self._history.get(job, History()))
        pending.claimed = _latest(pending.claimed, record.slot)
        if record.result in (
            records.RunResult.FAILED,
            records.RunResult.TIMED_OUT,
            records.RunResult.LOST,
        ):
            self._warn(
                job,
                f"Run{record.result}",
                f"slot {timeline.rfc3339(record.slot)}: {record.message}",
            )

    def slots_missed(self, job: slots.JobRef, *, count: int, newest: datetime) -> None:
        pending = self._note(job)
        pending.counts["missed"] += count
        pending.claimed = _latest(pending.claimed, newest)
        message = f"{count} slot(s) missed, the newest {timeline.rfc3339(newest)}"
        pending.run_records.append(
            records.RunRecord(
                slot=newest,
                scheduled_time=newest,
                result=records.RunResult.MISSED,
                message=message,
                replica=self._replica,
            )
        )
        self._warn(job, "SlotsMissed", message)

    def slot_overlapped(
        self, job: slots.JobRef, *, slot: datetime, policy: overlap.ConcurrencyPolicy
    ) -> None:
        pass  # what the policy did shows in the run records; overlaps are counted in metrics

    # Called by the controller.

    def configure(self, job: slots.JobRef, *, history: History) -> None:
        self._history[job] = history

    def set_condition(self, job: slots.JobRef, condition: Condition, *, generation: int) -> None:
        """Write ``condition`` at the next tick, unless the object already says exactly that.

        An operator restart re-observes every object and sets the conditions it had: writing
        them again would cost one API write per object (and one watch event per object on
        every replica) to say nothing new.
        """
        pending = self._pending.get(job)
        if (pending is None or condition.type not in pending.conditions) and self._says_already(
            job, condition, generation=generation
        ):
            return
        pending = self._note(job)
        pending.conditions[condition.type] = condition
        pending.observed_generation = generation
        pending.urgent = True
        self._urgent.add(job)

    def forget(self, job: slots.JobRef) -> None:
        for table in (self._pending, self._active, self._upcoming, self._history, self._stated):
            table.pop(job, None)
        self._urgent.discard(job)

    async def run(self) -> None:
        """Write what is due, every tick, until closed or cancelled; then write everything left."""
        try:
            while not self._closing:
                await asyncio.sleep(self._tick)
                await self._flush(due_only=True)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._flush(due_only=False))

    def close(self) -> None:
        """End ``run`` gracefully: after the writes of its current tick, it writes everything
        left and returns. Await ``run`` (its task) for that final flush to be done.

        Cancelling ``run`` instead would cut the writes in flight; closing lets them finish.
        """
        self._closing = True

    async def _flush(self, *, due_only: bool) -> None:
        now = self._clock()
        if due_only and now >= self._next_heartbeat:
            self._next_heartbeat = now + 1.0
            self._restate_active(now)
        due = self._due(now, limit=self._allowed(now)) if due_only else list(self._pending)
        self._allowance -= len(due)
        await asyncio.gather(*(self._write(job) for job in due))

    def _allowed(self, now: float) -> int:
        """How many writes may start now (``writes_per_second``)."""
        if self._refilled is not None:
            refill = (now - self._refilled) * self._rate
            self._allowance = min(self._burst, self._allowance + refill)
        self._refilled = now
        return max(0, math.floor(self._allowance + 1e-9))  # 0.1 s × 10/s is 0.9999…

    def _restate_active(self, now: float) -> None:
        """Runs in progress whose last statement is older than ``ACTIVE_HEARTBEAT`` are due
        again (a Job running for hours: its heartbeat shows this replica still has it)."""
        for job in self._active:
            if job not in self._pending and now - self._stated.get(job, now) >= ACTIVE_HEARTBEAT:
                self._note(job).heartbeat = True

    def _due(self, now: float, *, limit: int) -> list[slots.JobRef]:
        """The urgent jobs, then the others whose interval is over, oldest first: at most a
        tick's share of all that is pending (and at least ``MIN_BATCH``), and ``limit`` in all.

        Jobs that became pending together (armed together, runs on the same second) would
        otherwise be written together every interval, for ever: a bunch of writes, and as many
        watch events on every replica, all ready on the event loop at once while timers wait.
        Spread evenly, the writes keep the same average rate. ``_pending`` keeps insertion
        order, which is the order of ``since`` (a write that failed goes back at the end and
        waits at most one more interval).
        """
        urgent = [job for job in self._urgent if job in self._pending][:limit]
        budget = max(MIN_BATCH, math.ceil(len(self._pending) * self._tick / self._interval))
        budget = min(budget, limit - len(urgent))
        regular: list[slots.JobRef] = []
        for job, pending in self._pending.items():
            if len(regular) >= budget or now - pending.since < self._interval:
                break
            if not pending.urgent:
                regular.append(job)
        return urgent + regular

    async def _write(self, job: slots.JobRef) -> None:
        pending = self._pending.pop(job, None)
        self._urgent.discard(job)
        if pending is None:
            return
        async with self._writers:
            try:
                body = self._cache.get(job) or await self._api.read(job)
                for _ in range(5):
                    current = body.get("status") or {}
                    settled = pending.settled(current)
                    if settled.empty:
                        return  # what was in doubt had landed: nothing left to say
                    try:
                        body = await self._api.patch(
                            job,
                            self._compose(job, current, settled),
                            resource_version=body["metadata"]["resourceVersion"],
                        )
                    except status.ConflictError:
                        body = await self._api.read(job)
                        continue
                    self._cache.remember(body)
                    return
            except status.GoneError:
                return
            except status.UnavailableError as error:
                logger.warning("status of %s/%s not written: %s", job.namespace, job.name, error)
                pending = pending.doubted()
            except asyncio.CancelledError:
                self._keep(job, pending.doubted())  # for the final flush at shutdown
                raise
            except Exception:  # a bug: this job's write failed, the writer (every job's) goes on
                logger.exception("status of %s/%s not written", job.namespace, job.name)
                pending = pending.doubted()
        self._keep(job, pending)

    @contextlib.contextmanager
    def carry(self, job: slots.JobRef, current: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """The StatusCarrier seam: what is pending for ``job``, composed onto ``current``, for
        a status write made anyway (the kubernetes lock's claim), whose precondition must be
        the version ``current`` is the status of. Taken from this writer meanwhile; given
        back if the block raises (in doubt, unless it was a conflict)."""
        pending = self._pending.pop(job, None) or _Pending()
        self._urgent.discard(job)
        settled = pending.settled(current)
        if settled.empty:
            yield {}  # nothing to say (or only what was in doubt, and it had landed)
            return
        try:
            yield self._compose(job, current, settled)
        except status.ConflictError:
            self._keep(job, pending)  # refused as a whole: nothing of it landed
            raise
        except status.GoneError:
            raise
        except BaseException:
            self._keep(job, pending.doubted())
            raise

    def _keep(self, job: slots.JobRef, undelivered: _Pending) -> None:
        """Keep what a write could not deliver for the next tick, under anything newer."""
        newer = self._pending.pop(job, None)
        if newer is not None:
            newer.absorb(undelivered)
            undelivered = newer
        self._pending[job] = undelivered
        if undelivered.urgent:
            self._urgent.add(job)

    def _compose(
        self, job: slots.JobRef, current: Mapping[str, Any], pending: _Pending
    ) -> dict[str, Any]:
        history = self._history.get(job, History())
        counts = collections.Counter(dict.fromkeys(_COUNT_KEYS.values(), 0))
        counts.update(current.get("counts") or {})
        counts.update(pending.counts)
        new_runs = [_as_run(record) for record in pending.run_records]
        # A run recorded Lost here belonged to a replica that died: its entry in active goes.
        lost = {run["slot"] for run in new_runs if run["result"] == records.RunResult.LOST.value}
        recent = _recent([*new_runs, *(current.get("recentRuns") or [])], history)
        composed: dict[str, Any] = {
            "counts": dict(counts),
            "recentRuns": recent,
            "active": [
                *(
                    run
                    for run in current.get("active") or []
                    if run.get("replica") != self._replica and run.get("slot") not in lost
                ),
                *(
                    _as_active(run, heartbeat=self._wall())
                    for run in self._active.get(job, {}).values()
                ),
            ],
        }
        self._stated[job] = self._clock()
        last_run = _newest([current.get("lastRun"), *(r for r in new_runs if r["result"] in _RUNS)])
        if last_run is not None:
            composed["lastRun"] = last_run
        succeeded = [
            r["finishedAt"] for r in new_runs if r["result"] == records.RunResult.SUCCEEDED
        ]
        last_success = _max_text([current.get("lastSuccessfulTime"), *succeeded])
        if last_success is not None:
            composed["lastSuccessfulTime"] = last_success
        known_last = _instant(current.get("lastScheduleTime"))
        if pending.claimed is not None and (known_last is None or pending.claimed > known_last):
            composed["lastScheduleTime"] = timeline.rfc3339(pending.claimed)
        if job in self._upcoming:
            composed["nextRunTime"] = timeline.rfc3339(self._upcoming[job])
        if pending.conditions:
            composed["conditions"] = _merge_conditions(
                current.get("conditions") or [],
                pending.conditions.values(),
                generation=pending.observed_generation,
                now=self._wall(),
            )
        if pending.observed_generation is not None:
            composed["observedGeneration"] = pending.observed_generation
        return composed

    def _says_already(self, job: slots.JobRef, condition: Condition, *, generation: int) -> bool:
        """Whether the newest known body has ``condition`` as it is, for ``generation``."""
        body = self._cache.get(job)
        current = (body or {}).get("status") or {}
        if current.get("observedGeneration") != generation:
            return False
        for known in current.get("conditions") or []:
            if known.get("type") == condition.type:
                return bool(
                    known.get("status") == ("True" if condition.status else "False")
                    and known.get("reason") == condition.reason
                    and known.get("message") == condition.message
                    and known.get("observedGeneration") == generation
                )
        return False

    def _note(self, job: slots.JobRef) -> _Pending:
        pending = self._pending.get(job)
        if pending is None:
            pending = self._pending[job] = _Pending(since=self._clock())
        return pending

    def _warn(self, job: slots.JobRef, reason: str, message: str) -> None:
        body = self._cache.get(job)
        if body is not None:
            events.warn(body, reason=reason, message=message)


def _trim(run_records: list[records.RunRecord], history: History) -> None:
    """Drop the records ``run_records`` has beyond what a status shows: the newest
    ``history.succeeded`` successes and ``history.failed`` others (a job whose status is
    written rarely would otherwise pile up a record per run). Records come oldest first."""
    if len(run_records) <= history.succeeded + history.failed:
        return
    shown = history.shown(
        reversed(run_records), succeeded=lambda record: record.result == records.RunResult.SUCCEEDED
    )
    run_records[:] = reversed(shown)


def _latest(first: datetime | None, second: datetime | None) -> datetime | None:
    candidates = [instant for instant in (first, second) if instant is not None]
    return max(candidates) if candidates else None


def _shows(current: Mapping[str, Any], batch: _Pending) -> bool:
    """Whether ``current`` holds a run record of ``batch``: the write that carried it landed."""
    runs: list[Mapping[str, Any]] = current.get("recentRuns") or []
    return any(
        _as_run(record).items() <= run.items() for record in batch.run_records for run in runs
    )


def _as_run(record: records.RunRecord) -> dict[str, Any]:
    run: dict[str, Any] = {
        "slot": timeline.rfc3339(record.slot),
        "scheduledTime": timeline.rfc3339(record.scheduled_time),
        "result": record.result.value,
        "message": record.message,
        "replica": record.replica,
    }
    if record.started_at is not None:
        run["startedAt"] = timeline.rfc3339(record.started_at)
    if record.finished_at is not None:
        run["finishedAt"] = timeline.rfc3339(record.finished_at)
    if record.lateness is not None:
        run["latenessMillis"] = record.lateness // timedelta(milliseconds=1)
    if record.duration is not None:
        run["durationMillis"] = record.duration // timedelta(milliseconds=1)
    return run


def _as_active(run: records.ActiveRun, *, heartbeat: datetime) -> dict[str, Any]:
    active: dict[str, Any] = {
        "slot": timeline.rfc3339(run.slot),
        "startedAt": timeline.rfc3339(run.started_at),
        "replica": run.replica,
        "heartbeatTime": timeline.rfc3339(heartbeat),
    }
    if run.job_name is not None:
        active["jobName"] = run.job_name
    if run.attempt > 1:
        active["attempt"] = run.attempt
    return active


def _instant(text: Any) -> datetime | None:
    """``text`` as an instant; None for what this operator cannot read.

    Status is outside input: whoever may write ``scheduledjobs/status`` can put there any
    timestamp the API server's date-time check accepts, and it accepts forms Python does not
    read (a lowercase ``z``) or cannot hold in UTC (``0001-01-01T00:00:00+01:00``). Such a
    value counts as absent, and the write replaces it, instead of failing every write.
    """
    try:
        return timeline.parse_rfc3339(text)
    except (TypeError, ValueError):
        return None


def _readable(run: Mapping[str, Any] | None) -> bool:
    return run is not None and _instant(run.get("slot")) is not None


def _slot_key(run: Mapping[str, Any]) -> datetime:
    return timeline.parse_rfc3339(run["slot"])


def _recent(runs: list[dict[str, Any]], history: History) -> list[dict[str, Any]]:
    """Newest first, one entry per slot, at most ``history`` successes and failures (entries
    whose slot cannot be read are dropped)."""
    return history.shown(
        sorted(filter(_readable, runs), key=_slot_key, reverse=True),
        succeeded=lambda run: run["result"] == records.RunResult.SUCCEEDED,
        # A lost run and its retry are two entries of the same slot.
        key=lambda run: f"{run['slot']}/{run['result'] == records.RunResult.LOST}",
    )


def _newest(runs: list[Mapping[str, Any] | None]) -> Mapping[str, Any] | None:
    present = [run for run in runs if run is not None and _readable(run)]
    return max(present, key=_slot_key) if present else None


def _max_text(timestamps: list[str | None]) -> str | None:
    present = [text for text in timestamps if text and _instant(text) is not None]
    return max(present, key=timeline.parse_rfc3339) if present else None


def _merge_conditions(
    current: list[Mapping[str, Any]],
    updates: "collections.abc.Iterable[Condition]",
    *,
    generation: int | None,
    now: datetime,
) -> list[dict[str, Any]]:
    merged = {condition["type"]: dict(condition) for condition in current}
    for update in updates:
        text_status = "True" if update.status else "False"
        previous = merged.get(update.type)
        changed = previous is None or previous.get("status") != text_status
        merged[update.type] = {
            "type": update.type,
            "status": text_status,
            "reason": update.reason,
            "message": update.message,
            "lastTransitionTime": (
                timeline.rfc3339(now.replace(microsecond=0))
                if changed
                else previous["lastTransitionTime"]  # type: ignore[index]
            ),
            **({"observedGeneration": generation} if generation is not None else {}),
        }
    return list(merged.values())
