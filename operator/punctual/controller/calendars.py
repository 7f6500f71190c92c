"""The Calendars a replica's watch shows, and the ScheduledJobs that name them.

A Calendar is namespaced: a job excludes the days of Calendars of its own namespace only
(``spec.exclude.calendars``), so a tenant's Calendar can change when that tenant's jobs run,
and nobody else's. Every replica watches Calendars; an edit re-plans, at once, each job of the
namespace that names it (``Reconciler.calendar_changed``). Only the jobs that name a Calendar
are kept here, with the last body seen of each: what re-planning them needs.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from punctual.api import day_models
from punctual.kube import resources
from punctual.scheduling import slots

_KEPT = ("apiVersion", "kind", "metadata", "spec", "status")
"""What is kept of a job's body: what planning it again reads (not kopf's view around it)."""


@dataclass(frozen=True, slots=True)
class Named:
    """The Calendars a job names, each with the version of it seen (None: none is)."""

    versions: tuple[tuple[str, str | None], ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.versions)


def named(body: resources.Body) -> tuple[str, ...]:
    """The names in ``spec.exclude.calendars`` as written (the spec's check refuses what is no
    name); a bounded number, whatever the object holds."""
    exclude = (body.get("spec") or {}).get("exclude")
    listed = exclude.get("calendars") if isinstance(exclude, Mapping) else None
    if not isinstance(listed, list):
        return ()
    return tuple(name for name in listed[: day_models.MAX_CALENDARS + 1] if isinstance(name, str))


class Calendars:
    def __init__(self) -> None:
        self._specs: dict[tuple[str, str], tuple[str | None, Mapping[str, object]]] = {}
        self._users: dict[slots.JobRef, resources.Body] = {}

    def remember(self, body: resources.Body) -> None:
        metadata = body["metadata"]
        spec = body.get("spec")
        self._specs[metadata["namespace"], metadata["name"]] = (
            metadata.get("resourceVersion"),
            dict(spec) if isinstance(spec, Mapping) else {},
        )

    def forget(self, body: resources.Body) -> None:
        metadata = body["metadata"]
        self._specs.pop((metadata["namespace"], metadata["name"]), None)

    def named_by(self, body: resources.Body) -> Named:
        """The Calendars ``body`` names, as seen now; the job is kept for re-planning when
        it names any."""
        job = resources.job_ref(body)
        names = named(body)
        if names:
            self._users[job] = {key: body[key] for key in _KEPT if key in body}
        else:
            self._users.pop(job, None)
        return Named(
            tuple((name, self._known(job.namespace, name)[0]) for name in dict.fromkeys(names))
        )

    def specs(self, namespace: str, names: tuple[str, ...]) -> dict[str, Mapping[str, object]]:
        """The specs of the Calendars of ``namespace`` named, those seen."""
        return {
            name: spec for name in names if (spec := self._known(namespace, name)[1]) is not None
        }

    def users(self, namespace: str, name: str) -> list[resources.Body]:
        """The last bodies seen of the jobs of ``namespace`` that name Calendar ``name``."""
        return [
            body
            for job, body in self._users.items()
            if job.namespace == namespace and name in named(body)
        ]

    def drop(self, job: slots.JobRef) -> None:
        self._users.pop(job, None)

    def _known(self, namespace: str, name: str) -> tuple[str | None, Mapping[str, object] | None]:
        return self._specs.get((namespace, name), (None, None))
