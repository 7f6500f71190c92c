"""Tenants: does tenant A, running every attack it still can at once, harm tenant B?

Punctual is installed once for every namespace, so one team's ScheduledJobs must never slow,
duplicate, lose, read, write or trim another's. This benchmark runs one set of operator replicas
(the Redis lock, the bundled Redis's settings: ``noeviction``) watching two namespaces, and
measures tenant B's ``--jobs`` HTTP jobs ``every: 1s`` at a receiver of their own (a process of
its own: arrival minus ``X-Punctual-Scheduled-Time``), plus one queue job of B's on its stream:

1. baseline: B alone for ``--window`` seconds;
2. attack: the same B jobs while tenant A creates, all at once, and keeps running:
   ``--failing`` jobs every 1s whose target answers 500 (a flood of Warning Events);
   ``--hanging`` jobs at the minimum period under ``concurrencyPolicy: Allow`` whose target never
   answers (runs in flight, memory); a queue job naming B's stream with ``maxLen: 1``; specs
   that must be refused (``every: 1ms``, a schedule that never fires, a ``Host`` header, a job
   template above the size bound), ``--refused`` of each; and ``--many`` jobs every
   ``--many-every`` (status writes). The window opens when the creations start and lasts
   their duration plus ``--window`` seconds; its two parts, while A creates and after, are
   measured apart too, so that a burst's cost and a steady attack's can be told apart.

Measured: B's lateness p50/p99/max in each window and part (also apart at the slots A's
``--many`` jobs are due at too: ``every`` slots are aligned to the epoch), and the ratio of the
attack's p99 to the baseline's (target: at most 2x; each part's ratio beside it), B's duplicates
(an Idempotency-Key or queue slot seen twice) and lost slots (a slot of the window never
received), both 0; the operator's RSS sampled every half second throughout, the highest against
the chart's limit (384 MiB); per window, the replicas' event loops' time on a CPU and their time
waiting for one, runnable, while the machine's other processes had the cores; B's stream: the
entries seeded before the run all still there, every other entry B's own, none missing, and its
consumer group never delivered to (nothing of B's read, written or trimmed); where A's queue job
wrote (a key of A's namespace); how A's refused specs were refused (by the API server's schema,
or Ready False by the operator) and that none of them ever reached its target; B's status lag
(now minus ``lastScheduleTime``) and Warning Events at the end. The machine's load is printed
beside the figures: the machine may be shared. Exit status 1 if a target is missed.

Usage (``make bench-tenants`` runs it with the defaults, about 5 minutes):
  uv run --frozen python bench/tenants.py [--jobs 20] [--window 90] [--failing 20]
      [--hanging 5] [--many 1000] [--many-every 10s] [--refused 2] [--replicas 2] [--keep-logs]
"""

import argparse
import math
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import redis

from environment import (
    Environment,
    create_all,
    environment,
    harness,
    hostile_http_servers,
)
from lib.observing import Call, ReceiverProcess, main_thread_cpu_ms, proc_rss_mb
from lib.output import load, say
from localcluster.api import ApiError
from punctual.scheduling import durations

HostileServer = hostile_http_servers.HostileServer
CHART_MEMORY_LIMIT_MIB = 384
"""The operator container's memory limit in the chart (charts/punctual values: resources)."""
RSS_SAMPLE_SECONDS = 0.5
GRACE = 5.0
"""Seconds after a window's end before its last slots are counted lost: a slot due at the very
end arrives a little later."""
SEEDED = 100
"""Entries put on B's stream before the operator starts: unread work that must stay."""
B_STREAM = "orders"
GROUP = "workers"
STATUS_INTERVAL = "5s"
ANSWER_500 = b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n"
ANSWER_204 = b"HTTP/1.1 204 No Content\r\n\r\n"
NEVER_ANSWER = b""
HUGE_TEMPLATE_BYTES = 100 * 1024
"""Above the default --max-job-template-bytes (64 KiB), below the API server's request limit."""


# -- tenant B -------------------------------------------------------------------------------------


def b_jobs(receiver: ReceiverProcess, namespace: str, count: int) -> list[dict[str, Any]]:
    jobs = [
        harness.scheduled_job(
            namespace,
            f"b-{index:03d}",
            {
                "every": "1s",
                "target": {"http": {"url": receiver.url(f"/{namespace}/b-{index:03d}")}},
            },
        )
        for index in range(count)
    ]
    queue = {"queue": {"stream": B_STREAM, "payload": {"tenant": "b"}}}
    return [*jobs, harness.scheduled_job(namespace, "b-queue", {"every": "1s", "target": queue})]


