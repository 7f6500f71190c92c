"""From ``spec.target`` to executor and lock, for the queue and job targets (no server needed).

- the queue target claims through a stream lock of its own, which needs the operator's Redis,
  appends to its namespace's stream and keeps it bounded;
- the queue executor reports the entry its claim appended;
- a task of every format but stream is claimed by the operator's lock and pushed onto the
  broker its Secret names, at each run; a Secret without the key fails the run before anything
  is sent;
- the job target needs a JobSpec in its template; its executor names its Jobs by slot.
"""

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from punctual.api import spec_parsing
from punctual.contracts import records
from punctual.kube import secrets
from punctual.scheduling import slots
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets import addresses, kinds, plugin
from punctual.targets import errors as target_errors
from punctual.targets.http import connections as http_connections
from punctual.targets.http import wiring as http_wiring
from punctual.targets.job import executor as batch_job_executor
from punctual.targets.job import requests as batch_job_requests
from punctual.targets.job import watcher as batch_job_watcher
from punctual.targets.job import wiring as batch_job_wiring
from punctual.targets.queue import brokers as queue_brokers
from punctual.targets.queue import executor as queue_executor
from punctual.targets.queue import stream as queue_stream
from punctual.targets.queue import wiring as queue_wiring

JOB_REF = slots.JobRef(namespace="reports", name="nightly", uid="5f0c1d2e-uid")
SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
TEMPLATE = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


def spec(target: dict[str, Any], **fields: Any) -> Any:
    return spec_parsing.parse_spec({"every": "1m", "target": target, **fields})


def context(slot: datetime = SLOT) -> records.RunContext:
    return records.RunContext(
        job=JOB_REF,
        slot=slot,
        slot_id=slots.slot_id(JOB_REF, slot),
        scheduled_time=slot,
        timeout=timedelta(minutes=1),
    )


def claim(*, scheduled: datetime | None = None) -> records.Claim:
    return records.Claim(
        job=JOB_REF,
        slot=SLOT,
        slot_id=slots.slot_id(JOB_REF, SLOT),
        holder="r1:1",
        ttl=timedelta(minutes=2),
        scheduled_time=scheduled,
    )


@pytest.fixture
async def connections() -> AsyncIterator[http_connections.HttpConnections]:
    async with http_connections.HttpConnections() as opened:
        yield opened


class NoBatchJobsApi:
    """Lists no Jobs, and never has a watch event."""

    async def list(self, namespace: str | None) -> tuple[list[dict[str, Any]], str]:
        return [], "1"

    def watch_function(self, namespace: str | None) -> tuple[Any, tuple[str, ...]]:
        async def list_job_for_all_namespaces(**_: Any) -> Any:
            """:rtype: V1JobList"""
            await asyncio.Event().wait()

        return list_job_for_all_namespaces, ()


@pytest.fixture
async def watcher() -> AsyncIterator[batch_job_watcher.BatchJobWatcher]:
    started = batch_job_watcher.BatchJobWatcher(
        cast(batch_job_requests.BatchJobsApi, NoBatchJobsApi())
    )
    yield started
    await started.close()


@pytest.fixture
def wiring(
    connections: http_connections.HttpConnections, watcher: batch_job_watcher.BatchJobWatcher
) -> Callable[..., kinds.Targets]:
    def wired(
        *,
        streams: queue_stream.StreamClaims | None = None,
        with_jobs: bool = True,
        queue_max_len: int = queue_wiring.DEFAULT_MAX_LEN_LIMIT,
        max_stream_bytes: int = queue_wiring.DEFAULT_MAX_STREAM_BYTES,
        brokers: queue_brokers.Brokers | None = None,
        reader: object = None,
    ) -> kinds.Targets:
        reads = cast(secrets.SecretReader, reader or object())
        return kinds.Targets(
            {
                "http": http_wiring.HttpTargets(connections=connections, secrets=reads),
                "job": batch_job_wiring.BatchJobTargets(
                    api=cast(batch_job_requests.BatchJobsApi, NoBatchJobsApi())
                    if with_jobs
                    else None,
                    watcher=watcher if with_jobs else None,
                ),
                "queue": queue_wiring.QueueTargets(
                    streams,
                    max_len_limit=queue_max_len,
                    max_stream_bytes=max_stream_bytes,
                    brokers=brokers,
                    secrets=reads,
                ),
            }
        )

    return wired


