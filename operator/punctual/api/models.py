"""The ScheduledJob resource as pydantic models: its names, and the models of its spec, the one
source of truth for its CRD.

``punctual crd`` derives the CRD's schema (types, enums, defaults, limits, descriptions and the
CEL rules in ``x-kubernetes-validations``) from these models and those of the status
(``punctual.api.status_models``), and the operator reads objects through them, so what the API
server accepts and what the operator understands cannot drift. What the models are built from
(the base model, durations, whole numbers) is ``punctual.api.fields``.

Rules that span several fields are written twice on purpose: as CEL, which the API server
evaluates on every write, and as a pydantic validator raising ``InvalidSpecError`` (whose
``field`` is relative to the model that raised it), so that an object which escaped the API
server's checks (an older CRD, a test fixture) is refused the same way by the operator.
What the API server cannot check at all (cron syntax, time-zone names, jitter against a cron
schedule's period) is left to ``punctual.api.planning``.
"""

import enum
import re
from typing import Annotated

import pydantic

from punctual.api import fields
from punctual.scheduling import dst, durations, exclusions, merged, missed, overlap, plans
from punctual.scheduling.errors import InvalidSpecError

GROUP = "punctual.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "ScheduledJob"
PLURAL = "scheduledjobs"
SINGULAR = "scheduledjob"
SHORT_NAMES = ("sj",)
CATEGORIES = ("punctual",)
CALENDAR_KIND = "Calendar"
CALENDAR_PLURAL = "calendars"
CALENDAR_SINGULAR = "calendar"
MAX_CALENDARS = 8
"""The most Calendars one job excludes the days of."""


def _exactly_one_set(*values: object) -> bool:
    return sum(value is not None for value in values) == 1


class DstSpec(fields.ApiModel):
    """How a fixed-hour cron schedule treats local times that a DST transition skips or repeats."""

    nonexistent: dst.Nonexistent = pydantic.Field(
        default=dst.Nonexistent.SHIFT_FORWARD,
        description="What a slot does when its local time does not exist because clocks spring "
        "forward. ShiftForward (default): run once at the first instant after the gap (slots "
        "inside one gap coalesce into that run). Skip: do not run that day. Applies to "
        "schedules with a fixed hour field; wildcard-hour schedules follow real elapsed time.",
    )
    ambiguous: dst.Ambiguous = pydantic.Field(
        default=dst.Ambiguous.FIRST,
        description="Which occurrence of a local time that happens twice because clocks fall "
        "back runs: First (default), Second, or Both. Applies to schedules with a fixed hour "
        "field; wildcard-hour schedules run in both copies of the repeated hour.",
    )


class MissedRunsSpec(fields.ApiModel):
    """What happens to slots that came due while no replica could run them."""

    policy: missed.MissedRunPolicy = pydantic.Field(
        default=missed.MissedRunPolicy.RUN_ONCE,
        description="What to do with slots missed during downtime or a long stall. Skip: run "
        "none, resume at the next future slot and count them as missed. RunOnce (default): run "
        "the newest missed slot once, now. CatchUp: run the missed slots one after another, "
        "oldest first, at most maxCatchUp of them (the newest); older ones count as missed.",
    )
    max_catch_up: fields.WholeNumber = pydantic.Field(
        default=10,
        ge=1,
        le=1000,
        description="With policy CatchUp, the most missed slots run after an outage (the newest "
        "ones); the older ones are counted as missed. Between 1 and 1000; default 10.",
    )
    starting_deadline: fields.Duration | None = pydantic.Field(
        default=None,
        description="A slot that cannot start within this long of its scheduled time is counted "
        "as missed instead of running late, whatever the policy. A positive Go-style duration "
        "(e.g. 30s, 5m, 1h30m). Unset: no deadline.",
    )


