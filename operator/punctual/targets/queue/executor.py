"""The queue target's executors.

A ``stream`` job claims its slots through a lock that appends the stream entry in the same
atomic step (``punctual.targets.queue.stream``), so a run has nothing left to do but report
which entry it was: ``enqueued <entry id>``. A task's job (every other format,
``task_models.TASK_FORMATS``) is claimed by the operator's lock like any other, and its run pushes
the slot's message onto the tenant's broker (``BrokerExecutor``), claimed once more there
(``punctual.targets.queue.brokers``). Consumers do the work.
"""

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from punctual.api import queue_models
from punctual.contracts import records
from punctual.kube import secrets
from punctual.targets import errors
from punctual.targets import problems as target_problems
from punctual.targets.queue import brokers, pushes


class Entries(Protocol):
    """Where the claim left the id of the entry it appended (the job's stream lock)."""

    def take_entry(self, slot_id: str) -> str | None: ...


class QueueExecutor:
    """``protocols.Executor`` of one stream job."""

    def __init__(self, entries: Entries, *, stream: str) -> None:
        self._entries = entries
        self._stream = stream

    def __repr__(self) -> str:
        return f"QueueExecutor({self._stream!r})"

    async def __call__(self, context: records.RunContext) -> records.Outcome:
        entry = self._entries.take_entry(context.slot_id)
        # A won claim always appended the entry; only its id can be missing (a lost reply).
        return records.Outcome(True, f"enqueued {entry or '(id unknown)'}")


MessageBuilder = Callable[[records.RunContext, datetime], pushes.Push]
"""A format's message of a run's slot, pushed at the given instant (UTC)."""


class BrokerExecutor:
    """``protocols.Executor`` of one job whose task goes to the tenant's broker: reads the
    broker's URL from the job's Secret at each run (cached by the reader, so a rotated Secret
    is picked up), then pushes the slot's message, once per slot at the broker. A broker found
    to be a Redis Cluster node is told to ``problems`` (``BrokerIsCluster``: Ready False), and
    a later run that gets past it takes that back."""

    def __init__(
        self,
        build: MessageBuilder,
        *,
        brokers: brokers.Brokers,
        reader: secrets.SecretReader,
        namespace: str,
        source: queue_models.BrokerSource,
        problems: target_problems.TargetProblems | None = None,
    ) -> None:
        self._build = build
        self._brokers = brokers
        self._reader = reader
        self._namespace = namespace
        self._source = source
        self._problems = problems

    def __repr__(self) -> str:
        return f"BrokerExecutor({self._namespace}/{self._source.secret_name})"

    async def __call__(self, context: records.RunContext) -> records.Outcome:
        where = f"Secret {self._namespace}/{self._source.secret_name}"
        values = await self._reader.read(namespace=self._namespace, name=self._source.secret_name)
        url = values.get(self._source.key, "").strip()
        if not url:
            return self._found(
                context,
                records.Outcome(
                    False,
                    f"{where} has no key {self._source.key!r} (the broker's URL): nothing sent",
                ),
            )
        push = self._build(context, datetime.now(UTC))
        try:
            pushed = await self._brokers.push(
                namespace=self._namespace, url=url, slot_id=context.slot_id, push=push
            )
        except brokers.BrokerIsClusterError as error:
            message = f"{error} (URL from {where} key {self._source.key})"
            problem = target_problems.Problem(errors.BROKER_IS_CLUSTER, message)
            return self._found(context, records.Outcome(False, message), problem)
        except (brokers.BrokerRefusedError, brokers.BrokerUnavailableError) as error:
            return self._found(context, records.Outcome(False, f"{error} (URL from {where})"))
        if not pushed:
            return self._found(
                context,
                records.Outcome(
                    True, f"{push.description}: pushed before for this slot, not pushed again"
                ),
            )
        return self._found(context, records.Outcome(True, f"enqueued {push.description}"))

    def _found(
        self,
        context: records.RunContext,
        outcome: records.Outcome,
        problem: target_problems.Problem | None = None,
    ) -> records.Outcome:
        """``outcome``, after telling ``problems`` what this run found of the broker."""
        if self._problems is not None:
            self._problems.found(context.job, problem)
        return outcome
