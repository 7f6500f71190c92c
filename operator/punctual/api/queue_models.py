"""The queue target's model (``spec.target.queue``): a stream entry on the operator's Redis,
or a task of a framework users run (``punctual.api.task_models``) on their own broker.

A stream's name is checked here the way the CRD checks it, because it becomes part of a Redis
key (``punctual.redis_io.namespace_keys``).
"""

import re
from typing import Annotated

import pydantic

from punctual.api import fields, task_models
from punctual.scheduling.errors import InvalidSpecError

STREAM_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"
"""A stream's name: letters, digits and ``.``, ``_``, ``:``, ``-``, starting with a letter or
digit. It is never a Redis key by itself: the operator appends it to its namespace's prefix
(``redis_io.namespace_keys.stream_key``), so no character of it can reach another namespace's
keys; the charset keeps whitespace, control bytes and glob characters out of keys, logs and
ACL patterns."""
MAX_STREAM_NAME_LENGTH = 128
DEFAULT_STREAM_MAX_LEN = 10_000
"""The entries a stream keeps when ``maxLen`` is unset: every stream is bounded."""
_STREAM_NAME = re.compile(STREAM_NAME_PATTERN)


def _stream_name(text: str) -> str:
    """Accept exactly what the CRD's pattern accepts, saying what is wrong with the rest."""
    if not _STREAM_NAME.fullmatch(text):
        raise InvalidSpecError(
            "",
            f"{text!r} is not a stream name: letters, digits, '.', '_', ':' and '-' only, "
            "starting with a letter or digit",
        )
    return text


StreamName = Annotated[
    str,
    pydantic.Field(
        min_length=1,
        max_length=MAX_STREAM_NAME_LENGTH,
        json_schema_extra={"pattern": STREAM_NAME_PATTERN},
    ),
    pydantic.AfterValidator(_stream_name),
]


class BrokerSource(fields.ApiModel):
    """Where a queue job's broker URL is read from: a Secret in the job's own namespace."""

    secret_name: str = pydantic.Field(
        min_length=1,
        max_length=253,
        description="Name of a Secret in the same namespace as the ScheduledJob.",
    )
    key: str = pydantic.Field(
        min_length=1,
        max_length=253,
        description="The Secret's key whose value is the broker's URL: redis://[user:password@]"
        "host[:port][/db] or rediss:// for TLS; for a primary behind Sentinel, "
        "redis+sentinel://[user:password@]host[:port][,host[:port]...]/service[?db=N] (or "
        "rediss+sentinel://). Every host (the Sentinels', and the primary they name) must be "
        "one the operator may reach (--http-allowed-hosts; link-local, metadata and API server "
        "addresses are refused).",
    )