class HistorySpec(fields.ApiModel):
    """How many finished runs are remembered."""

    succeeded: fields.WholeNumber = pydantic.Field(
        default=plans.KEPT_BY_DEFAULT,
        ge=0,
        le=plans.MOST_KEPT,
        description="How many successful runs status.recentRuns keeps, and how many finished "
        f"Jobs of the job target are kept. Between 0 and {plans.MOST_KEPT}; default "
        f"{plans.KEPT_BY_DEFAULT}.",
    )
    failed: fields.WholeNumber = pydantic.Field(
        default=plans.KEPT_BY_DEFAULT,
        ge=0,
        le=plans.MOST_KEPT,
        description="How many runs that did not succeed status.recentRuns keeps, and how many "
        f"failed Jobs of the job target are kept. Between 0 and {plans.MOST_KEPT}; default "
        f"{plans.KEPT_BY_DEFAULT}.",
    )


class HttpMethod(enum.StrEnum):
    GET = "GET"
    HEAD = "HEAD"
    POST = "POST"
    PUT = "PUT"
    PATCH = "PATCH"
    DELETE = "DELETE"
    OPTIONS = "OPTIONS"


class SecretReference(fields.ApiModel):
    """A Secret in the ScheduledJob's own namespace."""

    name: str = pydantic.Field(
        min_length=1,
        max_length=253,
        description="Name of a Secret in the same namespace as the ScheduledJob.",
    )


class HeadersSource(fields.ApiModel):
    """Where to read extra request headers from."""

    secret_ref: SecretReference = pydantic.Field(
        description="A Secret whose keys are header names and whose values are the header "
        "values. Keeps credentials such as an Authorization header out of the ScheduledJob.",
    )


class HttpTarget(fields.ApiModel):
    """An HTTP request the operator makes itself, once per slot."""

    url: str = pydantic.Field(
        min_length=1,
        max_length=2048,
        pattern=r"^https?://\S+$",
        description="The http:// or https:// URL to call, e.g. "
        "http://report-svc.reports.svc:8080/run.",
    )
    method: HttpMethod = pydantic.Field(
        default=HttpMethod.POST,
        description="The HTTP method: GET, HEAD, POST (default), PUT, PATCH, DELETE or OPTIONS.",
    )
    headers: dict[str, Annotated[str, pydantic.Field(max_length=8192)]] = pydantic.Field(
        default_factory=dict,
        max_length=64,
        description="Extra request headers, name to value (at most 64). Every request also "
        "carries Idempotency-Key (the slot id) and X-Punctual-Scheduled-Time. Refused: Host, "
        "Forwarded, X-Forwarded-Host, and the framing and connection headers (Content-Length, "
        "Transfer-Encoding, TE, Trailer, Expect, Connection, Keep-Alive, Proxy-Connection, "
        "Upgrade), any case, here and in headersFrom.",
    )
    headers_from: tuple[HeadersSource, ...] = pydantic.Field(
        default_factory=tuple,
        max_length=16,
        description="Secrets to read extra request headers from, applied after headers (at most "
        "16). Use these for credentials such as an Authorization header.",
    )
    body: str | None = pydantic.Field(
        default=None,
        max_length=65536,
        description="The request body, sent as given (at most 64 KiB). Unset: no body.",
    )
    success_codes: (
        tuple[Annotated[fields.WholeNumber, pydantic.Field(ge=100, le=599)], ...] | None
    ) = pydantic.Field(
        default=None,
        min_length=1,
        max_length=64,
        json_schema_extra={"x-kubernetes-list-type": "set"},
        description="The HTTP status codes that count as success, e.g. [200, 204]. Unset: "
        "any 2xx status. Any other status, a connection error or the timeout fails the run.",
    )


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
        "host[:port][/db] or rediss:// for TLS. The host must be one the operator may reach "
        "(--http-allowed-hosts; link-local, metadata and API server addresses are refused).",
    )


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
_FORMAT_NAMES = f"{', '.join(TASK_FORMATS[:-1])} or {TASK_FORMATS[-1]}"


