"""A hostile HTTP target cannot hurt the operator: not its other jobs, not its health, not its
sockets.

One replica (the kubernetes slot lock, the default) runs a well-behaved job ``every: 1s`` on the
recording receiver beside four hostile jobs, each ``every: 1s`` with a 2 s timeout and a raw
TCP server of its own (``hostile_http_servers``) that answers every request with the same bytes:
a negative chunk size, a body that never ends, Content-Length with Transfer-Encoding, and a
valid answer followed by a stray second one, each then holding the connection open.

Beside them, two jobs on the recording receiver try to send a ``Host`` header (a gateway
shared by tenants would route by it, past ``--http-allowed-hosts``): one in its spec, one from
its ``headersFrom`` Secret.

For ``RUN_FOR`` seconds after every job is Ready, /healthz is polled every half second. Then:
the well-behaved job was called for every second, on time; /healthz always answered; the
invalid answers failed their runs as such; the connections the hostile servers hold stayed few;
the operator still runs; the Host header went nowhere: the spec's is InvalidSpec naming its
field, the Secret's fails every run naming the Secret and key, and neither job ever called.
"""

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hostile_http_servers import (
    ENDLESS_BODY,
    LENGTH_AND_CHUNKED,
    NEGATIVE_CHUNK,
    STRAY_ANSWER,
    Connections,
    HostileServer,
)
from operator_harness import (
    Call,
    Operators,
    Receiver,
    Replica,
    Spread,
    apply,
    assert_called_every_second,
    assert_on_time,
    condition,
    eventually,
    fmt,
    http_target,
    now,
    read_all,
    recent_runs,
    report,
    scheduled_job,
    sleep_until,
    status,
)

from localcluster import LocalCluster

pytest_plugins = ["operator_fixtures"]

SECOND = timedelta(seconds=1)
RUN_FOR = timedelta(seconds=22)
HEALTH_INTERVAL = 0.5
HEALTH_TIMEOUT = 2.0
"""``Replica.healthy``'s own timeout: a poll slower than this fails."""
ON_TIME_LATENESS_MS = 500.0
"""Generous for a shared, noisy machine; a frozen or busy event loop is late by seconds."""
MAX_OPEN_AT_ONCE = 5
MAX_OPEN_AT_THE_END = 3
INVALID_ANSWER = "invalid HTTP answer"

WELL_BEHAVED = "on-time"
ANSWERS = {
    "negative-chunk": NEGATIVE_CHUNK,
    "endless-body": ENDLESS_BODY,
    "length-and-chunked": LENGTH_AND_CHUNKED,
    "stray-answer": STRAY_ANSWER,
}
INVALID = ["negative-chunk", "length-and-chunked"]
HELD_OPEN = ["endless-body", "stray-answer"]
HOST_IN_SPEC = "host-in-spec"
HOST_FROM_SECRET = "host-from-secret"
ROUTING_SECRET = "routing"


@dataclass(frozen=True, slots=True)
class Poll:
    at: datetime
    answered: bool
    seconds: float
    error: str


