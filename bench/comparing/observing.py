"""What the observers see: watches of Jobs and pods, the queue consumer, the receiver, and what a
warm pod says about its gate."""

import asyncio
import contextlib
import http.server
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis.asyncio
from kubernetes_asyncio import client, config, watch

from comparing.systems import (
    CRON_ANNOTATION,
    CRONJOB,
    GATE_LINE,
    PUNCTUAL,
    PUNCTUAL_ANNOTATION,
    RUN_PHASES,
    SCHEDULED_HEADER,
    STREAM_KEY,
)
from lib.output import say


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def wall() -> datetime:
    return datetime.now(UTC)


# -- what a warm pod says about its gate -----------------------------------------------------


def gated_containers(pod_spec: dict[str, Any]) -> list[str]:
    """The containers of a pod the gate holds until the release: those whose command waits
    ``--at`` an instant (Exec: the gated container itself; Init: the release init container)."""
    return [
        container.get("name", "")
        for container in [*(pod_spec.get("initContainers") or []), *pod_spec["containers"]]
        if "--at" in (container.get("command") or [])
    ]


def at_its_gate(pod_status: dict[str, Any], gated: Sequence[str]) -> bool:
    """Whether one of the gated containers is running (or has run): the pod waits at its gate."""
    statuses = [
        *(pod_status.get("initContainerStatuses") or []),
        *(pod_status.get("containerStatuses") or []),
    ]
    return any(
        status.get("name") in gated
        and any(key in (status.get("state") or {}) for key in ("running", "terminated"))
        for status in statuses
    )


def gate_late_ms(log: str) -> int | None:
    """``lateMs`` of the gate's release line in a container's log (the gate prints one line of
    JSON as it releases; the workload's own output may follow); None without one."""
    for line in log.splitlines():
        if GATE_LINE not in line:
            continue
        with contextlib.suppress(ValueError, AttributeError):
            printed = json.loads(line)
            if printed.get(GATE_LINE) == "released" and isinstance(printed.get("lateMs"), int):
                return int(printed["lateMs"])
    return None


# -- what the observers see ------------------------------------------------------------------


@dataclass
class Observations:
    """Everything the observers saw, stamped with the wall clock on arrival."""

    jobs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """(namespace, Job name) → {system, owner, scheduled, observed, created}."""
    pods: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """(namespace, Job name) → {name, gated, running, start_time, at_gate} of its first pod
    (``running`` None until it is Running; ``gated``: its containers the gate holds)."""
    gates: dict[tuple[str, str], int] = field(default_factory=dict)
    """(namespace, Job name) → the ``lateMs`` its pod's gate printed."""
    entries: list[dict[str, Any]] = field(default_factory=list)
    arrivals: list[dict[str, Any]] = field(default_factory=list)
    """Requests at the receiver: {path, arrived, scheduled (the header, if any)}."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def job_seen(self, body: dict[str, Any], observed: datetime) -> None:
        metadata = body.get("metadata") or {}
        key = (metadata.get("namespace", ""), metadata.get("name", ""))
        with self.lock:
            if key in self.jobs:
                return
        owners = metadata.get("ownerReferences") or [{}]
        annotations = metadata.get("annotations") or {}
        kind = owners[0].get("kind")
        if kind == "CronJob":
            system, scheduled = CRONJOB, annotations.get(CRON_ANNOTATION)
        elif kind == "ScheduledJob":
            system, scheduled = PUNCTUAL, annotations.get(PUNCTUAL_ANNOTATION)
        else:
            return
        created = metadata.get("creationTimestamp")
        with self.lock:
            self.jobs[key] = {
                "system": system,
                "owner": owners[0].get("name", ""),
                "scheduled": parse_time(scheduled) if scheduled else None,
                "observed": observed,
                "created": parse_time(created) if created else None,
            }

    def pod_seen(self, body: dict[str, Any], observed: datetime) -> None:
        metadata = body.get("metadata") or {}
        job = (metadata.get("labels") or {}).get("batch.kubernetes.io/job-name")
        if not job:
            return
        status = body.get("status") or {}
        key = (metadata.get("namespace", ""), job)
        with self.lock:
            seen = self.pods.get(key)
            if seen is None:
                seen = self.pods[key] = {
                    "name": metadata.get("name", ""),
                    "gated": gated_containers(body.get("spec") or {"containers": []}),
                    "running": None,
                    "start_time": None,
                    "at_gate": None,
                }
            elif seen["name"] != metadata.get("name"):
                return  # a later pod of the Job: the first one's times are the slot's
            if seen["running"] is None and status.get("phase") in RUN_PHASES:
                seen["running"] = observed
            if status.get("startTime") and seen["start_time"] is None and seen["running"]:
                seen["start_time"] = parse_time(status["startTime"])
            if seen["at_gate"] is None and seen["gated"] and at_its_gate(status, seen["gated"]):
                seen["at_gate"] = observed

    def gate_read(self, key: tuple[str, str], late_ms: int) -> None:
        with self.lock:
            self.gates.setdefault(key, late_ms)

    def gates_to_read(self, namespace: str) -> list[tuple[tuple[str, str], str, list[str]]]:
        """(Job, pod, gated containers) of the namespace's warm pods whose gate line is unread."""
        with self.lock:
            return [
                (key, pod["name"], list(pod["gated"]))
                for key, pod in self.pods.items()
                if key[0] == namespace and pod["gated"] and key not in self.gates
            ]

    def entry_seen(self, entry_id: str, fields: dict[str, str], observed: datetime) -> None:
        with self.lock:
            self.entries.append(
                {
                    "id_time": datetime.fromtimestamp(int(entry_id.partition("-")[0]) / 1000, UTC),
                    "read": observed,
                    "job": fields.get("job", ""),
                    "slot": fields.get("slot", ""),
                    "scheduled": parse_time(fields["scheduledTime"]),
                }
            )

    def arrived(self, path: str, scheduled: str | None, observed: datetime) -> None:
        with self.lock:
            self.arrivals.append(
                {
                    "path": path,
                    "arrived": observed,
                    "scheduled": parse_time(scheduled) if scheduled else None,
                }
            )


