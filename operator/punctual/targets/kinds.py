"""The target kinds this operator runs: the one list of plug-ins (``targets.plugin``), and the
dispatch of a spec to its kind. Adding a kind is its package and one line in ``KINDS``."""

import contextlib
import dataclasses
from collections.abc import Callable, Mapping
from typing import Final, Self

from punctual.api import models
from punctual.contracts import protocols
from punctual.scheduling import slots
from punctual.targets import plugin
from punctual.targets.http import plugin as http_plugin
from punctual.targets.job import plugin as batch_job_plugin
from punctual.targets.queue import plugin as queue_plugin

KINDS: Final[tuple[plugin.TargetKind, ...]] = (
    http_plugin.KIND,
    batch_job_plugin.KIND,
    queue_plugin.KIND,
)
NAMES: Final = tuple(kind.name for kind in KINDS)
"""The keys under ``spec.target``, and the values of the metrics' ``target`` label."""


def kind_of(spec: models.ScheduledJobSpec) -> plugin.TargetKind:
    """The kind of ``spec.target``: the one key set (the model admits exactly one)."""
    for kind in KINDS:
        if getattr(spec.target, kind.name) is not None:
            return kind
    raise ValueError("spec.target: no target kind set")


def check(spec: models.ScheduledJobSpec) -> None:
    """The checks of ``spec.target``'s own kind; raises ``InvalidSpecError``."""
    kind_of(spec).check(spec)


class Targets:
    """Every kind's targets, started: a spec wired by its own kind."""

    def __init__(
        self,
        started: Mapping[str, plugin.Targets],
        *,
        meter_lock: Callable[[protocols.SlotLock], protocols.SlotLock] = lambda lock: lock,
    ) -> None:
        """``started``: by kind name; ``meter_lock`` wraps the slot locks of the kinds that
        bring their own (the queue's streams), so that their claims are counted."""
        self._started = dict(started)
        self._meter_lock = meter_lock

    @classmethod
    async def start(
        cls,
        resources: plugin.Resources,
        exit_stack: contextlib.AsyncExitStack,
        *,
        meter_lock: Callable[[protocols.SlotLock], protocols.SlotLock] = lambda lock: lock,
    ) -> Self:
        """Every kind started in the order of ``KINDS`` (closed in reverse by
        ``exit_stack``)."""
        started = {kind.name: await kind.start(resources, exit_stack) for kind in KINDS}
        return cls(started, meter_lock=meter_lock)

    def wire(self, job: slots.JobRef, spec: models.ScheduledJobSpec) -> plugin.Wiring:
        """An executor (and lock) for ``spec.target``.

        Raises ``InvalidSpecError`` for what cannot run, ``TargetUnavailableError``
        (``punctual.targets.errors``) for what this operator cannot run.
        """
        wiring = self._started[kind_of(spec).name].wire(job, spec)
        if wiring.lock is None:
            return wiring
        return dataclasses.replace(wiring, lock=self._meter_lock(wiring.lock))
