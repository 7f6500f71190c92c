"""The queue target on the real control plane and Redis: one stream entry per slot, exactly.

Three operator replicas (the redis slot lock) race for every slot of two 1-second jobs; each
slot's claim and its XADD are one Lua script, so the stream must hold one entry per slot, none
twice, none missing, with the fields of docs/queue-messages.md, in the stream of the job's own
namespace: a job of another namespace naming the same stream (or the operator's own keys) with
``maxLen: 1`` reaches nothing of it. Without a Redis the operator says so on the
Ready condition (QueueUnavailable); with the kubernetes lock backend and a Redis, queue jobs
still claim through Redis.
"""

import json
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from operator_harness import (
    Operators,
    apply,
    condition,
    counts,
    events,
    eventually,
    every_slots,
    from_millis,
    new_namespace,
    parse_time,
    read,
    recent_runs,
    report,
    scheduled_job,
    status,
)

from localcluster import LocalCluster, LocalRedis

pytest_plugins = ["operator_fixtures"]

WINDOW_SECONDS = 15.0


def queue_job(stream: str, **spec: Any) -> dict[str, Any]:
    """A queue job's spec; ``payload`` and ``maxLen`` go to its target."""
    target: dict[str, Any] = {"stream": stream}
    for field in ("payload", "maxLen"):
        if field in spec:
            target[field] = spec.pop(field)
    return {**spec, "target": {"queue": target}}


def stream_key(namespace: str, stream: str) -> str:
    """Where a job of ``namespace`` with ``spec.target.queue.stream: <stream>`` appends."""
    return f"punctual:ns:{{{namespace}}}:stream:{stream}"


def entries(url: str, key: str) -> list[tuple[str, dict[str, str]]]:
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        return [(entry_id, dict(fields)) for entry_id, fields in client.xrange(key)]
    finally:
        client.close()


def slot_of(fields: dict[str, str]) -> datetime:
    return from_millis(int(fields["slot"].rsplit("/", 1)[1]))


@pytest.fixture(scope="module")
def three_replicas(
    cluster: LocalCluster,
    redis_server: LocalRedis,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Operators]:
    with Operators(
        cluster,
        tmp_path_factory.mktemp("operators"),
        namespace=module_namespace,
        replicas=3,
        lock_backend="redis",
        # Racing is the point: every replica arms every job, the slot lock picks one.
        extra_args=["--sharding", "off"],
        redis_url=redis_server.url,
    ) as started:
        yield started


class TestThreeReplicasRacing:
    def test_write_exactly_one_entry_per_slot(
        self,
        cluster: LocalCluster,
        redis_server: LocalRedis,
        module_namespace: str,
        three_replicas: Operators,
    ) -> None:
        stream = "jobs"
        names = ("ticks", "tocks")
        apply(
            cluster,
            *(
                scheduled_job(
                    module_namespace,
                    name,
                    queue_job(
                        stream,
                        every="1s",
                        payload={"kind": name, "n": [1, 2]},
                        history={"succeeded": 20, "failed": 20},
                    ),
                )
                for name in names
            ),
        )
        time.sleep(WINDOW_SECONDS)
        written = entries(redis_server.url, stream_key(module_namespace, stream))

        lines = []
        for name in names:
            job = f"{module_namespace}/{name}"
            mine = [(entry_id, f) for entry_id, f in written if f["job"] == job]
            slots = [slot_of(f) for _, f in mine]
            duplicates = sum(n - 1 for n in Counter(slots).values())
            expected = every_slots(slots[0] - timedelta(seconds=1), slots[-1], timedelta(seconds=1))
            lateness = [
                int(entry_id.split("-")[0]) - int(f["slot"].rsplit("/", 1)[1])
                for entry_id, f in mine
            ]
            lines.append(
                f"{name}: {len(mine)} entries, {duplicates} duplicates, "
                f"{len(set(expected) - set(slots))} missing, entry-id lateness p50 "
                f"{sorted(lateness)[len(lateness) // 2]} ms max {max(lateness)} ms"
            )
            assert len(mine) >= WINDOW_SECONDS - 3
            assert duplicates == 0
            assert slots == expected  # consecutive: none missing between first and last
            body = read(cluster, module_namespace, name)
            uid = body["metadata"]["uid"]
            for entry_id, fields in mine:
                slot_id = f"{module_namespace}/{name}/{uid}/{fields['slot'].rsplit('/', 1)[1]}"
                assert fields == {
                    "job": job,
                    "namespace": module_namespace,
                    "slot": slot_id,
                    "scheduledTime": fields["scheduledTime"],
                    "idempotencyKey": slot_id,
                    "payload": '{"kind":"' + name + '","n":[1,2]}',
                }
                assert parse_time(fields["scheduledTime"]) == slot_of(fields)
                assert json.loads(fields["payload"]) == {"kind": name, "n": [1, 2]}
                assert int(entry_id.split("-")[0]) >= int(fields["slot"].rsplit("/", 1)[1])
            # The runs report the entries they appended; every replica took part.
            ready = condition(body, "Ready")
            assert ready is not None
            assert ready["message"] == (
                "scheduling slots; entries go to the Redis stream "
                f"{stream_key(module_namespace, stream)}"
            )
            ids = {entry_id for entry_id, _ in mine}
            runs = [run for run in recent_runs(body) if run["result"] == "Succeeded"]
            assert runs
            for run in runs:
                assert run["message"].startswith("enqueued ")
                assert run["message"].removeprefix("enqueued ") in ids
        report("queue target, 3 replicas, 2 jobs every 1s", lines)
        replicas = {
            run["replica"]
            for name in names
            for run in recent_runs(read(cluster, module_namespace, name))
        }
        assert len(replicas) >= 2
        assert three_replicas.problems() == {}, f"see {three_replicas.logs()}"