async def wire_queue(
    wiring: Callable[..., kinds.Targets], queue: dict[str, Any], **options: Any
) -> plugin.Wiring:
    streams = queue_stream.StreamClaims.from_url("redis://127.0.0.1:1/0")  # lazy: no server
    try:
        return wiring(streams=streams, **options).wire(JOB_REF, spec({"queue": queue}))
    finally:
        await streams.close()


class TestTheQueueTarget:
    async def test_without_the_operators_redis_is_unavailable_not_invalid(
        self, wiring: Callable[..., kinds.Targets]
    ) -> None:
        with pytest.raises(target_errors.TargetUnavailableError) as raised:
            wiring().wire(JOB_REF, spec({"queue": {"stream": "reports:jobs"}}))

        assert raised.value.reason == "QueueUnavailable"
        assert str(raised.value).startswith("spec.target.queue: the queue target needs")
        assert "--redis-url" in str(raised.value)

    async def test_claims_through_a_stream_lock_of_its_own(
        self, wiring: Callable[..., kinds.Targets]
    ) -> None:
        wired = await wire_queue(wiring, {"stream": "reports:jobs", "maxLen": 10})

        assert isinstance(wired.lock, queue_stream.StreamLock)
        assert isinstance(wired.executor, queue_executor.QueueExecutor)

    async def test_appends_to_its_namespaces_stream_and_says_which(
        self, wiring: Callable[..., kinds.Targets]
    ) -> None:
        wired = await wire_queue(wiring, {"stream": "reports:jobs"})

        assert isinstance(wired.lock, queue_stream.StreamLock)
        assert wired.lock.stream == "punctual:ns:{reports}:stream:reports:jobs"
        assert wired.destination == (
            "entries go to the Redis stream punctual:ns:{reports}:stream:reports:jobs"
        )

    @pytest.mark.parametrize(
        ("queue", "limits", "max_len"),
        [
            pytest.param({}, {}, 10_000, id="unset-is-the-default"),
            pytest.param({}, {"queue_max_len": 500}, 500, id="unset-is-the-limit-when-lower"),
            pytest.param({"maxLen": 10}, {}, 10, id="as-asked"),
            pytest.param({"maxLen": 500}, {"queue_max_len": 500}, 500, id="as-asked-at-the-limit"),
            # One entry of JOB_REF is 182 bytes as written with an empty payload.
            pytest.param({}, {"max_stream_bytes": 1_820_000}, 10_000, id="unset-fits-the-bytes"),
            pytest.param({}, {"max_stream_bytes": 1_819_999}, 9_999, id="unset-cut-to-the-bytes"),
            pytest.param(
                {"payload": {"a": "é"}}, {"max_stream_bytes": 1_900}, 10, id="larger-payload-fewer"
            ),
            pytest.param({}, {"max_stream_bytes": 100}, 1, id="unset-never-below-one-entry"),
        ],
    )
    async def test_its_stream_is_always_bounded(
        self,
        wiring: Callable[..., kinds.Targets],
        queue: dict[str, Any],
        limits: dict[str, int],
        max_len: int,
    ) -> None:
        wired = await wire_queue(wiring, {"stream": "s", **queue}, **limits)

        assert isinstance(wired.lock, queue_stream.StreamLock)
        assert wired.lock.max_len == max_len

    async def test_a_max_len_above_the_operators_limit_is_not_scheduled(
        self, wiring: Callable[..., kinds.Targets]
    ) -> None:
        with pytest.raises(target_errors.TargetUnavailableError) as raised:
            await wire_queue(wiring, {"stream": "s", "maxLen": 501}, queue_max_len=500)

        assert raised.value.reason == "MaxLenAboveLimit"
        assert str(raised.value) == (
            "spec.target.queue.maxLen: 501 is above this operator's limit of 500 entries per "
            "stream (--queue-max-len)"
        )

    @pytest.mark.parametrize(
        ("queue", "limit"),
        [
            pytest.param({"maxLen": 10}, 1_821, id="below-the-limit"),
            pytest.param({"maxLen": 10}, 1_820, id="at-the-limit"),
            pytest.param({"maxLen": 10, "payload": {"a": "é"}}, 1_900, id="payload-in-utf-8"),
        ],
    )
    async def test_its_stream_within_the_bytes_allowed_is_scheduled(
        self, wiring: Callable[..., kinds.Targets], queue: dict[str, Any], limit: int
    ) -> None:
        # One entry of JOB_REF is 182 bytes as written with an empty payload, 190 with {"a":"é"}.
        wired = await wire_queue(wiring, {"stream": "s", **queue}, max_stream_bytes=limit)

        assert isinstance(wired.lock, queue_stream.StreamLock)

    @pytest.mark.parametrize(
        ("queue", "limit", "measured"),
        [
            pytest.param({"maxLen": 10}, 1_819, "10 entries of 182 bytes", id="one-byte-above"),
            pytest.param(
                {"maxLen": 10, "payload": {"a": "é"}},
                1_899,
                "10 entries of 190 bytes",
                id="payload-in-utf-8",
            ),
        ],
    )
    async def test_a_stream_above_the_bytes_allowed_is_not_scheduled(
        self,
        wiring: Callable[..., kinds.Targets],
        queue: dict[str, Any],
        limit: int,
        measured: str,
    ) -> None:
        with pytest.raises(target_errors.TargetUnavailableError) as raised:
            await wire_queue(wiring, {"stream": "s", **queue}, max_stream_bytes=limit)

        assert raised.value.reason == "StreamBytesAboveLimit"
        assert str(raised.value).startswith(f"spec.target.queue.maxLen: {measured} each")
        assert "spec.target.queue.payload" in str(raised.value)
        assert f"limit of {limit} per stream (--max-stream-bytes)" in str(raised.value)

    async def test_the_executor_reports_the_entry_its_claim_appended(self) -> None:
        class Entries:
            def take_entry(self, slot_id: str) -> str | None:
                return {context().slot_id: "1796002200003-0"}.get(slot_id)

        executor = queue_executor.QueueExecutor(Entries(), stream="reports:jobs")

        assert await executor(context()) == records.Outcome(True, "enqueued 1796002200003-0")
        assert await executor(context(SLOT + timedelta(minutes=1))) == records.Outcome(
            True, "enqueued (id unknown)"
        )

    def test_the_entry_carries_the_design_fields_in_order(self) -> None:
        fields = queue_stream.entry_fields(
            claim(scheduled=SLOT + timedelta(seconds=3)),
            payload=queue_stream.payload_json({"kind": "nightly", "a": [1, 2]}),
        )

        assert list(fields.items()) == [
            ("job", "reports/nightly"),
            ("namespace", "reports"),
            ("slot", "reports/nightly/5f0c1d2e-uid/1796002200000"),
            ("scheduledTime", "2026-11-30T01:30:03Z"),
            ("idempotencyKey", "reports/nightly/5f0c1d2e-uid/1796002200000"),
            ("payload", '{"a":[1,2],"kind":"nightly"}'),
        ]

    def test_no_payload_is_an_empty_object(self) -> None:
        assert queue_stream.payload_json(None) == "{}"

    def test_without_a_scheduled_time_the_slot_is_the_scheduled_time(self) -> None:
        fields = queue_stream.entry_fields(claim(), payload="{}")

        assert fields["scheduledTime"] == "2026-11-30T01:30:00Z"


