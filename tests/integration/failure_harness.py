"""What the failure tests (Redis outage, API-server restart, secrets) share on top of
``operator_harness``: reading the operator's own metrics, watching conditions while something is
down, and judging the receiver's record of calls slot by slot."""

import contextlib
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import http_targets
from operator_harness import (
    Call,
    Operators,
    Receiver,
    apply,
    condition,
    eventually,
    http_target,
    now,
    read_all,
    scheduled_job,
)

from localcluster import LocalCluster, ports

_SAMPLE = re.compile(r"^(?P<name>[a-z_]+)(\{(?P<labels>[^}]*)\})? (?P<value>\S+)$", re.MULTILINE)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def metric(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels`` (0 when none)."""
    total = 0.0
    for sample in _SAMPLE.finditer(text):
        if sample["name"] != name:
            continue
        found = dict(_LABEL.findall(sample["labels"] or ""))
        if all(found.get(key) == value for key, value in labels.items()):
            total += float(sample["value"])
    return total


def lock_claims(operators: Operators, *, outcome: str, backend: str = "redis") -> float:
    """``punctual_lock_claims_total{backend, outcome}`` summed over the running replicas."""
    return sum(
        metric(replica.metrics(), "punctual_lock_claims_total", backend=backend, outcome=outcome)
        for replica in operators.replicas.values()
        if replica.running()
    )


@dataclass(frozen=True, slots=True)
class Seen:
    at: datetime
    job: str
    status: str
    reason: str


@dataclass
class ConditionLog:
    """Every job's Ready condition, read every ``interval`` seconds by a thread of its own (so
    the test can sleep through an outage and look at what status said meanwhile)."""

    cluster: LocalCluster
    namespace: str
    interval: float = 0.5
    seen: list[Seen] = field(default_factory=list)
    read_errors: int = 0
    _halt: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> "ConditionLog":
        self._thread = threading.Thread(target=self._follow, name="Ready log", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._halt.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _follow(self) -> None:
        while not self._halt.is_set():
            try:
                bodies = read_all(self.cluster, self.namespace)
            except Exception:  # the API server may be the thing that is down
                self.read_errors += 1
            else:
                at = now()
                for name, body in bodies.items():
                    ready = condition(body, "Ready") or {}
                    self.seen.append(
                        Seen(at, name, str(ready.get("status")), str(ready.get("reason")))
                    )
            self._halt.wait(self.interval)

    def between(self, start: datetime, end: datetime, job: str) -> list[Seen]:
        return [seen for seen in self.seen if start <= seen.at <= end and seen.job == job]


def duplicates(calls: Iterable[Call]) -> dict[str, int]:
    """Idempotency-Keys that arrived more than once, with how often."""
    arrived = Counter(call.idempotency_key for call in calls)
    return {key: count for key, count in arrived.items() if count > 1}


def slots_of(calls: Iterable[Call]) -> list[datetime]:
    return sorted({call.slot for call in calls})


def first_slot_after(instant: datetime, every: timedelta) -> datetime:
    epoch = datetime(1970, 1, 1, tzinfo=instant.tzinfo)
    periods = (instant - epoch) // every + 1
    return epoch + periods * every


def gaps(
    slots: Iterable[datetime], *, start: datetime, end: datetime, every: timedelta
) -> list[datetime]:
    """The slots of an ``every`` schedule in ``[start, end]`` missing from ``slots``."""
    have = set(slots)
    missing = []
    slot = first_slot_after(start - every, every)
    while slot <= end:
        if slot not in have:
            missing.append(slot)
        slot += every
    return missing


@contextlib.contextmanager
def jobs_firing(
    cluster: LocalCluster,
    run_dir: Path,
    *,
    namespace: str,
    redis_url: str,
    receiver: Receiver,
    names: Sequence[str],
) -> Iterator[Operators]:
    """Two replicas (redis lock) and a job ``every: 1s`` per name calling ``receiver``, each
    called three times already: the steady state an outage test breaks."""
    with Operators(
        cluster, run_dir, namespace=namespace, replicas=2, lock_backend="redis", redis_url=redis_url
    ) as operators:
        apply(
            cluster,
            *(
                scheduled_job(
                    namespace,
                    name,
                    {"every": "1s", "target": http_target(receiver, namespace, name)},
                )
                for name in names
            ),
        )
        for name in names:
            job = f"{namespace}/{name}"
            eventually(lambda job=job: len(receiver.calls(job)) >= 3, timeout=60, what=job)
        yield operators


class HeaderRecorder(http_targets.LocalHttpTarget):
    """Keeps every request's headers (as it arrives) and answers a status chosen per path
    (default 204), after a delay chosen per path (default none): the proof that a secret header
    really went out, or a run that stays in flight."""

    quiet_errors = True

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.answers: dict[str, int] = {}
        self.delays: dict[str, float] = {}
        super().__init__()

    def __enter__(self) -> "HeaderRecorder":
        super().__enter__()
        return self

    def respond(self, path: str, headers: Mapping[str, str], *, arrived: datetime) -> int:
        self.requests.append((path, dict(headers)))
        time.sleep(self.delays.get(path, 0.0))
        return self.answers.get(path, 204)

    def keys(self, path: str) -> list[str]:
        """The Idempotency-Keys of the requests on ``path``, in arrival order."""
        return [headers.get("Idempotency-Key", "") for at, headers in self.requests if at == path]


class SilentListener:
    """A port that accepts connections (the kernel's backlog does) and never answers: a
    request to it can only time out."""

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind((ports.LOOPBACK, 0))
        self._socket.listen(64)
        self.port: int = self._socket.getsockname()[1]

    def __enter__(self) -> "SilentListener":
        return self

    def __exit__(self, *_: object) -> None:
        self._socket.close()


def closed_port() -> int:
    """A loopback port nothing listens on (connections are refused)."""
    return ports.free_port()