def stream_key(namespace: str, name: str) -> str:
    """Where the queue target appends (docs/targets.md): a key of the job's own namespace."""
    return f"punctual:ns:{{{namespace}}}:stream:{name}"


# -- tenant A -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Targets:
    failing: HostileServer
    hanging: HostileServer
    answering: HostileServer


def attack_jobs(
    targets: Targets, namespace: str, arguments: argparse.Namespace
) -> list[dict[str, Any]]:
    """A's jobs the operator accepts and runs: failing, hanging, many, and the queue job."""
    jobs = [
        harness.scheduled_job(
            namespace,
            f"failing-{index:03d}",
            {"every": "1s", "target": {"http": {"url": targets.failing.url("/fail")}}},
        )
        for index in range(arguments.failing)
    ]
    jobs += [
        harness.scheduled_job(
            namespace,
            f"hanging-{index:03d}",
            {
                "every": "1s",
                "concurrencyPolicy": "Allow",
                "timeout": "1h",
                "target": {"http": {"url": targets.hanging.url("/hang")}},
            },
        )
        for index in range(arguments.hanging)
    ]
    jobs.append(
        harness.scheduled_job(
            namespace,
            "steals-b-stream",
            {"every": "1s", "target": {"queue": {"stream": B_STREAM, "maxLen": 1}}},
        )
    )
    jobs += [
        harness.scheduled_job(
            namespace,
            f"many-{index:04d}",
            {"every": arguments.many_every, "target": {"http": {"url": targets.answering.url()}}},
        )
        for index in range(arguments.many)
    ]
    return jobs


def refused_specs(url: str) -> dict[str, dict[str, Any]]:
    """A spec per bound that must refuse it; none may ever reach ``url``."""
    http = {"http": {"url": url}}
    big = [{"name": "X", "value": "x" * HUGE_TEMPLATE_BYTES}]
    container = {"name": "c", "image": "busybox", "env": big}
    pod = {"restartPolicy": "Never", "containers": [container]}
    template = {"spec": {"template": {"spec": pod}}}
    return {
        "every-1ms": {"every": "1ms", "target": http},
        "never-fires": {
            "schedule": "30 2 * 3 0L",
            "timeZone": "Europe/Berlin",
            "dst": {"nonexistent": "Skip"},
            "target": http,
        },
        "host-header": {
            "every": "1s",
            "target": {"http": {**http["http"], "headers": {"Host": "tenant-b.internal"}}},
        },
        "huge-template": {"every": "1s", "target": {"job": {"template": template}}},
    }


def create_refused(env: Environment, namespace: str, url: str, copies: int) -> Counter[str]:
    """POST each refused spec ``copies`` times; the kinds the API server's schema refused."""
    at_the_api: Counter[str] = Counter()
    path = f"{harness.API}/namespaces/{namespace}/scheduledjobs"
    for kind, spec in refused_specs(url).items():
        for copy in range(copies):
            body = harness.scheduled_job(namespace, f"refused-{kind}-{copy}", spec)
            try:
                env.cluster.api.post(path, body)
            except ApiError as error:
                if error.status != 422:
                    raise
                at_the_api[kind] += 1
    return at_the_api


# -- sampling ------------------------------------------------------------------------------------


class RssSampler:
    """Every replica's RSS every ``RSS_SAMPLE_SECONDS``, in a thread, from /proc."""

    def __init__(self, pids: Sequence[int]) -> None:
        self.pids = list(pids)
        self.samples: list[tuple[float, float]] = []  # (monotonic, highest MiB of any replica)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss", daemon=True)

    def __enter__(self) -> "RssSampler":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(RSS_SAMPLE_SECONDS):
            try:
                highest = max(proc_rss_mb(pid) for pid in self.pids)
            except OSError:
                continue  # a replica exiting: its last samples are in already
            self.samples.append((time.monotonic(), highest))

    def highest(self, begin: float = -math.inf, end: float = math.inf) -> float:
        return max((mib for at, mib in self.samples if begin <= at <= end), default=math.nan)