class QueueTarget(fields.ApiModel):
    """A message for consumers: a Punctual stream entry on the operator's Redis, or a task of a
    framework users already run (celery, rq, arq, dramatiq, taskiq, sidekiq or bullmq) pushed
    onto their own broker (brokerFrom)."""

    model_config = pydantic.ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "["
                    + ", ".join(f"has(self.{name})" for name in ("stream", *TASK_FORMATS))
                    + "].filter(set, set).size() == 1",
                    "message": f"set exactly one of stream, {_FORMAT_NAMES}",
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
    celery: CeleryTask | None = pydantic.Field(
        default=None,
        description="Push a Celery task (message protocol 2, JSON, kombu's Redis transport); "
        "its task id is derived from the slot id, its headers carry punctual_slot and "
        "punctual_scheduled_time.",
    )
    rq: RqJob | None = pydantic.Field(
        default=None,
        description="Enqueue an RQ job (JSON serializer); its job id is derived from the slot "
        "id, its meta carries punctual_slot and punctual_scheduled_time.",
    )
    arq: ArqJob | None = pydantic.Field(
        default=None,
        description="Enqueue an arq job (JSON serializer); its job id is derived from the slot "
        "id (arq drops a second job of the same id), its score is the scheduled time, and the "
        "job's data carries punctual_slot and punctual_scheduled_time.",
    )
    dramatiq: DramatiqMessage | None = pydantic.Field(
        default=None,
        description="Enqueue a Dramatiq message (JSON, Redis broker); its message id is derived "
        "from the slot id, its options carry punctual_slot and punctual_scheduled_time.",
    )
    taskiq: TaskiqTask | None = pydantic.Field(
        default=None,
        description="Kick a taskiq task (JSON, taskiq-redis list or stream broker); its task id "
        "is derived from the slot id, its labels carry punctual_slot and "
        "punctual_scheduled_time.",
    )
    sidekiq: SidekiqJob | None = pydantic.Field(
        default=None,
        description="Push a Sidekiq job (JSON, Sidekiq 6 and 7's layout); its jid is derived "
        "from the slot id, its fields punctual_slot and punctual_scheduled_time carry the slot.",
    )
    bullmq: BullmqJob | None = pydantic.Field(
        default=None,
        description="Add a BullMQ job (as BullMQ 5's queue.add); its job id is derived from the "
        "slot id, so BullMQ itself drops a second copy; its opts carry punctual_slot and "
        "punctual_scheduled_time.",
    )

    def _tasks(self) -> tuple[BrokerTask | None, ...]:
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

    def task(self) -> tuple[str, BrokerTask] | None:
        """The format (its field's name) and the task on the tenant's broker (``None``: a
        stream entry)."""
        return next(
            (
                (name, task)
                for name, task in zip(TASK_FORMATS, self._tasks(), strict=True)
                if task is not None
            ),
            None,
        )

    @pydantic.model_validator(mode="after")
    def _one_format(self) -> "QueueTarget":
        if not _exactly_one_set(self.stream, *self._tasks()):
            raise InvalidSpecError("", f"set exactly one of stream, {_FORMAT_NAMES}")
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


class WarmStartMode(enum.StrEnum):
    """Where the gate holds a warm Job's workload until its slot (``targets.job.warm``)."""

    AUTO = "Auto"
    """Exec when every container the gate holds has a ``command``, Init otherwise."""
    EXEC = "Exec"
    """The gate runs as the container's own command and execs the original at the slot."""
    INIT = "Init"
    """A last init container waits for the slot; the kubelet then starts the workload."""


class WarmStart(fields.ApiModel):
    """Create a slot's Job ahead of its slot, its workload held by a gate until the slot."""

    lead: fields.Duration = pydantic.Field(
        description="How long before its slot the Job is created: the pod is scheduled, its "
        "sandbox, network and volumes set up and every image pulled in that time, and its "
        "workload released at the slot. A positive Go-style duration (e.g. 30s); at most the "
        "schedule's shortest time between two slots minus spec.timeout.",
    )
    mode: WarmStartMode = pydantic.Field(
        default=WarmStartMode.AUTO,
        description="How the workload is held. Exec: each held container's command becomes "
        "the gate's, which execs the original command at the slot (same process, needs an "
        "explicit command). Init: a last init container waits for the slot, then the kubelet "
        "starts the containers (up to about a second later). Auto (default): Exec when every "
        "held container has a command and no liveness or startup probe, Init otherwise.",
    )
    gate_image: str | None = pydantic.Field(
        default=None,
        min_length=1,
        max_length=512,
        description="The gate's image, pulled in this namespace with the template's "
        "imagePullSecrets. Unset: the operator's (punctual run --warm-start-gate-image).",
    )


