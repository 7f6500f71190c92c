"""The job target kind (``spec.target.job``: a batch Job per slot) as the operator's plug-in
(``targets.plugin``)."""

import contextlib
from typing import Final

from punctual.api import models
from punctual.targets import plugin
from punctual.targets.job import requests, watcher, wiring


class BatchJobKind:
    """One batch Job per slot, watched by one watch for the whole operator."""

    name: Final = "job"
    access: Final = (
        # One Job per slot, watched to completion, deleted past spec.history or when
        # concurrencyPolicy Replace cancels it.
        plugin.AccessRule(
            api_group="batch",
            resource="jobs",
            verbs=("create", "get", "list", "watch", "delete"),
        ),
        # Warm start: a warm Job's few pods, listed once at its slot (WarmStartNotReady).
        plugin.AccessRule(api_group="", resource="pods", verbs=("list",)),
    )

    def check(self, spec: models.ScheduledJobSpec) -> None:
        if spec.target.job is not None:
            wiring.template_of(spec.target.job)

    async def start(
        self, resources: plugin.Resources, exit_stack: contextlib.AsyncExitStack
    ) -> wiring.BatchJobTargets:
        """The Job requests and their one watch (started by the first job target's wiring,
        closed by ``exit_stack``)."""
        api = requests.BatchJobsApi(resources.api)
        watch = watcher.BatchJobWatcher(api, namespaces=resources.namespaces)
        exit_stack.push_async_callback(watch.close)
        return wiring.BatchJobTargets(
            api=api,
            watcher=watch,
            gate_image=resources.warm_start_gate_image,
            warm_start_reports=resources.warm_start_reports,
        )


KIND: Final = BatchJobKind()