async def _watch_forever(function: Any, *arguments: Any, on_event: Any) -> None:
    while True:
        try:
            async with watch.Watch(return_type="object") as stream:
                async for event in stream.stream(function, *arguments):
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        on_event(event.get("raw_object") or {}, wall())
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the API server hiccuped: watch again
            say(f"watch error ({type(error).__name__}: {error}); watching again")
            await asyncio.sleep(0.5)


async def _consume(url: str, seen: Observations) -> None:
    consumer = redis.asyncio.Redis.from_url(url, decode_responses=True)
    last = "$"
    try:
        while True:
            replies = await consumer.xread({STREAM_KEY: last}, block=1000, count=100)
            observed = wall()
            for _stream, items in replies or []:
                for entry_id, fields in items:
                    seen.entry_seen(entry_id, fields, observed)
                    last = entry_id
    finally:
        await consumer.aclose()


async def _observe(
    kubeconfig: Path, redis_url: str, seen: Observations, ready: Any, *, pods: bool
) -> None:
    api = await config.new_client_from_config(config_file=str(kubeconfig))
    try:
        batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
        tasks = [
            asyncio.create_task(
                _watch_forever(batch.list_job_for_all_namespaces, on_event=seen.job_seen)
            ),
            asyncio.create_task(_consume(redis_url, seen)),
        ]
        if pods:
            tasks.append(
                asyncio.create_task(
                    _watch_forever(core.list_pod_for_all_namespaces, on_event=seen.pod_seen)
                )
            )
        ready.set()
        await asyncio.gather(*tasks)
    finally:
        await api.close()


class Receiver:
    """An HTTP server that stamps every request on arrival, before reading anything else."""

    def __init__(self, address: str, seen: Observations) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                observed = wall()
                seen.arrived(self.path, self.headers.get(SCHEDULED_HEADER), observed)
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(min(length, 65536))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            do_GET = do_POST = _answer  # noqa: N815 (http.server's names)

            def log_message(self, format: str, *args: object) -> None:
                pass

        # A deep accept queue: the default (5) drops the SYNs of 20 calls at once, and the
        # callers' retransmission adds a second (measured: 13 of 20 HTTP calls at 1,024 ms).
        server_class = type(
            "Server", (http.server.ThreadingHTTPServer,), {"request_queue_size": 1024}
        )
        self.server = server_class((address, 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{address}:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


class Observers:
    """The observers' event loop, in a thread of its own. ``pods=False``: no watch of pods (at
    1,000 Jobs a minute their events would keep this thread seconds behind the Jobs' own)."""

    def __init__(self, kubeconfig: Path, redis_url: str, *, pods: bool = True) -> None:
        self.pods = pods
        self.seen = Observations()
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._task: asyncio.Task[None] | None = None
        self._thread = threading.Thread(
            target=self._run, args=(kubeconfig, redis_url), name="observers", daemon=True
        )

    def _run(self, kubeconfig: Path, redis_url: str) -> None:
        asyncio.set_event_loop(self._loop)
        self._task = self._loop.create_task(
            _observe(kubeconfig, redis_url, self.seen, self._ready, pods=self.pods)
        )
        with contextlib.suppress(asyncio.CancelledError):
            self._loop.run_until_complete(self._task)
        self._loop.close()

    def __enter__(self) -> "Observers":
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the observers did not start")
        return self

    def __exit__(self, *_: object) -> None:
        if self._task is not None:
            self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(timeout=15)
