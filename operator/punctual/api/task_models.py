"""The tasks of the queue frameworks users already run (Celery, RQ, arq, Dramatiq, taskiq,
Sidekiq, BullMQ), as ``spec.target.queue`` names them, and the arguments they take.

Each format's message is written by its own module of ``punctual.targets.queue``; which of
them a queue target sets is ``punctual.api.queue_models.QueueTarget``'s to say.
"""

import enum
from typing import Annotated

import pydantic

from punctual.api import fields
from punctual.scheduling.errors import InvalidSpecError

TASK_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*([.:][A-Za-z_][A-Za-z0-9_]*)*$"
"""A Python dotted path (``reports.tasks.nightly``), as Celery task names and RQ function
paths are; ``:`` separates a module from its attribute in some task names."""
QUEUE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"

TaskName = Annotated[str, pydantic.Field(min_length=1, max_length=256, pattern=TASK_NAME_PATTERN)]
QueueName = Annotated[str, pydantic.Field(min_length=1, max_length=128, pattern=QUEUE_NAME_PATTERN)]
MAX_TASK_ARGS = 64


def _task_arguments(arguments: dict[str, pydantic.JsonValue]) -> dict[str, pydantic.JsonValue]:
    """Accept ``{"args": [...], "kwargs": {...}}``, either key optional, and nothing else."""
    unknown = sorted(set(arguments) - {"args", "kwargs"})
    if unknown:
        raise InvalidSpecError("", f"only args and kwargs, not {', '.join(unknown)}")
    args = arguments.get("args", [])
    if not isinstance(args, list) or len(args) > MAX_TASK_ARGS:
        raise InvalidSpecError("args", f"a list of at most {MAX_TASK_ARGS} JSON values")
    if not isinstance(arguments.get("kwargs", {}), dict):
        raise InvalidSpecError("kwargs", "an object: the keyword arguments by name")
    return arguments


TaskArguments = Annotated[fields.FreeFormObject, pydantic.AfterValidator(_task_arguments)]
"""A task's arguments, JSON only (never pickle): ``args`` (a list) and ``kwargs`` (an object).
Kept as given by the API server (a task's argument may be any JSON value), checked here."""


def split_arguments(
    arguments: dict[str, pydantic.JsonValue] | None,
) -> tuple[list[pydantic.JsonValue], dict[str, pydantic.JsonValue]]:
    """The positional and keyword arguments of checked ``TaskArguments`` (none when unset)."""
    arguments = arguments or {}
    args, kwargs = arguments.get("args", []), arguments.get("kwargs", {})
    assert isinstance(args, list)  # checked by _task_arguments
    assert isinstance(kwargs, dict)
    return args, kwargs


_ARGUMENTS = (
    "The call's arguments, JSON only: args (a list of at most 64 values) and kwargs (an "
    "object), e.g. {args: [7], kwargs: {region: eu}}. Unset: none."
)


class CeleryTask(fields.ApiModel):
    """A Celery task message (protocol 2, JSON) pushed onto a queue of the tenant's broker."""

    task: TaskName = pydantic.Field(
        description="The task's registered name, e.g. reports.tasks.nightly.",
    )
    arguments: TaskArguments | None = pydantic.Field(default=None, description=_ARGUMENTS)
    queue: QueueName = pydantic.Field(
        default="celery", description="The queue (the Redis list) workers consume. Default celery."
    )
    priority: fields.WholeNumber | None = pydantic.Field(
        default=None,
        ge=0,
        le=9,
        description="Kombu's Redis priority, 0 (first, the default) to 9; the message goes to "
        "the list of its priority step (0, 3, 6 or 9) as kombu writes it.",
    )
    expires: fields.Duration | None = pydantic.Field(
        default=None,
        description="Workers discard the task if it starts this long after its scheduled time. "
        "Unset: never.",
    )


