"""Chaos: operator replicas SIGKILLed at random while many 1-second jobs run; no slot twice.

Three replicas (``--replicas``) schedule ``--jobs`` ScheduledJobs ``every: 1s`` whose HTTP target
is a receiver that records every Idempotency-Key. Every ``--kill-every`` seconds a random
replica is SIGKILLed (no shutdown, no last status write, as when a node dies) and started again
at once. After ``--minutes`` the killing stops, every replica is brought up, the status writes
settle and the replicas are stopped with SIGTERM.

Then every slot of the window is accounted for (``slot_accounting``): ran (its key arrived),
missed by policy or failed (a status record says so), lost (claimed, by a lock key or a
``lastScheduleTime`` seen by a watch, by a replica killed before its request left: what a
SIGKILL costs without durable runs, see issue 7), or unexplained (must be 0). Duplicates (a key
arriving twice) must be 0. Exit status 1 if either is not.

Usage (``make chaos`` runs the first with the defaults):
  uv run --frozen python bench/chaos.py [--backend redis|kubernetes] [--jobs 50] [--minutes 5]
      [--replicas 3] [--kill-every 15] [--seed 7] [--keep-logs]
"""

import argparse
import collections
import json
import random
import ssl
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import redis

import slot_accounting
from environment import Environment, environment, failure_harness, harness
from lib.output import load, say
from localcluster.certs import ClusterCerts

API = harness.API
Operators = harness.Operators
Spread = harness.Spread
apply = harness.apply
from_millis = harness.from_millis
http_target = harness.http_target
now = harness.now
read_all = harness.read_all
scheduled_job = harness.scheduled_job

EVERY = timedelta(seconds=1)
STATUS_INTERVAL = "5s"
"""The operator's default: the figures are those of a production configuration."""
STATUS_POLL = 2.0
"""How often status is listed, so that no non-success record scrolls out of recentRuns unseen."""
CLAIM_SCAN = 10.0
"""How often the Redis lock keys are collected (they expire after the lock TTL)."""
FAILED_HISTORY = 100
"""The most status keeps: every Failed, SkippedOverlap and Missed record stays visible."""
LOST_NEAR_KILL = timedelta(seconds=10)
"""A lost slot is explained by a kill of its holder at most this long after the slot: a run in
flight, or a Missed/SkippedOverlap record still waiting for the status write (5 s interval)."""


@dataclass
class Observations:
    """What the observer threads collected while the replicas were being killed."""

    records: dict[tuple[str, datetime], slot_accounting.Record] = field(default_factory=dict)
    claims: dict[tuple[str, datetime], str] = field(default_factory=dict)
    """(job, slot) -> holder (``r2:1234`` for Redis; ``?`` for the kubernetes lock)."""
    watch_resyncs: int = 0
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Observer(threading.Thread):
    """Calls ``step`` every ``interval`` seconds until stopped; counts (never raises) errors."""

    def __init__(
        self, name: str, step: Callable[[], None], interval: float, seen: Observations
    ) -> None:
        super().__init__(name=name, daemon=True)
        self._step = step
        self._interval = interval
        self._seen = seen
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                self._step()
            except Exception as error:  # an observer must outlive a hiccup of what it watches
                with self._seen.lock:
                    self._seen.errors[f"{self.name}: {type(error).__name__}"] += 1
            self._halt.wait(self._interval)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)
        self._step()  # one last look


def poll_status(env: Environment, seen: Observations) -> Callable[[], None]:
    def step() -> None:
        for name, body in read_all(env.cluster, env.namespace).items():
            for record in slot_accounting.records_from_status(body.get("status") or {}):
                with seen.lock:
                    seen.records[(name, record.slot)] = record

    return step


def scan_redis_claims(env: Environment, seen: Observations) -> Callable[[], None]:
    prefix = f"punctual:slot:{env.namespace}/"

    def step() -> None:
        client = redis.Redis.from_url(env.redis.url)
        try:
            keys = list(client.scan_iter(match=prefix + "*", count=1000))
            holders = client.mget(keys) if keys else []
        finally:
            client.close()
        for key, holder in zip(keys, holders, strict=True):
            _namespace, name, _uid, ms = key.decode().removeprefix("punctual:slot:").split("/")
            with seen.lock:
                seen.claims[(name, from_millis(int(ms)))] = (holder or b"?").decode()

    return step


