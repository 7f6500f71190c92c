"""A target kind is one plug-in, listed once (``punctual.targets.kinds``):

- every key of ``spec.target`` is a kind's name, and every kind's name a key of it;
- a spec goes to its own kind, for its checks and its wiring;
- the slot lock a kind brings is metered, the operator's lock is left to the operator;
- the kinds start on what the replica shares, and close what they opened with it;
- the chart grants each kind the API access it says it needs.
"""

import contextlib
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from punctual.api import models, spec_parsing
from punctual.contracts import protocols
from punctual.kube import secrets
from punctual.scheduling import slots
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets import addresses, kinds, plugin
from punctual.targets.http import executor as http_executor

JOB = slots.JobRef(namespace="reports", name="nightly", uid="5f0c1d2e-uid")
HELPERS = Path(__file__).resolve().parents[3] / "charts" / "punctual" / "templates" / "_helpers.tpl"
TARGETS = {
    "http": {"url": "http://report.reports.svc/"},
    "job": {"template": {"spec": {"template": {"spec": {"containers": []}}}}},
    "queue": {"stream": "reports"},
}


def spec(target: dict[str, Any]) -> models.ScheduledJobSpec:
    return spec_parsing.parse_spec({"every": "1m", "target": target})


def test_every_key_of_spec_target_is_one_kind() -> None:
    assert sorted(kinds.NAMES) == sorted(models.Target.model_fields)
    assert len(set(kinds.NAMES)) == len(kinds.KINDS)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_a_spec_goes_to_the_kind_of_its_one_target(name: str) -> None:
    assert kinds.kind_of(spec({name: TARGETS[name]})).name == name


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ({"http": {"url": "http://a.svc/", "headers": {"Host": "b"}}}, "spec.target.http.headers"),
        ({"job": {"template": {"metadata": {}}}}, "spec.target.job.template.spec"),
    ],
)
def test_a_kind_checks_its_own_target(target: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidSpecError) as refused:
        kinds.check(spec(target))

    assert refused.value.field.startswith(field)


class _LockOfItsOwn:
    def __init__(self, lock: protocols.SlotLock | None) -> None:
        self.lock = lock

    def wire(self, job: slots.JobRef, spec: models.ScheduledJobSpec) -> plugin.Wiring:
        return plugin.Wiring(cast(protocols.Executor, object()), self.lock)


@pytest.mark.parametrize("own_lock", [True, False])
def test_only_the_lock_a_kind_brings_is_metered(own_lock: bool) -> None:
    lock = cast(protocols.SlotLock, object()) if own_lock else None
    metered = cast(protocols.SlotLock, object())
    wired = kinds.Targets(
        {"queue": _LockOfItsOwn(lock)}, meter_lock=lambda seen: metered if seen is lock else seen
    ).wire(JOB, spec({"queue": TARGETS["queue"]}))

    assert wired.lock is (metered if own_lock else None)


async def test_the_kinds_start_on_the_shared_resources_and_close_with_the_stack() -> None:
    resources = plugin.Resources(
        api=cast(Any, object()),
        secrets=cast(secrets.SecretReader, object()),
        guard=addresses.AddressGuard(),
        http_connections_per_namespace=4,
        queue_max_len=10,
        max_stream_bytes=1_000,
        stream_idle_expiry=timedelta(days=1),
    )
    async with contextlib.AsyncExitStack() as stack:
        started = await kinds.Targets.start(resources, stack)
        wired = started.wire(JOB, spec({"http": TARGETS["http"]}))
        closes = len(stack._exit_callbacks)  # what the kinds left to close

    assert isinstance(wired.executor, http_executor.HttpExecutor)
    assert closes == 3  # the HTTP connections, the Job watch, the tenants' brokers (no Redis)


def _granted_rules() -> list[dict[str, list[str]]]:
    """The chart's namespaced rules, every optional block included."""
    text = HELPERS.read_text()
    start = text.index('define "punctual.namespacedRules"')
    block = text[start : text.index("{{- end -}}", start)]
    lines = [line for line in block.splitlines()[1:] if not line.lstrip().startswith("{{")]
    return cast(list[dict[str, list[str]]], yaml.safe_load("\n".join(lines)))


@pytest.mark.parametrize("kind", kinds.KINDS, ids=lambda kind: kind.name)
def test_the_chart_grants_what_each_kind_needs(kind: plugin.TargetKind) -> None:
    granted = _granted_rules()
    for rule in kind.access:
        assert any(
            rule.api_group in grant["apiGroups"]
            and rule.resource in grant["resources"]
            and set(rule.verbs) <= set(grant["verbs"])
            for grant in granted
        ), rule


def test_the_chart_grants_no_other_kind_of_access_than_the_kinds_and_the_operator() -> None:
    needed = {(rule.api_group, rule.resource) for kind in kinds.KINDS for rule in kind.access}
    operators_own = {
        ("punctual.dev", "scheduledjobs"),
        ("punctual.dev", "scheduledjobs/status"),
        ("punctual.dev", "calendars"),
        ("", "events"),
        ("events.k8s.io", "events"),
    }
    granted = {
        (group, resource)
        for grant in _granted_rules()
        for group in grant["apiGroups"]
        for resource in grant["resources"]
    }
    assert granted == needed | operators_own