class RqJob(fields.ApiModel):
    """An RQ job (JSON serializer) enqueued on a queue of the tenant's broker."""

    function: TaskName = pydantic.Field(
        description="The function's import path, e.g. reports.jobs.nightly.",
    )
    arguments: TaskArguments | None = pydantic.Field(default=None, description=_ARGUMENTS)
    queue: QueueName = pydantic.Field(default="default", description="The queue. Default default.")
    timeout: fields.Duration | None = pydantic.Field(
        default=None,
        description="The job's timeout, in whole seconds (rounded up). Unset: the worker's "
        "default (180s).",
    )


class ArqJob(fields.ApiModel):
    """An arq job (JSON serializer) enqueued on a queue of the tenant's broker."""

    function: TaskName = pydantic.Field(
        description="The function's name as the worker registers it (WorkerSettings.functions), "
        "e.g. nightly_report.",
    )
    arguments: TaskArguments | None = pydantic.Field(default=None, description=_ARGUMENTS)
    queue: QueueName = pydantic.Field(
        default="arq:queue",
        description="The queue (the Redis sorted set) workers poll. Default arq:queue.",
    )


class DramatiqMessage(fields.ApiModel):
    """A Dramatiq message (JSON encoder) enqueued on a queue of the tenant's Redis broker."""

    actor: TaskName = pydantic.Field(
        description="The actor's name (actor_name, by default the function's name), e.g. "
        "nightly_report.",
    )
    queue: QueueName = pydantic.Field(
        default="default", description="The actor's queue. Default default."
    )
    arguments: TaskArguments | None = pydantic.Field(default=None, description=_ARGUMENTS)


MAX_TASKIQ_LABELS = 32
RESERVED_LABELS = frozenset({"punctual_slot", "punctual_scheduled_time"})
"""The labels the operator sets on every taskiq message."""


def _taskiq_labels(labels: dict[str, pydantic.JsonValue]) -> dict[str, pydantic.JsonValue]:
    """Accept labels taskiq can type: strings, integers and booleans, none of the reserved."""
    if len(labels) > MAX_TASKIQ_LABELS:
        raise InvalidSpecError("", f"at most {MAX_TASKIQ_LABELS} labels")
    for name, value in labels.items():
        if name in RESERVED_LABELS:
            raise InvalidSpecError(name, "set by the operator on every message")
        if not isinstance(value, str | int):  # a boolean is an int too
            raise InvalidSpecError(name, "a label is a string, an integer or a boolean")
    return labels


TaskiqLabels = Annotated[fields.FreeFormObject, pydantic.AfterValidator(_taskiq_labels)]


class TaskiqBrokerClass(enum.StrEnum):
    """The taskiq-redis broker class the workers run, which decides the queue's Redis type."""

    LIST_QUEUE_BROKER = "ListQueueBroker"
    """``LPUSH`` onto a list, taken with ``BRPOP``."""
    REDIS_STREAM_BROKER = "RedisStreamBroker"
    """``XADD`` onto a stream, read by a consumer group and acknowledged."""


class TaskiqTask(fields.ApiModel):
    """A taskiq task message (JSON serializer) kicked onto the tenant's taskiq-redis broker."""

    task: TaskName = pydantic.Field(
        description="The task's name: taskiq's default is <module>:<function>, e.g. "
        "reports.tasks:nightly, or the task_name given to @broker.task.",
    )
    broker_class: TaskiqBrokerClass = pydantic.Field(
        description="The workers' broker class: ListQueueBroker (a Redis list) or "
        "RedisStreamBroker (a Redis stream).",
    )
    labels: TaskiqLabels | None = pydantic.Field(
        default=None,
        description="The message's labels (at most 32), strings, integers or booleans, e.g. "
        "{max_retries: 3}. punctual_slot and punctual_scheduled_time are the operator's.",
    )
    arguments: TaskArguments | None = pydantic.Field(default=None, description=_ARGUMENTS)
    queue: QueueName = pydantic.Field(
        default="taskiq",
        description="The broker's queue_name (the list's or the stream's key). Default taskiq.",
    )