class ScheduleTimeWatch(threading.Thread):
    """The kubernetes lock's claims: every ``status.lastScheduleTime`` a watch of the namespace's
    ScheduledJobs delivers (each claim is a compare-and-swap of it to the claimed slot)."""

    def __init__(self, env: Environment, seen: Observations) -> None:
        super().__init__(name="lastScheduleTime watch", daemon=True)
        self._env = env
        self._seen = seen
        self._halt = threading.Event()
        self.listed = threading.Event()
        """Set once the first LIST succeeded: claims from then on are all seen."""
        certs = ClusterCerts(env.cluster.run_dir / "pki")
        self._tls = ssl.create_default_context(cafile=str(certs.ca_cert))
        self._tls.load_cert_chain(str(certs.admin_cert), str(certs.admin_key))

    def _note(self, body: dict[str, object]) -> None:
        status = body.get("status") or {}
        assert isinstance(status, dict)
        last = status.get("lastScheduleTime")
        if last:
            name = body["metadata"]["name"]  # type: ignore[index]
            with self._seen.lock:
                self._seen.claims.setdefault((name, datetime.fromisoformat(last)), "?")

    def _list(self) -> str:
        listing = self._env.cluster.api.get(f"{API}/namespaces/{self._env.namespace}/scheduledjobs")
        for item in listing["items"]:
            self._note(item)
        version: str = listing["metadata"]["resourceVersion"]
        return version

    def run(self) -> None:
        version = ""
        while not self._halt.is_set():
            if not version:
                try:
                    version = self._list()
                    self.listed.set()
                except Exception as error:  # a loaded API server times out now and then
                    with self._seen.lock:
                        self._seen.errors[f"watch list: {type(error).__name__}"] += 1
                    time.sleep(0.5)
                    continue
            url = (
                f"{self._env.cluster.server}{API}/namespaces/{self._env.namespace}/scheduledjobs"
                f"?watch=1&resourceVersion={version}&timeoutSeconds=60"
            )
            try:
                with urllib.request.urlopen(url, context=self._tls, timeout=30) as stream:
                    for line in stream:
                        event = json.loads(line)
                        if event["type"] == "ERROR":  # 410 Gone: too far behind, list again
                            with self._seen.lock:
                                self._seen.watch_resyncs += 1
                            version = ""
                            break
                        self._note(event["object"])
                        version = event["object"]["metadata"]["resourceVersion"]
                        if self._halt.is_set():
                            return
            except Exception as error:  # reconnect from the last version seen
                with self._seen.lock:
                    self._seen.errors[f"watch: {type(error).__name__}"] += 1
                time.sleep(0.5)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=70)


def start_jobs(env: Environment, names: list[str]) -> None:
    apply(
        env.cluster,
        *(
            scheduled_job(
                env.namespace,
                name,
                {
                    "every": "1s",
                    "history": {"succeeded": 1, "failed": FAILED_HISTORY},
                    "target": http_target(env.receiver, env.namespace, name),
                },
            )
            for name in names
        ),
    )