@dataclass
class HealthLog:
    """GET /healthz of ``replica`` every ``interval`` seconds, by a thread of its own."""

    replica: Replica
    interval: float = HEALTH_INTERVAL
    polls: list[Poll] = field(default_factory=list)
    _halt: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> "HealthLog":
        self._thread = threading.Thread(target=self._follow, name="healthz log", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._halt.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _follow(self) -> None:
        while not self._halt.is_set():
            at, started = now(), time.monotonic()
            try:
                answered, error = self.replica.healthy(), ""
            except Exception as failure:  # a timeout, a refused connection, an HTTP error
                answered, error = False, f"{type(failure).__name__}: {failure}"
            self.polls.append(Poll(at, answered, time.monotonic() - started, error))
            self._halt.wait(self.interval)

    def failed(self) -> list[Poll]:
        return [poll for poll in self.polls if not poll.answered]

    def summary(self) -> str:
        slowest = max((poll.seconds for poll in self.polls), default=0.0)
        return (
            f"{len(self.polls)} healthz polls, {len(self.failed())} failed, slowest {slowest:.2f}s"
            + "".join(f"; {fmt(p.at)} {p.error}" for p in self.failed()[:3])
        )


@dataclass(frozen=True)
class Evidence:
    start: datetime
    end: datetime
    calls: list[Call]
    """The well-behaved job's calls whose slot is in the run."""
    polls: list[Poll]
    connections: dict[str, Connections]
    """Per hostile job, at the end of the run."""
    bodies: dict[str, dict[str, Any]]
    operator_running: bool
    log: Path
    namespace: str
    host_header_calls: int
    """Calls the receiver got from the jobs that set a Host header."""


def runs(body: dict[str, Any]) -> list[dict[str, Any]]:
    """status.lastRun and status.recentRuns."""
    last: dict[str, Any] | None = status(body).get("lastRun")
    return ([last] if last else []) + recent_runs(body)


def every_job_ready(cluster: LocalCluster, namespace: str, names: list[str]) -> bool:
    bodies = read_all(cluster, namespace)
    return all(
        (condition(bodies.get(name, {}), "Ready") or {}).get("status") == "True" for name in names
    )


@pytest.fixture(scope="module")
def evidence(
    cluster: LocalCluster,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    receiver: Receiver,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Evidence]:
    namespace = module_namespace
    job = f"{namespace}/{WELL_BEHAVED}"
    with contextlib.ExitStack() as stack:
        servers = {
            name: stack.enter_context(HostileServer(answer, name=name))
            for name, answer in ANSWERS.items()
        }
        operators = stack.enter_context(
            Operators(cluster, tmp_path_factory.mktemp("operators"), namespace=namespace)
        )
        replica = operators["r1"]
        health = stack.enter_context(HealthLog(replica))

        def figures() -> str:
            calls = receiver.calls(job)
            return (
                f"{len(calls)} calls of {WELL_BEHAVED}, the last at "
                f"{fmt(calls[-1].arrived) if calls else '-'} (now {fmt(now())}); "
                f"{health.summary()}; "
                + ", ".join(f"{name}: {s.connections()}" for name, s in servers.items())
                + f"; operator running: {replica.running()}; log {replica.log_path}"
            )

        well_behaved = {"every": "1s", "target": http_target(receiver, namespace, WELL_BEHAVED)}
        cluster.kubectl(
            "create", "secret", "generic", ROUTING_SECRET, "-n", namespace,
            "--from-literal=Host=admin.internal",
        )  # fmt: skip
        host_in_spec = http_target(receiver, namespace, HOST_IN_SPEC)
        host_in_spec["http"]["headers"] = {"Host": "admin.internal"}
        host_from_secret = http_target(receiver, namespace, HOST_FROM_SECRET)
        host_from_secret["http"]["headersFrom"] = [{"secretRef": {"name": ROUTING_SECRET}}]
        apply(
            cluster,
            scheduled_job(namespace, WELL_BEHAVED, well_behaved),
            scheduled_job(namespace, HOST_IN_SPEC, {"every": "1s", "target": host_in_spec}),
            scheduled_job(namespace, HOST_FROM_SECRET, {"every": "1s", "target": host_from_secret}),
            *(
                scheduled_job(
                    namespace,
                    name,
                    {"every": "1s", "timeout": "2s", "target": {"http": {"url": server.url()}}},
                )
                for name, server in servers.items()
            ),
        )
        try:
            eventually(
                lambda: every_job_ready(
                    cluster, namespace, [WELL_BEHAVED, HOST_FROM_SECRET, *servers]
                ),
                timeout=30,
                what="Ready=True on every job",
                interval=0.5,
            )
        except AssertionError as error:  # say what the operator was doing meanwhile
            raise AssertionError(f"{error}; {figures()}") from None
        start = now()
        sleep_until(start + RUN_FOR)
        end = now()
        connections = {name: server.connections() for name, server in servers.items()}
        running = replica.running()
        at_the_end = figures()
        bodies = read_all(cluster, namespace)
        calls = [call for call in receiver.calls(job) if start < call.slot <= end]
        report(
            "hostile HTTP targets (every: 1s, timeout 2s, 1 replica)",
            [
                f"run {fmt(start)} - {fmt(end)}: {at_the_end}",
                f"{WELL_BEHAVED}: {len(calls)} calls in the run, lateness at the receiver "
                f"{Spread.of(c.lateness_ms for c in calls)}",
                *(
                    f"{name}: {connections[name]}, counts {status(bodies[name]).get('counts')}, "
                    f"messages {sorted({r.get('message', '') for r in runs(bodies[name])})}"
                    for name in servers
                ),
            ],
        )
        yield Evidence(
            start=start,
            end=end,
            calls=calls,
            polls=list(health.polls),
            connections=connections,
            bodies=bodies,
            operator_running=running,
            log=replica.log_path,
            namespace=namespace,
            host_header_calls=sum(
                len(receiver.calls(f"{namespace}/{name}"))
                for name in (HOST_IN_SPEC, HOST_FROM_SECRET)
            ),
        )


class TestTheWellBehavedJobBesideHostileOnes:
    def test_is_called_for_every_second_of_the_run(self, evidence: Evidence) -> None:
        assert_called_every_second(evidence.calls, start=evidence.start, end=evidence.end)

    def test_is_called_within_500_ms_of_each_scheduled_time(self, evidence: Evidence) -> None:
        assert_on_time(evidence.calls, within_ms=ON_TIME_LATENESS_MS)


class TestTheOperatorReplica:
    def test_answers_every_healthz_poll_with_200_within_2_seconds(self, evidence: Evidence) -> None:
        failed = [(fmt(poll.at), poll.error) for poll in evidence.polls if not poll.answered]
        in_run = [poll for poll in evidence.polls if evidence.start <= poll.at <= evidence.end]

        assert failed == []
        assert max(poll.seconds for poll in evidence.polls) <= HEALTH_TIMEOUT
        # Polled throughout: about every half second (each poll takes milliseconds).
        assert len(in_run) >= RUN_FOR / timedelta(seconds=HEALTH_INTERVAL) * 0.8

    def test_is_still_running_after_the_run(self, evidence: Evidence) -> None:
        assert evidence.operator_running, f"the operator exited; its log: {evidence.log}"


@pytest.mark.parametrize("name", list(ANSWERS))
class TestEveryHostileTarget:
    def test_is_called_again_and_again(self, evidence: Evidence, name: str) -> None:
        # With a 2 s timeout and overlaps forbidden, at least a call every 2-3 s: the other
        # figures are not met by a target the operator stopped calling.
        assert evidence.connections[name].requests >= RUN_FOR / SECOND / 4


@pytest.mark.parametrize("name", INVALID)
class TestAnInvalidAnswer:
    def test_fails_its_runs_saying_invalid_http_answer(self, evidence: Evidence, name: str) -> None:
        results = runs(evidence.bodies[name])
        failed = [run for run in results if run["result"] == "Failed"]

        assert failed != [], [(run["result"], run.get("message")) for run in results]
        assert [run["message"] for run in failed if INVALID_ANSWER not in run["message"]] == []


@pytest.mark.parametrize("name", HELD_OPEN)
class TestAnAnswerThatLeavesItsConnectionOpen:
    def test_never_has_more_than_5_connections_open_at_once(
        self, evidence: Evidence, name: str
    ) -> None:
        assert evidence.connections[name].max_open <= MAX_OPEN_AT_ONCE

    def test_has_at_most_3_connections_open_at_the_end(self, evidence: Evidence, name: str) -> None:
        assert evidence.connections[name].open_now <= MAX_OPEN_AT_THE_END


class TestAHostHeader:
    def test_in_a_spec_is_an_invalid_spec_naming_its_field(self, evidence: Evidence) -> None:
        ready = condition(evidence.bodies[HOST_IN_SPEC], "Ready") or {}

        assert (ready.get("status"), ready.get("reason")) == ("False", "InvalidSpec")
        assert "spec.target.http.headers[Host]" in ready.get("message", "")

    def test_from_a_secret_fails_every_run_naming_the_secret_and_key(
        self, evidence: Evidence
    ) -> None:
        results = runs(evidence.bodies[HOST_FROM_SECRET])
        named = f"Secret {evidence.namespace}/{ROUTING_SECRET}, key 'Host'"

        assert results != []
        assert [
            (run["result"], run.get("message"))
            for run in results
            if run["result"] != "Failed" or named not in run.get("message", "")
        ] == []

    def test_is_never_sent(self, evidence: Evidence) -> None:
        assert evidence.host_header_calls == 0