# -- figures -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    name: str
    begin: datetime
    end: datetime
    monotonic: tuple[float, float]
    load: str
    status_writes: int
    loops_ran_ms: float
    """The replicas' event loops' time on a CPU in the window, all replicas together."""
    loops_waited_ms: float
    """Their time waiting for a CPU, runnable, while the machine's other processes had them."""

    def loops(self) -> str:
        seconds = max(self.monotonic[1] - self.monotonic[0], 1e-9)
        return (
            f"replicas' event loops ran {self.loops_ran_ms / seconds:.0f} ms/s and waited for a "
            f"CPU {self.loops_waited_ms / seconds:.0f} ms/s"
        )


@dataclass(frozen=True)
class Outcome:
    lateness: harness.Spread
    with_many: harness.Spread
    """B's lateness at the slots A's ``--many`` jobs are due at too (``every`` slots are aligned
    to the epoch: all of them at once)."""
    between_many: harness.Spread
    """B's lateness at the other slots."""
    runs: int
    expected: int
    lost: int


def slot_ms(key: str) -> int:
    return int(key.rsplit("/", 1)[1])


def measure(
    window: Window,
    calls: list[Call],
    queued: set[str],
    uids: dict[str, str],
    namespace: str,
    *,
    many_every: timedelta,
) -> Outcome:
    """B's HTTP calls (lateness, also apart at the slots of A's ``--many`` jobs, due every
    ``many_every``) and queue entries (``queued``: their slot ids) of the slots in ``window``,
    against every slot of B's jobs (``uids``, by name) due in it."""
    begin_ms, end_ms = harness.millis(window.begin), harness.millis(window.end)
    inside = [call for call in calls if begin_ms < slot_ms(call.key) <= end_ms]
    entries = {key for key in queued if begin_ms < slot_ms(key) <= end_ms}
    received = {call.key for call in inside} | entries
    expected = {
        f"{namespace}/{name}/{uid}/{harness.millis(slot)}"
        for name, uid in uids.items()
        for slot in harness.every_slots(window.begin, window.end, timedelta(seconds=1))
    }
    many_ms = many_every // timedelta(milliseconds=1)
    return Outcome(
        lateness=harness.Spread.of(call.lateness_ms for call in inside),
        with_many=harness.Spread.of(
            call.lateness_ms for call in inside if slot_ms(call.key) % many_ms == 0
        ),
        between_many=harness.Spread.of(
            call.lateness_ms for call in inside if slot_ms(call.key) % many_ms != 0
        ),
        runs=len(inside) + len(entries),
        expected=len(expected),
        lost=len(expected - received),
    )


@dataclass(frozen=True)
class StreamCheck:
    seeded_kept: int
    b_entries: int
    b_slots: set[str]
    foreign_entries: int
    pending: int
    last_delivered: str
    a_key_length: int
    stream_keys: list[str]


def check_streams(url: str, namespace_a: str, namespace_b: str, seeded: list[bytes]) -> StreamCheck:
    client = redis.Redis.from_url(url)
    try:
        entries = client.xrange(stream_key(namespace_b, B_STREAM))
        ids = {entry_id for entry_id, _ in entries}
        own = [fields for entry_id, fields in entries if entry_id not in set(seeded)]
        b_job = f"{namespace_b}/b-queue".encode()
        b_slots = [fields[b"slot"] for fields in own if fields.get(b"job") == b_job]
        [group] = client.xinfo_groups(stream_key(namespace_b, B_STREAM))
        keys = sorted(key.decode() for key in client.scan_iter(_type="stream", count=1000))
        a_key = stream_key(namespace_a, B_STREAM)
        return StreamCheck(
            seeded_kept=sum(1 for entry_id in seeded if entry_id in ids),
            b_entries=len(b_slots),
            b_slots={slot.decode() for slot in b_slots},
            foreign_entries=len(own) - len(b_slots),
            pending=int(group["pending"]),
            last_delivered=group["last-delivered-id"].decode(),
            a_key_length=int(client.xlen(a_key)) if client.exists(a_key) else 0,
            stream_keys=keys,
        )
    finally:
        client.close()


