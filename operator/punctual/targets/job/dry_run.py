"""The job target at admission: a server-side dry run of the batch Job a slot would create.

What the CRD schema cannot check of ``spec.target.job.template`` (it keeps the JobSpec as an
opaque object) the API server can: the webhook sends it the very Job the executor would create
(``manifests.batch_job_manifest``) with ``dryRun=All``, so the Job's schema, its defaulting, its
pod template's validation and the cluster's admission run on it, and nothing is stored.

Only the template's faults refuse the ScheduledJob: an answer 422 (Invalid: the API server names
each field) or 400 (the JobSpec does not decode). Anything else is the moment's, not the
template's (a quota full right now, a policy on Jobs, an API server slow or down, no right to
create Jobs): the ScheduledJob is admitted with a warning, and the run at the slot reports what
happens then.

A warm start's Job is dry-run as it will be armed, its template rewritten (``targets.job.warm``):
PodSecurity's verdict and a quota's are about the containers that will really run, the gate's
among them. A field of one of the init containers it puts first is told as
``spec.target.job.warmStart``, and the user's init containers by their index in the template.
"""

import asyncio
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from punctual.api import job_models, warm_pods
from punctual.scheduling import durations, slots
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets.job import manifests, requests, warm

TIMEOUT = timedelta(seconds=5)
"""The longest a dry run may take: the webhook must answer well within its ``timeoutSeconds``
(10 s in the chart), or the API server gives up on it and the failure policy decides instead."""
TEMPLATE = "spec.target.job.template"
WARM_START = "spec.target.job.warmStart"
_POD_SPEC = "spec.template.spec."
_INIT_CONTAINER = re.compile(r"spec\.template\.spec\.initContainers\[([0-9]+)\](.*)")
_MESSAGE_LIMIT = 300
"""The API server's words are quoted, cut to this: its messages repeat the values given."""
_OURS = ("metadata.name", "metadata.namespace", "metadata.ownerReferences")
"""The Job's fields the operator writes itself: only the name comes from users (the
ScheduledJob's own)."""


async def check(
    api: requests.BatchJobsApi,
    *,
    owner: slots.JobRef,
    template: Mapping[str, Any],
    active_deadline: timedelta,
    slot: datetime,
    within: timedelta = TIMEOUT,
    warm_start: job_models.WarmStart | None = None,
    gate_image: str | None = None,
) -> str | None:
    """Dry-run the Job of ``slot``: raises ``InvalidSpecError`` (the path users wrote, under
    ``spec.target.job.template``) when the API server finds it invalid; returns a warning when
    the dry run could not say, ``None`` when the Job passed.

    With a ``warm_start``, the Job is the warm one, releasing a lead after ``slot`` (any
    instant ahead does for a dry run), its gate from ``warm_start.gateImage``, else
    ``gate_image`` (the operator's ``--warm-start-gate-image``), else the gate's bare name."""
    added: list[str] = []
    if warm_start is not None:
        lead = durations.parse(warm_start.lead, field=f"{WARM_START}.lead")
        armed = warm.rewrite(
            template,
            release_at=slot + lead,
            mode=warm_start.mode,
            gate_image=warm_start.gate_image or gate_image or warm_pods.GATE,
        )
        template = armed.template
        added = _added_init_containers(template)
    else:
        lead = timedelta()
    request = manifests.BatchJobRequest.of(
        manifests.batch_job_manifest(
            template,
            owner=owner,
            slot=slot,
            slot_id=slots.slot_id(owner, slot),
            scheduled_time=slot,
            active_deadline=active_deadline,
            lead=lead,
        )
    )
    try:
        async with asyncio.timeout(within.total_seconds()):
            status, body = await api.dry_run(request)
    except TimeoutError:
        waited = durations.format(within)
        return f"{TEMPLATE}: not checked, the dry run of its Job took longer than {waited}"
    except requests.BatchJobApiError as error:
        return f"{TEMPLATE}: not checked ({error})"
    if status in (200, 201, 202):
        return None
    if status in (400, 422):
        raise _invalid(body, added=added)
    return f"{TEMPLATE}: not checked, the dry run of its Job was answered {_summary(status, body)}"


def _added_init_containers(template: Mapping[str, Any]) -> list[str]:
    """The names of the init containers the warm start put first (the template's own cannot
    bear them: ``warm_pods.check``)."""
    init_containers = warm_pods.objects_in(warm_pods.pod_spec_of(template), "initContainers")
    names: list[str] = []
    for _, container in init_containers:
        name = container.get("name")
        if not (isinstance(name, str) and warm_pods.is_reserved_container_name(name)):
            break
        names.append(name)
    return names


def _invalid(body: Mapping[str, Any], *, added: list[str]) -> InvalidSpecError:
    details = body.get("details")
    causes = details.get("causes") if isinstance(details, Mapping) else None
    causes = [cause for cause in causes or [] if isinstance(cause, Mapping)]
    if not causes:
        return InvalidSpecError(TEMPLATE, _quoted(body.get("message")))
    first = causes[0]
    problem = _quoted(first.get("message"))
    if len(causes) > 1:
        more = len(causes) - 1
        problem += f" (and {more} more problem{'s' if more > 1 else ''})"
    field = first.get("field")
    if added and isinstance(field, str):
        field, ours = _before_warm_start(field, added=added)
        if ours:
            problem = f"the warm start's {ours}: {problem}"
            field = WARM_START
    return InvalidSpecError(_path(field), problem)


def _before_warm_start(field: str, *, added: list[str]) -> tuple[str, str | None]:
    """A field of a warm Job as the template has it: a user's init container by its index
    there; one of the ``added`` first init containers by its name (the second value)."""
    matched = _INIT_CONTAINER.fullmatch(field)
    if matched is None:
        return field, None
    index, rest = int(matched[1]), matched[2]
    if index < len(added):
        return field, f"{added[index]} init container ({field.removeprefix(_POD_SPEC)})"
    return f"{_POD_SPEC}initContainers[{index - len(added)}]{rest}", None


def _path(field: object) -> str:
    """A field of the Job as the ScheduledJob's: ``spec.template...`` is under the template."""
    if not isinstance(field, str) or not field:
        return TEMPLATE
    if field == WARM_START:
        return field
    if field == "metadata.name":
        return field  # the Job is named after the ScheduledJob
    if field.startswith(_OURS):
        return TEMPLATE
    return f"{TEMPLATE}.{field}"


def _quoted(message: object) -> str:
    text = str(message) if message else "invalid"
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."


def _summary(status: int, body: Mapping[str, Any]) -> str:
    reason = body.get("reason")
    text = f"HTTP {status}" + (f" {reason}" if reason else "")
    message = body.get("message")
    return f"{text}: {_quoted(message)}" if message else text