RUBY_CLASS_PATTERN = r"^[A-Z][A-Za-z0-9_]*(::[A-Z][A-Za-z0-9_]*)*$"
"""A Ruby constant path (``Reports::NightlyJob``), as a Sidekiq job's class is named."""


def _positional_only(arguments: dict[str, pydantic.JsonValue]) -> dict[str, pydantic.JsonValue]:
    if "kwargs" in arguments:
        raise InvalidSpecError("kwargs", "a Sidekiq job takes positional args only")
    return arguments


class SidekiqJob(fields.ApiModel):
    """A Sidekiq job (JSON, as Sidekiq's client pushes it) on a queue of the tenant's broker."""

    job_class: str = pydantic.Field(
        alias="class",
        min_length=1,
        max_length=256,
        pattern=RUBY_CLASS_PATTERN,
        description="The job's class, e.g. Reports::NightlyJob.",
    )
    arguments: Annotated[TaskArguments, pydantic.AfterValidator(_positional_only)] | None = (
        pydantic.Field(
            default=None,
            description="The job's arguments, JSON only: args (a list of at most 64 values), "
            "e.g. {args: [7, eu]}; Sidekiq has no keyword arguments. Unset: none.",
        )
    )
    queue: QueueName = pydantic.Field(default="default", description="The queue. Default default.")
    retry: fields.WholeNumber | None = pydantic.Field(
        default=None,
        ge=0,
        le=1000,
        description="How many times Sidekiq retries a failed job; 0: never (it goes to the dead "
        "set). Unset: the worker's default (retry true: 25 times).",
    )


BULLMQ_QUEUE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
"""A BullMQ queue's name: BullMQ refuses a ``:`` in it (its keys are ``bull:<queue>:...``)."""


class BullmqJob(fields.ApiModel):
    """A BullMQ job, as ``queue.add(name, data, opts)`` adds it, on the tenant's broker."""

    queue: str = pydantic.Field(
        min_length=1,
        max_length=128,
        pattern=BULLMQ_QUEUE_PATTERN,
        description="The queue's name, as given to BullMQ's Queue and Worker.",
    )
    name: str = pydantic.Field(
        min_length=1,
        max_length=256,
        pattern=r"^[^\x00-\x1f]+$",
        description="The job's name (the Worker's job.name).",
    )
    data: fields.FreeFormObject | None = pydantic.Field(
        default=None, description="The job's data (job.data), any object. Unset: {}."
    )
    attempts: fields.WholeNumber | None = pydantic.Field(
        default=None,
        ge=1,
        le=1000,
        description="How many times the job is tried in all (opts.attempts). Unset: once.",
    )
    remove_on_complete: fields.WholeNumber | None = pydantic.Field(
        default=None,
        ge=0,
        description="Keep at most this many completed jobs (opts.removeOnComplete); 0: none. "
        "Unset: BullMQ keeps them all.",
    )
    remove_on_fail: fields.WholeNumber | None = pydantic.Field(
        default=None,
        ge=0,
        description="Keep at most this many failed jobs (opts.removeOnFail); 0: none. Unset: "
        "BullMQ keeps them all.",
    )


BrokerTask = CeleryTask | RqJob | ArqJob | DramatiqMessage | TaskiqTask | SidekiqJob | BullmqJob
"""A task of a framework the tenant runs, pushed onto its broker."""
TASK_FORMATS = ("celery", "rq", "arq", "dramatiq", "taskiq", "sidekiq", "bullmq")
"""The fields of ``spec.target.queue`` that name a task on the tenant's broker, in the order of
``QueueTarget``'s fields."""
FORMAT_NAMES = f"{', '.join(TASK_FORMATS[:-1])} or {TASK_FORMATS[-1]}"
"""The formats as a sentence names them, in the messages that refuse a queue target."""