def seed_stream(url: str, namespace: str) -> list[bytes]:
    """``SEEDED`` unread entries on B's stream and a consumer group that has read none."""
    client = redis.Redis.from_url(url)
    try:
        key = stream_key(namespace, B_STREAM)
        seeded = [client.xadd(key, {"seeded": str(index)}) for index in range(SEEDED)]
        client.xgroup_create(key, GROUP, id="0")
        return seeded
    finally:
        client.close()


def ready_reasons(env: Environment, namespace: str, prefix: str) -> Counter[str]:
    return Counter(
        f"{(harness.condition(body, 'Ready') or {}).get('status', '?')}/"
        f"{(harness.condition(body, 'Ready') or {}).get('reason', 'none')}"
        for name, body in harness.read_all(env.cluster, namespace).items()
        if name.startswith(prefix)
    )


def warning_events(env: Environment, namespace: str) -> int:
    listing = env.cluster.api.get(f"/api/v1/namespaces/{namespace}/events")
    return sum(event.get("count", 1) for event in listing["items"] if event["type"] == "Warning")


def status_lag_seconds(env: Environment, namespace: str) -> float:
    """The stalest B job's now minus ``lastScheduleTime``: its status writes kept up or not."""
    bodies = harness.read_all(env.cluster, namespace)
    now = harness.now()
    lags = [
        (now - last).total_seconds()
        for body in bodies.values()
        if (last := harness.last_schedule_time(body)) is not None
    ]
    return max(lags, default=math.inf)


def writes_now(env: Environment) -> int:
    return sum(harness.scheduled_job_writes(env.cluster).values())


# -- the run --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mark:
    """An instant of a run, on both clocks, with the writes so far, the machine's load and the
    replicas' event loops' CPU time so far (ran, waited for a CPU)."""

    at: datetime
    monotonic: float
    writes: int
    load: str
    loops: tuple[float, float]


def mark(env: Environment, replica_pids: Sequence[int]) -> Mark:
    try:
        times = [main_thread_cpu_ms(pid) for pid in replica_pids]
    except OSError:  # a replica gone: the window's CPU figures are unknown, the rest still holds
        times = [(math.nan, math.nan)]
    return Mark(
        at=harness.now(),
        monotonic=time.monotonic(),
        writes=writes_now(env),
        load=load(),
        loops=(sum(ran for ran, _ in times), sum(waited for _, waited in times)),
    )


def between(name: str, begin: Mark, end: Mark) -> Window:
    return Window(
        name=name,
        begin=begin.at,
        end=end.at,
        monotonic=(begin.monotonic, end.monotonic),
        load=end.load,
        status_writes=end.writes - begin.writes,
        loops_ran_ms=end.loops[0] - begin.loops[0],
        loops_waited_ms=end.loops[1] - begin.loops[1],
    )


def wait_for_every_b_job(receiver: ReceiverProcess, names: set[str]) -> None:
    deadline = time.monotonic() + 120
    seen: set[str] = set()
    while not names <= seen:
        if time.monotonic() > deadline:
            raise SystemExit(f"B's jobs {sorted(names - seen)} did not run within 120s")
        time.sleep(1)
        seen |= {call.key.split("/")[1] for call in receiver.dump("warm-up")}
    say(f"every one of B's {len(names)} HTTP jobs ran")


