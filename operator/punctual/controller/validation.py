"""The operator's whole check of a ScheduledJob's ``spec``: one home for the two places that
report what it finds.

Without the admission webhook, the reconciler reports it in status (``Ready: False``, reason
``InvalidSpec``) and a Warning Event; with it, the same error refuses the ``kubectl apply``
(``punctual.controller.admission``). Either way the message is the ``InvalidSpecError``'s,
``<field path>: <problem>``, the path being the one users wrote (``spec.schedule``).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from punctual.api import models, planning, spec_bounds, spec_parsing
from punctual.scheduling import plans
from punctual.targets import kinds


@dataclass(frozen=True, slots=True)
class Checked:
    spec: models.ScheduledJobSpec
    plan: plans.JobPlan


def check(
    raw_spec: Mapping[str, object],
    *,
    uid: str,
    hash_key: str,
    bounds: spec_bounds.Bounds,
    now: datetime,
    skipped: frozenset[datetime] = frozenset(),
    calendars: Mapping[str, Mapping[str, object]] | None = None,
) -> Checked:
    """The spec read (``spec_parsing.parse_spec``), its plan (``planning.plan_for``: cron, time
    zone, jitter, durations, the platform's ``bounds``; ``H`` from ``hash_key``), a slot within
    the bounds' horizon of ``now`` (``planning.check_fires``) and its target kind's own checks
    (``targets.kinds.check``: an HTTP request that can be sent, a Job template with a JobSpec);
    the plan leaves out the ``skipped`` slots (``punctual.dev/skip``) and the days of the
    ``calendars`` it names (the specs of its namespace's Calendars by name; None: not checked,
    as at admission, where a Calendar may be created after its job). Raises
    ``InvalidSpecError``.

    Of the operator's configuration only the ``bounds`` count here (a spec past them is
    invalid on this operator, whatever else it has): what this operator cannot run for want of
    its allowlist, its Redis or its right to create Jobs is the wiring's
    ``TargetUnavailableError``.
    """
    spec = spec_parsing.parse_spec(raw_spec)
    plan = planning.plan_for(
        spec, uid=uid, hash_key=hash_key, bounds=bounds, skipped=skipped, calendars=calendars
    )
    planning.check_fires(spec, plan, now=now, years=bounds.schedule_horizon_years)
    kinds.check(spec)
    return Checked(spec=spec, plan=plan)