class JobTarget(fields.ApiModel):
    """A batch/v1 Job created for each slot, as a CronJob would."""

    template: fields.FreeFormObject = pydantic.Field(
        description="The Job to create, shaped like a CronJob's spec.jobTemplate: {metadata, "
        "spec} where spec is a batch/v1 JobSpec. The Job is named <name>-<unix seconds of the "
        "slot>, labelled punctual.dev/scheduled-job, annotated punctual.dev/scheduled-time and "
        "owned by the ScheduledJob; spec.timeout becomes its activeDeadlineSeconds.",
    )
    warm_start: WarmStart | None = pydantic.Field(
        default=None,
        description="Create each slot's Job lead ahead of its slot, with its pod template "
        "rewritten so that scheduling, image pulls and the pod's start happen before the slot "
        "and the workload starts at it; not with concurrencyPolicy Queue (an armed Job counts "
        "as running). Unset: the Job is created at the slot.",
    )


class Target(fields.ApiModel):
    """What a run does. Exactly one of http, queue or job."""

    model_config = pydantic.ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "[has(self.http), has(self.queue), has(self.job)]"
                    ".filter(set, set).size() == 1",
                    "message": "set exactly one of http, queue or job",
                }
            ]
        }
    )

    http: HttpTarget | None = pydantic.Field(
        default=None,
        description="Make an HTTP request from the operator. It carries the headers "
        "Idempotency-Key (the slot id) and X-Punctual-Scheduled-Time.",
    )
    queue: QueueTarget | None = pydantic.Field(
        default=None,
        description="Append an entry to a Redis stream (XADD) on the operator's Redis, "
        "atomically with claiming the slot, or push a Celery, RQ, arq, Dramatiq, taskiq, Sidekiq "
        "or BullMQ task onto the tenant's own broker, once per slot; consumers do the work.",
    )
    job: JobTarget | None = pydantic.Field(
        default=None,
        description="Create a batch/v1 Job per slot, like a CronJob. Creating the same slot's "
        "Job twice fails with AlreadyExists, so a slot never runs twice.",
    )

    @pydantic.model_validator(mode="after")
    def _exactly_one_target(self) -> "Target":
        if not _exactly_one_set(self.http, self.queue, self.job):
            raise InvalidSpecError("", "set exactly one of http, queue or job")
        return self


_ONE_ENTRY_SCHEDULE = "set exactly one of schedule (a cron expression) or every (an interval)"


ENTRY_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
"""An entry's name is a DNS label: it shows in status, Events and logs as it is."""


class ScheduleEntry(fields.ApiModel):
    """One of several schedules of a job (spec.schedules): a cron expression or an
    interval, in its own time zone with its own DST rules."""

    model_config = pydantic.ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "has(self.schedule) != has(self.every)", "message": _ONE_ENTRY_SCHEDULE}
            ]
        }
    )

    name: str = pydantic.Field(
        min_length=1,
        max_length=63,
        pattern=ENTRY_NAME_PATTERN,
        description="The entry's name, unique in the list: a DNS label (lower-case letters, "
        "digits and '-'). status.recentRuns names the entries that fired each run.",
    )
    schedule: str | None = pydantic.Field(
        default=None,
        min_length=1,
        max_length=128,
        description="A cron expression, as spec.schedule. Exactly one of schedule or every.",
    )
    every: fields.Duration | None = pydantic.Field(
        default=None,
        description="An interval, as spec.every. Exactly one of schedule or every.",
    )
    time_zone: str | None = pydantic.Field(
        default=None,
        min_length=1,
        max_length=64,
        description="The IANA time zone this entry's cron expression is evaluated in. Unset: "
        "spec.timeZone.",
    )
    dst: DstSpec | None = pydantic.Field(
        default=None,
        description="This entry's DST rules, as spec.dst. Unset: spec.dst.",
    )

    @pydantic.model_validator(mode="after")
    def _one_schedule(self) -> "ScheduleEntry":
        if (self.schedule is None) == (self.every is None):
            raise InvalidSpecError("schedule", _ONE_ENTRY_SCHEDULE)
        return self