@dataclass(frozen=True)
class Report:
    arguments: argparse.Namespace
    a_stream: str
    windows: list[Window]
    outcomes: list[Outcome]
    duplicates: int
    rss_highest: list[float]
    rss_throughout: float
    streams: StreamCheck
    refused_at_api: Counter[str]
    refused_in_status: Counter[str]
    refused_reached: int
    attack_reasons: Counter[str]
    attack_requests: dict[str, int]
    b_status_lag: float
    b_warnings: int
    a_warnings: int
    load_before: str

    def lines(self) -> Iterator[tuple[str, bool | None]]:
        """The table's lines, each with its verdict (None: a figure, no target)."""
        arguments = self.arguments
        baseline, attack, creating, after = self.outcomes
        yield (f"load: before {self.load_before}", None)
        for window, outcome, rss in zip(self.windows, self.outcomes, self.rss_highest, strict=True):
            seconds = (window.end - window.begin).total_seconds()
            yield (
                f"  {window.name:<17} {seconds:3.0f}s  B lateness {outcome.lateness}; runs "
                f"{outcome.runs} of {outcome.expected} slots, lost {outcome.lost}; RSS max "
                f"{rss:.0f} MiB; status writes {window.status_writes}; {window.load}",
                outcome.lost == 0,
            )
            yield (f"  {'':<17}       {window.loops()}", None)
            yield (
                f"  {'':<17}       B due with A's --many jobs (every {arguments.many_every}) "
                f"{outcome.with_many}; at the other slots {outcome.between_many}",
                None,
            )

        def ratio(outcome: Outcome) -> float:
            return outcome.lateness.p99 / max(baseline.lateness.p99, 1.0)

        yield (
            f"B's p99 under attack: {ratio(attack):.2f}x the baseline's (while A creates "
            f"{ratio(creating):.2f}x, after {ratio(after):.2f}x; target: at most 2x)",
            ratio(attack) <= 2,
        )
        yield (
            f"B's duplicates (a slot received or enqueued twice): {self.duplicates}",
            self.duplicates == 0,
        )
        limit = CHART_MEMORY_LIMIT_MIB
        yield (
            f"operator RSS, highest of any replica throughout: {self.rss_throughout:.0f} MiB "
            f"(the chart's limit: {limit} MiB)",
            self.rss_throughout < limit,
        )
        streams = self.streams
        yield (
            f"B's stream: {streams.seeded_kept} of {SEEDED} seeded entries kept, "
            f"{streams.b_entries} entries of B's queue job ({len(streams.b_slots)} distinct "
            f"slots), {streams.foreign_entries} from anyone else; group {GROUP!r}: pending "
            f"{streams.pending}, last delivered {streams.last_delivered}",
            streams.seeded_kept == SEEDED
            and streams.foreign_entries == 0
            and streams.b_entries == len(streams.b_slots)
            and streams.pending == 0
            and streams.last_delivered == "0-0",
        )
        yield (
            f"A's queue job (stream {B_STREAM!r}, maxLen 1) wrote {self.a_stream} "
            f"(length {streams.a_key_length}); stream keys in Redis: {streams.stream_keys}",
            self.a_stream in streams.stream_keys and len(streams.stream_keys) == 2,
        )
        kinds = len(refused_specs("http://unused"))
        refused = sum(self.refused_at_api.values()) + sum(
            count for reason, count in self.refused_in_status.items() if reason.startswith("False/")
        )
        yield (
            f"A's refused specs: {refused} of {kinds * arguments.refused} refused (by the API "
            f"server: {dict(self.refused_at_api)}; by the operator: "
            f"{dict(self.refused_in_status)}); requests that reached their target: "
            f"{self.refused_reached}",
            refused == kinds * arguments.refused and self.refused_reached == 0,
        )
        yield (f"A's accepted jobs at the end: {dict(self.attack_reasons)}", None)
        yield (f"requests A's targets got: {self.attack_requests}", None)
        yield (
            f"B at the end: stalest status {self.b_status_lag:.1f}s behind its last slot "
            f"(status interval {STATUS_INTERVAL}), Warning Events {self.b_warnings} "
            f"(A's: {self.a_warnings})",
            self.b_warnings == 0,
        )