class TestWithoutRedis:
    def test_a_queue_job_is_not_ready_queue_unavailable(
        self,
        cluster: LocalCluster,
        scheduled_job_crd: list[Path],
        namespace: str,
        tmp_path: Path,
    ) -> None:
        with Operators(cluster, tmp_path, namespace=namespace, lock_backend="kubernetes"):
            apply(cluster, scheduled_job(namespace, "queued", queue_job("q", every="1s")))

            def not_ready() -> dict[str, Any] | None:
                ready = condition(read(cluster, namespace, "queued"), "Ready")
                return ready if ready and ready.get("status") == "False" else None

            ready = eventually(not_ready, timeout=30, what="Ready False")
            warned = eventually(
                lambda: events(cluster, namespace, name="queued", reason="QueueUnavailable"),
                timeout=30,
                what="a QueueUnavailable event",
            )

        assert ready["reason"] == "QueueUnavailable"
        assert ready["message"].startswith("spec.target.queue: the queue target needs")
        assert "--redis-url" in ready["message"]
        assert warned[0]["type"] == "Warning"
        assert counts(read(cluster, namespace, "queued"))["succeeded"] == 0


class TestWithTheKubernetesLockBackend:
    def test_queue_jobs_still_claim_through_redis(
        self,
        cluster: LocalCluster,
        redis_server: LocalRedis,
        scheduled_job_crd: list[Path],
        namespace: str,
        tmp_path: Path,
    ) -> None:
        stream = stream_key(namespace, "jobs")
        with Operators(
            cluster,
            tmp_path,
            namespace=namespace,
            replicas=2,
            lock_backend="kubernetes",
            redis_url=redis_server.url,
        ) as operators:
            apply(cluster, scheduled_job(namespace, "queued", queue_job("jobs", every="1s")))
            eventually(
                lambda: len(entries(redis_server.url, stream)) >= 5,
                timeout=30,
                what="five entries",
            )
            assert operators.problems() == {}, f"see {operators.logs()}"

        slots = [slot_of(fields) for _, fields in entries(redis_server.url, stream)]
        assert len(slots) == len(set(slots))
        body = read(cluster, namespace, "queued")
        # Status is written coalesced (and a claim cut by the shutdown goes unrecorded): the
        # high-water mark is one of the enqueued slots, not necessarily the newest.
        assert parse_time(status(body)["lastScheduleTime"]) in slots
        assert 0 < counts(body)["succeeded"] <= len(slots)


class TestTwoNamespaces:
    def test_a_job_reaches_no_stream_of_another_namespace_nor_the_operators_keys(
        self,
        cluster: LocalCluster,
        redis_server: LocalRedis,
        scheduled_job_crd: list[Path],
        namespace: str,
        tmp_path: Path,
    ) -> None:
        with (
            new_namespace(cluster, "tenant-b") as tenant_b,
            Operators(
                cluster,
                tmp_path,
                namespace=namespace,
                lock_backend="redis",
                redis_url=redis_server.url,
                extra_args=["--namespace", tenant_b],
            ) as operators,
        ):
            apply(cluster, scheduled_job(tenant_b, "fed", queue_job("jobs", every="1s")))
            eventually(
                lambda: len(entries(redis_server.url, stream_key(tenant_b, "jobs"))) >= 3,
                timeout=30,
                what="three of B's entries",
            )
            # A names B's stream, and the operator's own keys, trimming to one entry each.
            apply(
                cluster,
                scheduled_job(namespace, "intruder", queue_job("jobs", every="1s", maxLen=1)),
                scheduled_job(
                    namespace, "forger", queue_job("punctual:runs", every="1s", maxLen=1)
                ),
            )
            eventually(
                lambda: (
                    entries(redis_server.url, stream_key(namespace, "punctual:runs"))
                    and entries(redis_server.url, stream_key(namespace, "jobs"))
                ),
                timeout=30,
                what="A's entries in A's own streams",
            )
            before = len(entries(redis_server.url, stream_key(tenant_b, "jobs")))
            # B's stream grows, untrimmed, while A's jobs write with maxLen 1 every second.
            b_entries = eventually(
                lambda: (
                    found
                    if len(found := entries(redis_server.url, stream_key(tenant_b, "jobs")))
                    >= before + 2
                    else None
                ),
                timeout=30,
                what="two more of B's entries",
            )
            assert operators.problems() == {}, f"see {operators.logs()}"

        assert {fields["namespace"] for _, fields in b_entries} == {tenant_b}
        client = redis.Redis.from_url(redis_server.url, decode_responses=True)
        try:
            assert client.type("punctual:runs") != "stream"
            assert client.type("jobs") == "none"
        finally:
            client.close()