_DATES_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(/[0-9]{4}-[0-9]{2}-[0-9]{2})?$"


class DaysSpec(fields.ApiModel):
    """Days, by date and by recurring rule: what a Calendar holds and spec.exclude leaves out.
    They are local days in the zone of the job that excludes them."""

    dates: tuple[
        Annotated[str, pydantic.Field(min_length=10, max_length=21, pattern=_DATES_PATTERN)], ...
    ] = pydantic.Field(
        default=(),
        max_length=exclusions.MAX_DAYS,
        description="Dates (2026-12-25) and inclusive ranges of dates (2026-12-24/2026-12-31).",
    )
    days: tuple[Annotated[str, pydantic.Field(min_length=1, max_length=64)], ...] = pydantic.Field(
        default=(),
        max_length=exclusions.MAX_RULES,
        description="Recurring days: the three day fields of a cron expression, 'day-of-month "
        "month day-of-week' ('25 12 *': every 25 December; '* * SAT,SUN': weekends; "
        "'* * 1#1': the first Monday of each month), read as spec.schedule reads them "
        "(docs/time.md).",
    )


CALENDAR_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
"""A Calendar's name is an object name (a DNS subdomain)."""


class ExcludeSpec(DaysSpec):
    """Days on which no slot runs (spec.exclude): each such slot is counted excluded."""

    calendars: tuple[
        Annotated[str, pydantic.Field(min_length=1, max_length=253, pattern=CALENDAR_NAME_PATTERN)],
        ...,
    ] = pydantic.Field(
        default=(),
        max_length=MAX_CALENDARS,
        description="Calendars (punctual.dev/v1alpha1 Calendar) in the job's namespace whose "
        "days are excluded too, by name. An edit of one applies at once; a Calendar that does "
        "not exist makes the job not Ready (reason CalendarNotFound).",
    )
    time_zone: str | None = pydantic.Field(
        default=None,
        min_length=1,
        max_length=64,
        description="The IANA time zone whose local days are excluded. Unset: spec.timeZone.",
    )


_ONE_SCHEDULE = (
    "set exactly one of schedule (a cron expression) or every (an interval) or schedules "
    "(several named ones), or neither with startsAt for a one-off run"
)
_WINDOW_RISES = "endsAt must be after startsAt"
_SPEC_RULES: list[pydantic.JsonValue] = [
    {
        "rule": "has(self.schedules) ? !has(self.schedule) && !has(self.every) : "
        "has(self.schedule) ? !has(self.every) : (has(self.every) || has(self.startsAt))",
        "message": _ONE_SCHEDULE,
    },
    {
        "rule": "!has(self.startsAt) || !has(self.endsAt) || self.endsAt > self.startsAt",
        "message": _WINDOW_RISES,
        "fieldPath": ".endsAt",
    },
    {
        # Malformed durations are reported on their own fields; compare only well-formed ones.
        "rule": "!has(self.jitter) || !has(self.every) || "
        f"!self.jitter.matches('{fields.DURATION_PATTERN}') || "
        f"!self.every.matches('{fields.DURATION_PATTERN}') "
        "|| duration(self.jitter) < duration(self.every)",
        "message": "jitter must be shorter than every",
        "fieldPath": ".jitter",
    },
]