def wait_for_first_calls(env: Environment, names: list[str], timeout: float = 120) -> None:
    wanted = {f"{env.namespace}/{name}" for name in names}
    deadline = time.monotonic() + timeout
    while not wanted <= {call.job for call in env.receiver.calls()}:
        if time.monotonic() > deadline:
            missing = wanted - {call.job for call in env.receiver.calls()}
            raise SystemExit(f"no call of {len(missing)} job(s) after {timeout:.0f}s")
        time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["redis", "kubernetes"], default="redis")
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument(
        "--kill-every", type=float, default=15.0, metavar="SECONDS", help="0: no kills (baseline)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep-logs", action="store_true", help="keep the run folder")
    arguments = parser.parse_args(argv)
    rng = random.Random(arguments.seed)
    names = [f"chaos-{index:03d}" for index in range(arguments.jobs)]
    load_before = load()
    with environment(f"chaos-{arguments.backend}", keep=arguments.keep_logs) as env:
        seen = Observations()
        with Operators(
            env.cluster,
            env.run_dir,
            namespace=env.namespace,
            replicas=arguments.replicas,
            lock_backend=arguments.backend,
            redis_url=env.redis.url,
            status_interval=STATUS_INTERVAL,
        ) as operators:
            # The observers start before the jobs: a claim made before a watch has listed would
            # go unseen, and its slot would look unexplained.
            observers: list[Observer | ScheduleTimeWatch] = [
                Observer("status", poll_status(env, seen), STATUS_POLL, seen)
            ]
            if arguments.backend == "redis":
                observers.append(
                    Observer("redis keys", scan_redis_claims(env, seen), CLAIM_SCAN, seen)
                )
            else:
                observers.append(ScheduleTimeWatch(env, seen))
            for observer in observers:
                observer.start()
                if isinstance(observer, ScheduleTimeWatch) and not observer.listed.wait(120):
                    raise SystemExit("the watch of ScheduledJobs never listed")
            say(f"{arguments.replicas} replicas up ({arguments.backend} lock); creating jobs")
            start_jobs(env, names)
            wait_for_first_calls(env, names)
            started = now()
            kills = chaos(operators, rng, minutes=arguments.minutes, every=arguments.kill_every)
            ended = now()
            say("chaos over; every replica up again, letting status settle")
            for replica_id in operators.replica_ids:
                if not operators[replica_id].running():
                    operators.start(replica_id, wait=False)
            for replica_id in operators.replica_ids:
                operators.wait_ready(replica_id)
            time.sleep(3 * 5 + 2)  # three status intervals: every replica's records are out
            for replica_id in operators.replica_ids:
                claims.add(operators[replica_id])
            operators.stop()
            errors = operators.problems()
        for observer in observers:
            observer.stop()
        poll_status(env, seen)()
        load_after = load()
        tallies = tally(env, names, seen, started=started, ended=ended)
        window_calls = [c for c in env.receiver.calls() if started < c.arrived <= ended]
        print_report(
            arguments,
            tallies=tallies,
            seen=seen,
            kills=kills,
            window=(ended - started).total_seconds(),
            lateness=Spread.of(call.lateness_ms for call in window_calls),
            load_before=load_before,
            load_after=load_after,
            errors=errors,
        )
    summed = slot_accounting.total(tallies)
    return 0 if summed.duplicates == 0 and summed.unexplained == 0 else 1


class ClaimOutcomes:
    """``punctual_lock_claims_total`` by outcome, summed over every replica process: each one's
    counters are read just before it is killed, and at the end."""

    def __init__(self) -> None:
        self.outcomes: collections.Counter[str] = collections.Counter()

    def add(self, replica: "harness.Replica") -> None:
        try:
            text = replica.metrics()
        except OSError:  # still starting: it claimed nothing yet
            return
        for outcome in ("won", "lost", "error"):
            self.outcomes[outcome] += int(
                failure_harness.metric(text, "punctual_lock_claims_total", outcome=outcome)
            )
        for result in ("Succeeded", "Failed", "TimedOut", "SkippedOverlap"):
            self.outcomes[f"runs {result}"] += int(
                failure_harness.metric(text, "punctual_runs_total", result=result)
            )
        self.outcomes["slots missed"] += int(
            failure_harness.metric(text, "punctual_slots_missed_total")
        )


claims = ClaimOutcomes()


def chaos(
    operators: Operators, rng: random.Random, *, minutes: float, every: float
) -> list[tuple[datetime, str]]:
    """SIGKILL a random replica every ``every`` seconds and start it again at once."""
    kills: list[tuple[datetime, str]] = []
    deadline = time.monotonic() + minutes * 60
    next_kill = time.monotonic() + every if every > 0 else deadline
    while next_kill < deadline:
        time.sleep(max(0.0, next_kill - time.monotonic()))
        victim = rng.choice(operators.replica_ids)
        claims.add(operators[victim])  # its counters die with it
        operators[victim].kill()
        kills.append((now(), victim))
        say(f"SIGKILL {victim} ({len(kills)}); starting it again")
        operators.start(victim, wait=False)
        next_kill += every
    time.sleep(max(0.0, deadline - time.monotonic()))
    return kills


