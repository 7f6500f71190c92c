"""The ScheduledJob CustomResourceDefinition, generated from the API models
(``punctual.api.models`` and the modules of its parts for the spec, ``punctual.api.status_models``
for the status).

The CRD in ``crds/`` is this module's output (``punctual crd``), never edited by hand, so the
schema the API server enforces and the models the operator reads through are one definition.

pydantic writes JSON Schema (2020-12); Kubernetes wants a *structural* OpenAPI v3 schema. The
translation inlines every ``$ref``, turns ``Optional`` (``anyOf`` with ``null``) into the plain
type (an absent field is how Kubernetes spells "unset"), drops ``title`` and
``additionalProperties: false`` (the API server prunes or, with strict field validation,
rejects unknown fields by itself), and refuses anything it does not know how to translate,
rather than emit a CRD the API server would reject or misread.
"""

import copy
from collections.abc import Mapping
from typing import Any

import pydantic

from punctual.api import day_models, models, status_models

Schema = dict[str, Any]
"""A JSON or OpenAPI schema node, as plain data."""

CRD_NAME = f"{models.PLURAL}.{models.GROUP}"

_ORDER = (
    "description",
    "type",
    "format",
    "enum",
    "default",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "maxProperties",
    "items",
    "properties",
    "required",
    "additionalProperties",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-validations",
)
"""Every keyword the translation may emit, in the order it emits them (stable, readable)."""

_RULE_ORDER = ("rule", "message", "messageExpression", "reason", "fieldPath")

STRUCTURAL_TYPES = frozenset({"object", "array", "string", "integer", "boolean"})
"""No ``number``: the API carries no floats."""

PRINTER_COLUMNS = [
    # From status: a column reads one field, and the schedule is in spec.schedule, spec.every
    # or (a one-off) spec.startsAt; the operator states it, as written, in status.schedule.
    {
        "name": "Schedule",
        "type": "string",
        "jsonPath": ".status.schedule",
        "description": "The schedule: the cron text, every <interval>, or once at <instant>",
    },
    # The same for what a run does: the queue target's format is which of its fields is set.
    {
        "name": "Target",
        "type": "string",
        "jsonPath": ".status.target",
        "description": "What a run does: http, job, or queue:<format> (queue:celery, ...)",
    },
    # Priority 1: shown by `kubectl get -o wide` only, so that `kubectl get sj` fits a terminal.
    {
        "name": "TimeZone",
        "type": "string",
        "jsonPath": ".spec.timeZone",
        "description": "The time zone of the cron schedule",
        "priority": 1,
    },
    {
        "name": "Suspend",
        "type": "boolean",
        "jsonPath": ".spec.suspend",
        "description": "Whether new runs are held back",
    },
    # Kubernetes JSONPath has no length(): a column cannot count the runs in progress, and a
    # path matching several values shows the first. So: how long ago the slot of the first run
    # listed in progress was, empty when nothing runs.
    {
        "name": "Active",
        "type": "date",
        "jsonPath": ".status.active[0].slot",
        "description": "The slot of a run in progress (the first listed in status.active)",
    },
    # A string, not a date: kubectl prints a date as its age, and a future time as <invalid>.
    {
        "name": "Next",
        "type": "string",
        "jsonPath": ".status.nextRunTime",
        "description": "When the next run is due (the next slot plus jitter)",
    },
    {
        "name": "Last",
        "type": "date",
        "jsonPath": ".status.lastScheduleTime",
        "description": "The last slot claimed by a replica",
    },
    {
        "name": "Lateness(ms)",
        "type": "integer",
        "jsonPath": ".status.lastRun.latenessMillis",
        "description": "How late the last run started, in milliseconds",
    },
    {
        "name": "Last Result",
        "type": "string",
        "jsonPath": ".status.lastRun.result",
        "description": "The result of the last run that started",
    },
    {
        "name": "Ready",
        "type": "string",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
        "description": "Whether the schedule is valid and armed",
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "priority": 1},
]

_ROOT_DESCRIPTION = (
    "A ScheduledJob runs an HTTP call, a Redis stream entry or a Kubernetes Job on a cron "
    "schedule or a fixed interval: every slot exactly once across operator replicas, without "
    "drift, with explicit time-zone and DST rules and deliberate policies for missed and "
    "overlapping runs."
)
_API_CONVENTIONS = (
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
)


class UntranslatableSchemaError(ValueError):
    """The models use a JSON Schema construct that has no structural OpenAPI equivalent."""


def definition() -> Schema:
    """The ScheduledJob CRD as a plain ``apiextensions.k8s.io/v1`` object, ready to serialize."""
    return _definition(
        kind=models.KIND,
        plural=models.PLURAL,
        singular=models.SINGULAR,
        short_names=models.SHORT_NAMES,
        version={
            "subresources": {"status": {}},
            "additionalPrinterColumns": copy.deepcopy(PRINTER_COLUMNS),
            "schema": {"openAPIV3Schema": root_schema()},
        },
    )


def calendar_definition() -> Schema:
    """The Calendar CRD: named days that ScheduledJobs of its namespace exclude. Namespaced,
    so that only a tenant's own Calendars can change when its jobs run (docs/time.md)."""
    return _definition(
        kind=day_models.CALENDAR_KIND,
        plural=day_models.CALENDAR_PLURAL,
        singular=day_models.CALENDAR_SINGULAR,
        short_names=(),
        version={
            "schema": {
                "openAPIV3Schema": _envelope(
                    _CALENDAR_DESCRIPTION,
                    kind=day_models.CALENDAR_KIND,
                    spec=structural_schema(day_models.CalendarSpec),
                )
            }
        },
    )