class ScheduledJobSpec(fields.ApiModel):
    """When a ScheduledJob runs, what each run does, and what happens when runs are late."""

    model_config = pydantic.ConfigDict(json_schema_extra={"x-kubernetes-validations": _SPEC_RULES})

    schedule: str | None = pydantic.Field(
        default=None,
        min_length=1,
        max_length=128,
        description="A cron expression evaluated in timeZone: 5 fields (minute hour "
        "day-of-month month day-of-week), or 6 with leading seconds, or one of @hourly, "
        "@daily, @weekly, @monthly, @yearly. Day fields also take L (last day: L, 15-L), nW "
        "(nearest weekday: 15W), nL (last weekday: 5L), n#k (k-th weekday: 1#2) and ?; ranges "
        "may wrap (FRI-MON); H, H(a-b), H/n take a value fixed per job from its namespace and "
        "name (docs/time.md). Not supported: R, L-n, LW, a year field. At most one of "
        "schedule or every. Checked by the operator, which reports a bad expression on the "
        "Ready condition (reason InvalidSpec).",
    )
    every: fields.Duration | None = pydantic.Field(
        default=None,
        description="A fixed interval instead of a cron schedule, as a positive Go-style "
        "duration (250ms, 10s, 5m, 1h30m). Slots are the multiples of it since the Unix epoch "
        "(UTC), so every replica computes the same slots. At most one of schedule or every. The "
        "operator refuses slots closer than its minimum period (punctual run --min-period, "
        "1s by default), whether from every or from a cron seconds field.",
    )
    schedules: tuple[ScheduleEntry, ...] | None = pydantic.Field(
        default=None,
        min_length=1,
        max_length=merged.MAX_ENTRIES,
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
        },
        description="Several named schedules instead of one schedule or every (at most "
        f"{merged.MAX_ENTRIES}, names unique). Their slots merge into one timeline: entries "
        "landing on the same instant are one slot and one run, recorded with the names of all "
        "of them; history, concurrencyPolicy, missedRuns, jitter, startsAt and endsAt apply to "
        "the job as a whole. Each entry takes timeZone and dst of its own, spec's by default.",
    )
    starts_at: fields.Instant | None = pydantic.Field(
        default=None,
        description="No slot before this instant (RFC 3339 with an offset, e.g. "
        "2026-12-24T18:00:00+01:00); a slot exactly at it runs. Without schedule and every: "
        "one run, exactly once, at this instant (if the job exists before it).",
    )
    ends_at: fields.Instant | None = pydantic.Field(
        default=None,
        description="No slot at or after this instant (RFC 3339 with an offset); after startsAt. "
        "Past it the job is Ready with reason Ended.",
    )
    time_zone: str = pydantic.Field(
        default="UTC",
        min_length=1,
        max_length=64,
        description="The IANA time zone the cron schedule is evaluated in, e.g. "
        "Europe/Copenhagen. Default UTC; also the zone of the entries of schedules that set "
        "none. Does not affect every.",
    )
    dst: DstSpec = pydantic.Field(
        default_factory=DstSpec,
        json_schema_extra={"default": {}},
        description="What a fixed-hour cron schedule does on the nights clocks change: "
        "slots whose local time does not exist or happens twice. The defaults run a daily job "
        "exactly once every local day.",
    )
    exclude: ExcludeSpec | None = pydantic.Field(
        default=None,
        description="Days on which no slot runs (public holidays, a freeze): dates, ranges "
        "of dates and recurring days, local days in the job's zone. An excluded slot is "
        "never run and never missed: it is counted in status.counts.excluded. One occurrence "
        "is skipped with punctual skip.",
    )
    jitter: fields.Duration | None = pydantic.Field(
        default=None,
        description="Spread load: every slot of this ScheduledJob fires a fixed offset late, "
        "between 0 and jitter, derived from the object's uid (the same on every replica, never "
        "drawn per run). Must be shorter than the schedule's shortest period. A positive "
        "Go-style duration, e.g. 30s.",
    )
    missed_runs: MissedRunsSpec = pydantic.Field(
        default_factory=MissedRunsSpec,
        json_schema_extra={"default": {}},
        description="What happens to slots that came due while no replica could run them "
        "(operator downtime, a long stall, a clock jump).",
    )
    concurrency_policy: overlap.ConcurrencyPolicy = pydantic.Field(
        default=overlap.ConcurrencyPolicy.FORBID,
        description="What a slot does while an earlier run is still going. Forbid (default): "
        "skip it and count it (SkippedOverlap). Allow: run alongside. Replace: cancel the "
        "running one, then run. Queue: start when the running one finishes, with at most "
        "maxQueued waiting (more are skipped and counted).",
    )
    max_queued: fields.WholeNumber = pydantic.Field(
        default=1,
        ge=1,
        le=100,
        description="With concurrencyPolicy Queue, how many slots may wait for the running one. "
        "Between 1 and 100; default 1.",
    )
    timeout: fields.Duration = pydantic.Field(
        default="10m",
        description="How long one run may take before it is cancelled and recorded as TimedOut "
        "(for the job target: the Job's activeDeadlineSeconds). A positive Go-style duration; "
        "default 10m; at most the operator's maximum (punctual run --max-timeout, 24h by "
        "default).",
    )
    suspend: pydantic.StrictBool = pydantic.Field(
        default=False,
        description="True stops new runs from starting; it does not affect runs already in "
        "progress. Default false.",
    )
    suspend_after_failures: fields.WholeNumber | None = pydantic.Field(
        default=None,
        ge=1,
        le=1000,
        description="Pause on failure: after this many runs in a row that did not succeed "
        "(Failed, TimedOut or Lost; skipped and missed slots neither count nor reset the "
        "count, a success resets it), the operator sets spec.suspend to true itself, with the "
        "Suspended condition's reason SuspendedAfterFailures and a Warning Event. The count is "
        "status.consecutiveFailures; setting suspend back to false resumes the job and resets "
        "it. Between 1 and 1000. Unset (default): never.",
    )
    retry_lost_runs: pydantic.StrictBool = pydantic.Field(
        default=False,
        description="When the operator replica running a slot dies mid-run (the run is then "
        "recorded Lost, within about 20 seconds), run that slot once more on another replica, "
        "with the same Idempotency-Key so the target can tell. A retry that is lost too is "
        "not retried. Default false. Needs the redis lock backend.",
    )
    history: HistorySpec = pydantic.Field(
        default_factory=HistorySpec,
        json_schema_extra={"default": {}},
        description="How many finished runs status.recentRuns keeps, by outcome (and how many "
        "finished Jobs of the job target are kept).",
    )
    target: Target = pydantic.Field(
        description="What each run does: exactly one of http, queue or job.",
    )

    @pydantic.model_validator(mode="after")
    def _one_schedule(self) -> "ScheduledJobSpec":
        given = [
            name
            for name, value in (
                ("schedule", self.schedule),
                ("every", self.every),
                ("schedules", self.schedules),
            )
            if value is not None
        ]
        if len(given) > 1:
            raise InvalidSpecError(given[0], f"{_ONE_SCHEDULE} (got {' and '.join(given)})")
        if not given and self.starts_at is None:
            raise InvalidSpecError("schedule", _ONE_SCHEDULE)
        return self

    @pydantic.model_validator(mode="after")
    def _entry_names_unique(self) -> "ScheduledJobSpec":
        seen: set[str] = set()
        for index, entry in enumerate(self.schedules or ()):
            if entry.name in seen:
                raise InvalidSpecError(
                    f"schedules[{index}].name", f"{entry.name!r} names an earlier entry too"
                )
            seen.add(entry.name)
        return self

    @pydantic.model_validator(mode="after")
    def _window_rises(self) -> "ScheduledJobSpec":
        starts_at, ends_at = self.starts_at, self.ends_at
        if starts_at is not None and ends_at is not None and ends_at <= starts_at:
            raise InvalidSpecError("endsAt", _WINDOW_RISES)
        return self

    @pydantic.model_validator(mode="after")
    def _jitter_below_every(self) -> "ScheduledJobSpec":
        if self.jitter is None or self.every is None:
            return self
        jitter = durations.parse(self.jitter, field="jitter")
        if jitter >= durations.parse(self.every, field="every"):
            raise InvalidSpecError("jitter", "jitter must be shorter than every")
        return self


class CalendarSpec(DaysSpec):
    """Named days (public holidays, a freeze) that ScheduledJobs of its namespace exclude by
    the Calendar's name (spec.exclude.calendars): local days in each job's zone."""
