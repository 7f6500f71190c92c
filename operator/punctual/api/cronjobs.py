"""From Kubernetes CronJobs (batch/v1) to the ScheduledJobs that behave the same: what
``punctual convert`` prints.

Belongs here: the entry points (``convert_document`` for a document, a CronJob or a List or
CronJobList of them; ``convert`` for one CronJob), what becomes of each object (``Conversion``)
and what the caller chooses where a CronJob says nothing (``Defaults``): manifests in (mappings,
as read from YAML or the API server), manifests plus problems out. One CronJob's translation is
``punctual.api.cronjob_translation``'s (its schedule ``punctual.api.cronjob_schedules``'s), the
problems and their wording ``punctual.api.cronjob_problems``'s. Reading files, YAML and printing
are the command's (``punctual.cli.convert``).

What a ScheduledJob is given (the README's "Moving from CronJob" has the table):

- ``schedule`` as written (macros included); a ``TZ=``/``CRON_TZ=`` prefix becomes
  ``timeZone``, and ``@every D`` becomes ``every`` (CronJob counts it from the last run, a
  ScheduledJob from the Unix epoch: a problem, since the phase is lost). ``timeZone`` as
  written, else ``Defaults.time_zone`` (UTC: the zone kube-controller-manager usually runs
  in). Cron schedules get ``dst: {nonexistent: Skip, ambiguous: Both}``, what CronJob's
  cron library does (a skipped local time does not run; a repeated one runs twice).
  ``spec.schedule`` reads the two day fields as CronJob does (docs/time.md), so the slots are
  CronJob's, DST included: ``tests/unit/api/test_convert_differential.py`` checks them against
  CronJob's own library. Refused, as the operator's check of ``spec.schedule``: ``?`` inside a
  list (CronJob reads it as ``*``), and a schedule with no slot (CronJob accepts it and never
  runs it).
- ``concurrencyPolicy`` as written, else ``Allow`` (CronJob's default, not ours); ``suspend``;
  ``missedRuns.policy: RunOnce`` (CronJob runs only the newest missed slot) with
  ``startingDeadlineSeconds`` as ``missedRuns.startingDeadline``; ``history`` from the two
  history limits (CronJob's defaults: 3 succeeded, 1 failed).
- ``timeout``: the jobTemplate's ``activeDeadlineSeconds`` (moved out of the template: the
  operator writes ``timeout`` there), else ``Defaults.timeout`` (24h; CronJob has none).
- ``target.job.template``: the ``jobTemplate`` (metadata + spec); metadata keeps name,
  namespace, labels and annotations, and drops what the API server set.

A field that cannot be carried over is a ``Problem`` naming its path in the CronJob
(``spec.jobTemplate.foo``): it is left out (or the nearest value is written, which the problem
says) and the rest is converted all the same. Every ScheduledJob returned has passed the
operator's own check (``spec_parsing.parse_spec``, then ``planning.plan_for``); one that does not is
not returned, and the check's refusal is its problem.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from punctual.api import cronjob_problems, cronjob_translation

CRONJOB_KIND = "CronJob"
CRONJOB_API_VERSIONS = ("batch/v1", "batch/v1beta1")
"""batch/v1beta1 (gone since Kubernetes 1.25) has the same fields, but for timeZone."""
LIST_KINDS = ("List", f"{CRONJOB_KIND}List")
"""``kubectl get cronjob -o yaml`` gives a ``List``; the API server's own list is a
``CronJobList``, whose items carry no apiVersion or kind."""

DEFAULT_TIME_ZONE = "UTC"
"""Written for a CronJob without timeZone, which runs in kube-controller-manager's local zone."""
DEFAULT_TIMEOUT = "24h"
"""Written for a CronJob whose Jobs have no activeDeadlineSeconds: CronJob never stops a run,
a ScheduledJob always does. Long, but bounded: each slot's claim lives this long (plus a
minute) in the lock backend."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversion:
    """What became of one object of the input."""

    subject: str
    """The object, for messages: ``CronJob reports/nightly``."""
    scheduled_job: dict[str, Any] | None
    """The ScheduledJob manifest, checked by the operator's own check; None: none could be made."""
    problems: tuple[cronjob_problems.Problem, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Defaults:
    """What is written where a CronJob says nothing and CronJob's behaviour has no equivalent."""

    time_zone: str = DEFAULT_TIME_ZONE
    """For CronJobs without timeZone: the zone their kube-controller-manager runs in."""
    timeout: str = DEFAULT_TIMEOUT
    """For CronJobs whose jobTemplate has no activeDeadlineSeconds."""

    def check(self) -> None:
        """Raises ``InvalidSpecError`` (field ``spec.timeZone`` or ``spec.timeout``) for a zone
        or a duration the operator would refuse."""
        probe = {
            "schedule": "@daily",
            "timeZone": self.time_zone,
            "timeout": self.timeout,
            "target": {"job": {"template": {"spec": {}}}},
        }
        cronjob_translation.check(probe)


def convert_document(
    document: Mapping[str, Any], *, defaults: Defaults = Defaults(), location: str = ""
) -> list[Conversion]:
    """Every object of one document: a CronJob, or a List or CronJobList of them.

    Anything else (another kind, an item that is no object) is a Conversion without a
    ScheduledJob and with the problem that says so. ``location`` names the document's place
    in its input (``items[2]``) in the subject of an object that has no name.
    """
    kind = document.get("kind")
    api_version = document.get("apiVersion")
    if kind in LIST_KINDS:
        return _convert_list(document, defaults=defaults, location=location)
    subject = cronjob_problems.subject(document, location=location)
    if kind != CRONJOB_KIND or api_version not in CRONJOB_API_VERSIONS:
        problem = cronjob_problems.Problem(
            path="",
            message=f"not a CronJob of {' or '.join(CRONJOB_API_VERSIONS)} (kind "
            f"{cronjob_problems.show(kind)}, apiVersion {cronjob_problems.show(api_version)}): "
            "left out",
        )
        return [Conversion(subject=subject, scheduled_job=None, problems=(problem,))]
    return [convert(document, defaults=defaults, location=location)]


def convert(
    cronjob: Mapping[str, Any], *, defaults: Defaults = Defaults(), location: str = ""
) -> Conversion:
    """The ScheduledJob that behaves as ``cronjob`` does, and what could not be carried over."""
    translation = cronjob_translation.Translation(
        default_time_zone=defaults.time_zone, default_timeout=defaults.timeout
    )
    scheduled_job = translation.scheduled_job(cronjob)
    if scheduled_job is not None:
        scheduled_job = translation.checked(scheduled_job)
    return Conversion(
        subject=cronjob_problems.subject(cronjob, location=location),
        scheduled_job=scheduled_job,
        problems=tuple(translation.problems),
    )


def _convert_list(
    document: Mapping[str, Any], *, defaults: Defaults, location: str
) -> list[Conversion]:
    items = document.get("items")
    if items is None:
        return []
    if not isinstance(items, list):
        problem = cronjob_problems.Problem(
            path="items", message=f"must be a list, not {cronjob_problems.kind_of(items)}"
        )
        subject = f"{location}: {document['kind']}" if location else str(document["kind"])
        return [Conversion(subject=subject, scheduled_job=None, problems=(problem,))]
    conversions = []
    for index, item in enumerate(items):
        where = f"{location}, items[{index}]" if location else f"items[{index}]"
        if not isinstance(item, Mapping):
            problem = cronjob_problems.Problem(
                path="", message=f"not an object but {cronjob_problems.kind_of(item)}: left out"
            )
            conversions.append(Conversion(subject=where, scheduled_job=None, problems=(problem,)))
            continue
        # A CronJobList's items are CronJobs of the list's version, without apiVersion or kind.
        typed = (
            item
            if document["kind"] == "List"
            else {"apiVersion": document.get("apiVersion"), "kind": CRONJOB_KIND, **item}
        )
        conversions.extend(convert_document(typed, defaults=defaults, location=where))
    return conversions