class QueueTarget(fields.ApiModel):
    """A message for consumers: a Punctual stream entry on the operator's Redis, or a task of a
    framework users already run (celery, rq, arq, dramatiq, taskiq, sidekiq or bullmq) pushed
    onto their own broker (brokerFrom)."""

    model_config = pydantic.ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "["
                    + ", ".join(
                        f"has(self.{name})" for name in ("stream", *task_models.TASK_FORMATS)
                    )
                    + "].filter(set, set).size() == 1",
                    "message": f"set exactly one of stream, {task_models.FORMAT_NAMES}",
                },
                {
                    "rule": "has(self.stream) != has(self.brokerFrom)",
                    "message": "every format but stream needs brokerFrom; stream takes none (it "
                    "is on the operator's Redis)",
                },
            ]
        }
    )

    stream: StreamName | None = pydantic.Field(
        default=None,
        description="The stream's name within this namespace. Entries are appended (XADD) on "
        "the operator's Redis (--redis-url) to the key punctual:ns:{<namespace>}:stream:<name>, "
        "which the Ready condition's message names; a ScheduledJob can reach no other key. "
        "Entries carry the fields job, namespace, slot, scheduledTime, idempotencyKey and "
        "payload.",
    )
    payload: fields.FreeFormObject | None = pydantic.Field(
        default=None,
        description="Any object, sent JSON-encoded as the entry's payload field. Unset: an "
        "empty object. Only with stream.",
    )
    max_len: fields.WholeNumber | None = pydantic.Field(
        default=None,
        ge=1,
        description="Trim the stream to about this many entries on every append (XADD MAXLEN "
        f"~). Unset: {DEFAULT_STREAM_MAX_LEN}, or the operator's --queue-max-len if lower; above "
        "--queue-max-len (default 100000) the job is not scheduled (Ready False, "
        "MaxLenAboveLimit). Only with stream.",
    )
    broker_from: BrokerSource | None = pydantic.Field(
        default=None,
        description="The tenant's broker (a Redis) for every format but stream, read from a "
        "Secret at each run. Each slot's message is pushed exactly once at the broker.",
    )
    celery: task_models.CeleryTask | None = pydantic.Field(
        default=None,
        description="Push a Celery task (message protocol 2, JSON, kombu's Redis transport); "
        "its task id is derived from the slot id, its headers carry punctual_slot and "
        "punctual_scheduled_time.",
    )
    rq: task_models.RqJob | None = pydantic.Field(
        default=None,
        description="Enqueue an RQ job (JSON serializer); its job id is derived from the slot "
        "id, its meta carries punctual_slot and punctual_scheduled_time.",
    )
    arq: task_models.ArqJob | None = pydantic.Field(
        default=None,
        description="Enqueue an arq job (JSON serializer); its job id is derived from the slot "
        "id (arq drops a second job of the same id), its score is the scheduled time, and the "
        "job's data carries punctual_slot and punctual_scheduled_time.",
    )
    dramatiq: task_models.DramatiqMessage | None = pydantic.Field(
        default=None,
        description="Enqueue a Dramatiq message (JSON, Redis broker); its message id is derived "
        "from the slot id, its options carry punctual_slot and punctual_scheduled_time.",
    )
    taskiq: task_models.TaskiqTask | None = pydantic.Field(
        default=None,
        description="Kick a taskiq task (JSON, taskiq-redis list or stream broker); its task id "
        "is derived from the slot id, its labels carry punctual_slot and "
        "punctual_scheduled_time.",
    )
    sidekiq: task_models.SidekiqJob | None = pydantic.Field(
        default=None,
        description="Push a Sidekiq job (JSON, Sidekiq 6 and 7's layout); its jid is derived "
        "from the slot id, its fields punctual_slot and punctual_scheduled_time carry the slot.",
    )
    bullmq: task_models.BullmqJob | None = pydantic.Field(
        default=None,
        description="Add a BullMQ job (as BullMQ 5's queue.add); its job id is derived from the "
        "slot id, so BullMQ itself drops a second copy; its opts carry punctual_slot and "
        "punctual_scheduled_time.",
    )

    def _tasks(self) -> tuple[task_models.BrokerTask | None, ...]:
        """Every format's field, in the order of ``TASK_FORMATS``."""
        return (
            self.celery,
            self.rq,
            self.arq,
            self.dramatiq,
            self.taskiq,
            self.sidekiq,
            self.bullmq,
        )

    def task(self) -> tuple[str, task_models.BrokerTask] | None:
        """The format (its field's name) and the task on the tenant's broker (``None``: a
        stream entry)."""
        return next(
            (
                (name, task)
                for name, task in zip(task_models.TASK_FORMATS, self._tasks(), strict=True)
                if task is not None
            ),
            None,
        )

    @pydantic.model_validator(mode="after")
    def _one_format(self) -> "QueueTarget":
        if not fields.exactly_one_set(self.stream, *self._tasks()):
            raise InvalidSpecError("", f"set exactly one of stream, {task_models.FORMAT_NAMES}")
        if self.stream is None and self.broker_from is None:
            raise InvalidSpecError(
                "brokerFrom", "every format but stream needs the broker's Secret"
            )
        if self.stream is not None and self.broker_from is not None:
            raise InvalidSpecError(
                "brokerFrom",
                "stream entries go to the operator's Redis: brokerFrom is for the other formats",
            )
        if self.stream is None and (self.payload is not None or self.max_len is not None):
            raise InvalidSpecError("", "payload and maxLen are only for stream")
        return self