CALENDAR_CRD_NAME = f"{day_models.CALENDAR_PLURAL}.{models.GROUP}"
_CALENDAR_DESCRIPTION = (
    "A Calendar holds named days (public holidays, a freeze): ScheduledJobs of its namespace "
    "exclude them by its name (spec.exclude.calendars), and an edit applies to them at once."
)


def _definition(
    *,
    kind: str,
    plural: str,
    singular: str,
    short_names: tuple[str, ...],
    version: Schema,
) -> Schema:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{models.GROUP}"},
        "spec": {
            "group": models.GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": singular,
                **({"shortNames": list(short_names)} if short_names else {}),
                "categories": list(models.CATEGORIES),
            },
            "scope": "Namespaced",
            "versions": [{"name": models.VERSION, "served": True, "storage": True, **version}],
        },
    }


def root_schema() -> Schema:
    """The whole object's schema: the standard envelope around ``spec`` and ``status``."""
    envelope = _envelope(
        _ROOT_DESCRIPTION, kind=models.KIND, spec=structural_schema(models.ScheduledJobSpec)
    )
    envelope["properties"]["status"] = structural_schema(status_models.ScheduledJobStatus)
    return envelope


def _envelope(description: str, *, kind: str, spec: Schema) -> Schema:
    return {
        "description": description,
        "type": "object",
        "properties": {
            "apiVersion": {
                "description": "The versioned schema of this object: punctual.dev/v1alpha1. "
                f"More info: {_API_CONVENTIONS}#resources",
                "type": "string",
            },
            "kind": {
                "description": f"The REST resource this object represents: {kind}. "
                f"More info: {_API_CONVENTIONS}#types-kinds",
                "type": "string",
            },
            # The API server owns metadata's schema and refuses even a description here.
            "metadata": {"type": "object"},
            "spec": spec,
        },
        "required": ["spec"],
    }


def structural_schema(model: type[pydantic.BaseModel]) -> Schema:
    """The structural OpenAPI v3 schema of ``model``, as the API server wants it."""
    generated = model.model_json_schema(by_alias=True, mode="validation")
    definitions = generated.pop("$defs", {})
    return _translate(generated, definitions, path=model.__name__)


def _translate(node: Mapping[str, Any], definitions: Mapping[str, Any], *, path: str) -> Schema:
    flat = _inline(node, definitions, path=path)
    if flat.get("additionalProperties") is False:
        del flat["additionalProperties"]
    if "properties" in flat:
        flat["properties"] = {
            name: _translate(child, definitions, path=f"{path}.{name}")
            for name, child in flat["properties"].items()
        }
    if isinstance(flat.get("items"), Mapping):
        flat["items"] = _translate(flat["items"], definitions, path=f"{path}[]")
    if isinstance(flat.get("additionalProperties"), Mapping):
        flat["additionalProperties"] = _translate(
            flat["additionalProperties"], definitions, path=f"{path}{{}}"
        )
    if "description" in flat:
        flat["description"] = " ".join(flat["description"].split())
    return _checked(flat, path=path)


def _inline(node: Mapping[str, Any], definitions: Mapping[str, Any], *, path: str) -> Schema:
    """Resolve ``$ref`` and nullable ``anyOf`` until neither is left, keeping the siblings.

    Siblings win over what they are merged with: a field's own description and default beat
    its type's docstring. CEL rules from both sides are kept.
    """
    flat = {key: value for key, value in node.items() if key != "title"}
    while True:
        if "$ref" in flat:
            name = flat.pop("$ref").removeprefix("#/$defs/")
            inner = definitions[name]
        elif "anyOf" in flat:
            branches = [branch for branch in flat.pop("anyOf") if branch != {"type": "null"}]
            if len(branches) != 1:
                raise UntranslatableSchemaError(f"{path}: a union of several types")
            if "default" in flat and flat["default"] is None:
                del flat["default"]
            inner = branches[0]
        else:
            return flat
        rules = [
            *inner.get("x-kubernetes-validations", []),
            *flat.get("x-kubernetes-validations", []),
        ]
        flat = {
            **{key: value for key, value in inner.items() if key != "title"},
            **flat,
        }
        if rules:
            flat["x-kubernetes-validations"] = rules


def _checked(flat: Schema, *, path: str) -> Schema:
    """Refuse what the API server would reject or misread; emit keys in a stable order."""
    unknown = set(flat) - set(_ORDER)
    if unknown:
        raise UntranslatableSchemaError(f"{path}: no structural equivalent for {sorted(unknown)}")
    if flat.get("type") not in STRUCTURAL_TYPES:
        raise UntranslatableSchemaError(f"{path}: type {flat.get('type')!r} is not allowed")
    if "x-kubernetes-validations" in flat:
        flat["x-kubernetes-validations"] = [
            {key: rule[key] for key in _RULE_ORDER if key in rule}
            for rule in flat["x-kubernetes-validations"]
        ]
    return copy.deepcopy({key: flat[key] for key in _ORDER if key in flat})