def tally(
    env: Environment,
    names: list[str],
    seen: Observations,
    *,
    started: datetime,
    ended: datetime,
) -> list[slot_accounting.Tally]:
    expected = slot_accounting.expected_slots(started, ended, EVERY)
    calls = env.receiver.calls()
    tallies = []
    for name in names:
        job = f"{env.namespace}/{name}"
        with seen.lock:
            records = [r for (n, _), r in seen.records.items() if n == name]
            claimed = [slot for (n, slot) in seen.claims if n == name]
        tallies.append(
            slot_accounting.account(
                name,
                expected=expected,
                keys_received=[call.slot for call in calls if call.job == job],
                records=records,
                claimed=claimed,
                every=EVERY,
            )
        )
    return tallies


def print_report(
    arguments: argparse.Namespace,
    *,
    tallies: list[slot_accounting.Tally],
    seen: Observations,
    kills: list[tuple[datetime, str]],
    window: float,
    lateness: Spread,
    load_before: str,
    load_after: str,
    errors: dict[str, list[str]],
) -> None:
    summed = slot_accounting.total(tallies)
    print(
        f"\n=== chaos: {arguments.replicas} replicas, {arguments.backend} lock, "
        f"{arguments.jobs} jobs every 1s, {window:.0f}s window, SIGKILL every "
        f"{arguments.kill_every:.0f}s ({len(kills)} kills), seed {arguments.seed} ==="
    )
    print(f"load: before {load_before}; after {load_after}")
    for line in slot_accounting.table(tallies):
        print(f"  {line}")
    with seen.lock:
        kinds = collections.Counter(record.result for (name, slot), record in seen.records.items())
        missed = sum(r.missed_count for r in seen.records.values() if r.result == "Missed")
    print(
        f"non-success records seen: {dict(kinds)} (Missed records stand for {missed} slots; "
        "records of slots outside the window included)"
    )
    print(f"lateness at the receiver in the window: {lateness}")
    print("kills: " + ", ".join(f"{at:%H:%M:%S} {victim}" for at, victim in kills))
    explained = 0
    for slot in sorted(s for t in tallies for s in t.lost_slots):
        if any(timedelta() <= at - slot <= LOST_NEAR_KILL for at, _ in kills):
            explained += 1
    print(
        f"lost runs (claimed, never arrived, no record): {summed.lost}, of which "
        f"{explained} claimed at most {LOST_NEAR_KILL.seconds}s before a kill (in flight, or a "
        f"record not yet written); recorded Lost in status: {summed.lost_recorded}"
    )
    holders = collections.Counter(
        seen.claims.get((t.job, slot), "?").split(":")[0] for t in tallies for slot in t.lost_slots
    )
    if holders:
        print("lost runs by claiming replica: " + ", ".join(f"{r} {n}" for r, n in holders.items()))
    if summed.unexplained_slots:
        first = sorted(summed.unexplained_slots)[:20]
        print("unexplained slots (first 20): " + ", ".join(f"{slot:%H:%M:%S}" for slot in first))
    if seen.watch_resyncs:
        print(f"watch resyncs (claims between them may be unseen): {seen.watch_resyncs}")
    if seen.errors:
        print(f"observer errors: {dict(seen.errors)}")
    print(
        "lock claims and runs over the whole run, all replica processes (metrics): "
        + ", ".join(f"{outcome} {n}" for outcome, n in sorted(claims.outcomes.items()))
        + " (an error is a slot this replica could not claim: never run, never counted)"
    )
    print(f"ERROR lines in operator logs: { {r: len(lines) for r, lines in errors.items()} }")
    verdict = "OK" if summed.duplicates == 0 and summed.unexplained == 0 else "FAILED"
    print(f"verdict: {verdict} (duplicates {summed.duplicates}, unexplained {summed.unexplained})")


if __name__ == "__main__":
    sys.exit(main())