def run(env: Environment, arguments: argparse.Namespace, load_before: str) -> Report:
    namespace_a, namespace_b = f"{env.namespace}-a", f"{env.namespace}-b"
    for namespace in (namespace_a, namespace_b):
        env.cluster.api.post(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        )
    seeded = seed_stream(env.redis.url, namespace_b)
    receiver = ReceiverProcess(env.run_dir)
    try:
        with (
            HostileServer(ANSWER_500, name="answers 500") as failing,
            HostileServer(NEVER_ANSWER, name="never answers") as hanging,
            HostileServer(ANSWER_204, name="answers 204") as answering,
            HostileServer(ANSWER_204, name="must not be called") as refused_target,
            harness.Operators(
                env.cluster,
                env.run_dir,
                namespace=namespace_a,
                replicas=arguments.replicas,
                lock_backend="redis",
                redis_url=env.redis.url,
                status_interval=STATUS_INTERVAL,
                extra_args=["--namespace", namespace_b],
            ) as operators,
            RssSampler([replica.process.pid for replica in operators.replicas.values()]) as rss,
        ):
            targets = Targets(failing, hanging, answering)
            pids = rss.pids
            say(f"B: {arguments.jobs} HTTP jobs and a queue job, every 1s")
            harness.apply(env.cluster, *b_jobs(receiver, namespace_b, arguments.jobs))
            uids = {
                name: body["metadata"]["uid"]
                for name, body in harness.read_all(env.cluster, namespace_b).items()
            }
            wait_for_every_b_job(receiver, set(uids) - {"b-queue"})
            say(f"baseline: B alone for {arguments.window:.0f}s")
            alone = mark(env, pids)
            time.sleep(arguments.window)
            baseline = between("baseline", alone, mark(env, pids))
            say("attack: A creates every attack at once")
            attack_begins = mark(env, pids)
            create_all(env.cluster, namespace_a, attack_jobs(targets, namespace_a, arguments))
            refused_at_api = create_refused(
                env, namespace_a, refused_target.url("/refused"), arguments.refused
            )
            created = mark(env, pids)
            say(f"attack: created in {created.monotonic - attack_begins.monotonic:.0f}s; "
                f"measuring {arguments.window:.0f}s more")  # fmt: skip
            time.sleep(arguments.window)
            attack_ends = mark(env, pids)
            time.sleep(GRACE)
            b_status_lag = status_lag_seconds(env, namespace_b)
            refused_in_status = ready_reasons(env, namespace_a, "refused-")
            attack_reasons = ready_reasons(env, namespace_a, "") - refused_in_status
            b_warnings = warning_events(env, namespace_b)
            a_warnings = warning_events(env, namespace_a)
            attack_requests = {
                "500": failing.connections().requests,
                "never": hanging.connections().requests,
                "204": answering.connections().requests,
            }
            refused_reached = refused_target.connections().requests
            operators.stop()
        calls = receiver.dump("all")
    finally:
        receiver.stop()
    streams = check_streams(env.redis.url, namespace_a, namespace_b, seeded)
    duplicates = sum(1 for count in receiver.seen.values() if count > 1)
    duplicates += streams.b_entries - len(streams.b_slots)
    windows = [
        baseline,
        between("attack", attack_begins, attack_ends),
        between("  while A creates", attack_begins, created),
        between("  after", created, attack_ends),
    ]
    return Report(
        arguments=arguments,
        a_stream=stream_key(namespace_a, B_STREAM),
        windows=windows,
        outcomes=[
            measure(
                window,
                calls,
                streams.b_slots,
                uids,
                namespace_b,
                many_every=durations.parse(arguments.many_every, field="--many-every"),
            )
            for window in windows
        ],
        duplicates=duplicates,
        rss_highest=[rss.highest(*window.monotonic) for window in windows],
        rss_throughout=rss.highest(),
        streams=streams,
        refused_at_api=refused_at_api,
        refused_in_status=refused_in_status,
        refused_reached=refused_reached,
        attack_reasons=attack_reasons,
        attack_requests=attack_requests,
        b_status_lag=b_status_lag,
        b_warnings=b_warnings,
        a_warnings=a_warnings,
        load_before=load_before,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20, help="B's HTTP jobs every 1s")
    parser.add_argument("--window", type=float, default=90.0, metavar="SECONDS")
    parser.add_argument("--failing", type=int, default=20, help="A's jobs answered 500")
    parser.add_argument("--hanging", type=int, default=5, help="A's jobs never answered")
    parser.add_argument("--many", type=int, default=1000, help="A's jobs for status writes")
    parser.add_argument("--many-every", default="10s", metavar="DURATION")
    parser.add_argument("--refused", type=int, default=2, help="copies of each refused spec")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--keep-logs", action="store_true")
    arguments = parser.parse_args(argv)
    load_before = load()
    with environment("tenants", keep=arguments.keep_logs) as env:
        report = run(env, arguments, load_before)
    print(
        f"\n=== tenants: B {arguments.jobs} HTTP jobs + 1 queue job every 1s; A {arguments.failing}"
        f" failing, {arguments.hanging} hanging (Allow), 1 queue job on B's stream name, "
        f"{arguments.many} every {arguments.many_every}, {arguments.refused} of each refused "
        f"spec; {arguments.replicas} replicas (redis lock), {arguments.window:.0f}s windows ==="
    )
    ok = True
    for line, verdict in report.lines():
        ok = ok and verdict is not False
        mark = "" if verdict is None else (" OK" if verdict else " MISSED")
        print(f"{line}{mark}")
    print(f"verdict: {'OK' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