class SecretsOf:
    """A Secret reader holding the given Secrets' data."""

    def __init__(self, data: dict[str, dict[str, str]]) -> None:
        self.data = data

    async def read(self, *, namespace: str, name: str) -> dict[str, str]:
        return self.data[f"{namespace}/{name}"]


CELERY = {
    "celery": {"task": "reports.tasks.nightly"},
    "brokerFrom": {"secretName": "broker", "key": "url"},
}


class TestATaskOnTheTenantsBroker:
    async def test_without_brokers_is_unavailable_not_invalid(
        self, wiring: Callable[..., kinds.Targets]
    ) -> None:
        with pytest.raises(target_errors.TargetUnavailableError) as raised:
            wiring().wire(JOB_REF, spec({"queue": CELERY}))
        assert raised.value.reason == "QueueUnavailable"

    @pytest.mark.parametrize(
        ("task", "what"),
        [
            ({"celery": {"task": "reports.tasks.nightly"}},
             "celery task reports.tasks.nightly on queue celery"),
            ({"rq": {"function": "reports.jobs.nightly"}},
             "rq job reports.jobs.nightly on queue default"),
            ({"arq": {"function": "nightly"}}, "arq job nightly on queue arq:queue"),
            ({"dramatiq": {"actor": "nightly"}}, "dramatiq actor nightly on queue default"),
            ({"taskiq": {"task": "reports.tasks:nightly", "brokerClass": "RedisStreamBroker"}},
             "taskiq task reports.tasks:nightly on queue taskiq (RedisStreamBroker)"),
            ({"sidekiq": {"class": "Reports::NightlyJob"}},
             "sidekiq job Reports::NightlyJob on queue default"),
            ({"bullmq": {"queue": "reports", "name": "nightly"}},
             "bullmq job nightly on queue reports"),
        ],
    )  # fmt: skip
    async def test_is_claimed_by_the_operators_lock_and_says_where_it_goes(
        self, wiring: Callable[..., kinds.Targets], task: dict[str, object], what: str
    ) -> None:
        brokers = queue_brokers.Brokers(guard=addresses.AddressGuard())
        target = {**task, "brokerFrom": CELERY["brokerFrom"]}
        wired = wiring(brokers=brokers, reader=SecretsOf({})).wire(JOB_REF, spec({"queue": target}))
        assert wired.lock is None
        assert wired.destination == f"{what}, on the broker of Secret reports/broker key url"

    @pytest.mark.parametrize(
        ("data", "message"),
        [
            ({}, "Secret reports/broker has no key 'url' (the broker's URL): nothing sent"),
            (
                {"url": "redis://169.254.169.254/0"},
                "broker redis://169.254.169.254/0: 169.254.169.254 is link-local",
            ),
        ],
    )
    async def test_a_broker_it_cannot_use_fails_the_run_naming_the_secret(
        self, wiring: Callable[..., kinds.Targets], data: dict[str, str], message: str
    ) -> None:
        brokers = queue_brokers.Brokers(guard=addresses.AddressGuard())
        reader = SecretsOf({"reports/broker": data})
        wired = wiring(brokers=brokers, reader=reader).wire(JOB_REF, spec({"queue": CELERY}))
        outcome = await wired.executor(context())
        await brokers.close()
        assert not outcome.succeeded
        assert outcome.message.startswith(message)


class TestTheJobTarget:
    async def test_wires_a_job_executor_on_the_operators_lock(
        self, wiring: Callable[..., kinds.Targets]
    ) -> None:
        wired = wiring().wire(JOB_REF, spec({"job": {"template": TEMPLATE}}))

        assert isinstance(wired.executor, batch_job_executor.BatchJobExecutor)
        assert wired.lock is None
        assert wired.executor.job_name(context()) == "nightly-1796002200"

    async def test_a_template_without_a_job_spec_is_invalid(
        self, wiring: Callable[..., kinds.Targets]
    ) -> None:
        with pytest.raises(InvalidSpecError, match=r"^spec\.target\.job\.template\.spec: required"):
            wiring().wire(JOB_REF, spec({"job": {"template": {"metadata": {}}}}))

    async def test_template_metadata_must_be_an_object(
        self, wiring: Callable[..., kinds.Targets]
    ) -> None:
        template = {**TEMPLATE, "metadata": "labels"}

        with pytest.raises(InvalidSpecError, match=r"^spec\.target\.job\.template\.metadata"):
            wiring().wire(JOB_REF, spec({"job": {"template": template}}))
