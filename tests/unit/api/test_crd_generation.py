"""The CRD is generated from the models, is what the API server needs, and is what is committed."""

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml

from punctual.api import crd, fields, spec_parsing
from punctual.cli import crd as crd_command
from punctual.cli import main

REPO_ROOT = Path(__file__).resolve().parents[3]
COMMITTED_CRD = REPO_ROOT / "crds" / "scheduledjobs.punctual.dev.yaml"
COMMITTED_CALENDAR_CRD = REPO_ROOT / "crds" / "calendars.punctual.dev.yaml"

DEFINITION = crd.definition()
VERSION = DEFINITION["spec"]["versions"][0]
ROOT = VERSION["schema"]["openAPIV3Schema"]
SPEC = ROOT["properties"]["spec"]
STATUS = ROOT["properties"]["status"]

NOT_STRUCTURAL = {"$ref", "$defs", "anyOf", "oneOf", "allOf", "not", "title", "nullable", "const"}


def schema_nodes(
    node: Mapping[str, Any], path: str = ""
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every schema node under ``node`` with its path: properties, list items, map values."""
    yield path, node
    for name, child in node.get("properties", {}).items():
        yield from schema_nodes(child, f"{path}.{name}")
    if isinstance(node.get("items"), Mapping):
        yield from schema_nodes(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), Mapping):
        yield from schema_nodes(node["additionalProperties"], f"{path}{{}}")


def properties(node: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    for node_path, schema in schema_nodes(node, path):
        for name, child in schema.get("properties", {}).items():
            yield f"{node_path}.{name}", child


def with_crd_defaults(value: Any, schema: Mapping[str, Any]) -> Any:
    """Apply the schema's defaults as the API server does: absent fields, top-down."""
    if isinstance(value, dict):
        filled = dict(value)
        for name, child in schema.get("properties", {}).items():
            if name not in filled and "default" in child:
                filled[name] = child["default"]
            if name in filled:
                filled[name] = with_crd_defaults(filled[name], child)
        return filled
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [with_crd_defaults(item, schema["items"]) for item in value]
    return value


class TestTheCommittedCrdIsTheGeneratedOne:
    def test_crds_file_equals_the_output_of_punctual_crd(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main.main(["crd"]) == 0
        generated = capsys.readouterr().out

        committed = COMMITTED_CRD.read_text() if COMMITTED_CRD.exists() else ""
        assert committed == generated, (
            f"{COMMITTED_CRD.relative_to(REPO_ROOT)} is out of date with the models in "
            "operator/punctual/api/models.py: run `make crds` and commit the result"
        )

    def test_the_calendar_crd_file_equals_the_output_of_punctual_crd_kind_calendar(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main.main(["crd", "--kind", "Calendar"]) == 0
        generated = capsys.readouterr().out

        committed = COMMITTED_CALENDAR_CRD.read_text() if COMMITTED_CALENDAR_CRD.exists() else ""
        assert committed == generated, "crds/calendars.punctual.dev.yaml: run `make crds`"

    def test_the_yaml_reads_back_as_the_generated_definition(self) -> None:
        assert yaml.safe_load(crd_command.render()) == DEFINITION

    def test_the_yaml_repeats_shared_values_instead_of_using_anchors(self) -> None:
        rendered = crd_command.render()
        assert "&id" not in rendered
        assert "*id" not in rendered

    def test_generating_twice_gives_the_same_text(self) -> None:
        assert crd_command.render() == crd_command.render()


class TestTheResourceIsNamedAsDesigned:
    def test_group_kind_names_and_scope(self) -> None:
        assert DEFINITION["apiVersion"] == "apiextensions.k8s.io/v1"
        assert DEFINITION["metadata"]["name"] == "scheduledjobs.punctual.dev"
        assert DEFINITION["spec"]["group"] == "punctual.dev"
        assert DEFINITION["spec"]["scope"] == "Namespaced"
        assert DEFINITION["spec"]["names"] == {
            "kind": "ScheduledJob",
            "listKind": "ScheduledJobList",
            "plural": "scheduledjobs",
            "singular": "scheduledjob",
            "shortNames": ["sj"],
            "categories": ["punctual"],
        }

    def test_one_served_storage_version_with_the_status_subresource(self) -> None:
        assert len(DEFINITION["spec"]["versions"]) == 1
        assert VERSION["name"] == "v1alpha1"
        assert VERSION["served"] is True
        assert VERSION["storage"] is True
        assert VERSION["subresources"] == {"status": {}}

    def test_printer_columns(self) -> None:
        columns = [
            (column["name"], column["type"], column["jsonPath"], column.get("priority", 0))
            for column in VERSION["additionalPrinterColumns"]
        ]
        # Priority 1: only with `kubectl get -o wide`.
        assert columns == [
            ("Schedule", "string", ".status.schedule", 0),
            ("Target", "string", ".status.target", 0),
            ("TimeZone", "string", ".spec.timeZone", 1),
            ("Suspend", "boolean", ".spec.suspend", 0),
            ("Active", "date", ".status.active[0].slot", 0),
            ("Next", "string", ".status.nextRunTime", 0),
            ("Last", "date", ".status.lastScheduleTime", 0),
            ("Lateness(ms)", "integer", ".status.lastRun.latenessMillis", 0),
            ("Last Result", "string", ".status.lastRun.result", 0),
            ("Ready", "string", '.status.conditions[?(@.type=="Ready")].status', 0),
            ("Age", "date", ".metadata.creationTimestamp", 1),
        ]


class TestTheSchemaIsStructural:
    def test_no_references_unions_or_titles_are_left(self) -> None:
        leftovers = {
            f"{path or '<root>'}: {sorted(NOT_STRUCTURAL & set(node))}"
            for path, node in schema_nodes(ROOT)
            if NOT_STRUCTURAL & set(node)
        }
        assert leftovers == set()

    def test_every_node_has_a_type(self) -> None:
        untyped = [path or "<root>" for path, node in schema_nodes(ROOT) if "type" not in node]
        assert untyped == []

    def test_no_number_type_anywhere_because_the_api_has_no_floats(self) -> None:
        numbers = [path for path, node in schema_nodes(ROOT) if node["type"] == "number"]
        assert numbers == []
        assert "type: number" not in crd_command.render()

    def test_free_form_objects_are_kept_as_given(self) -> None:
        free_form = sorted(
            path
            for path, node in schema_nodes(ROOT)
            if node.get("x-kubernetes-preserve-unknown-fields")
        )
        assert free_form == [
            ".spec.target.job.template",
            ".spec.target.queue.arq.arguments",
            ".spec.target.queue.bullmq.data",
            ".spec.target.queue.celery.arguments",
            ".spec.target.queue.dramatiq.arguments",
            ".spec.target.queue.payload",
            ".spec.target.queue.rq.arguments",
            ".spec.target.queue.sidekiq.arguments",
            ".spec.target.queue.taskiq.arguments",
            ".spec.target.queue.taskiq.labels",
        ]
        for path, node in schema_nodes(ROOT):
            if path in free_form:
                assert node["type"] == "object"
                assert "properties" not in node

    def test_objects_that_forbid_extra_fields_do_not_say_additional_properties_false(
        self,
    ) -> None:
        falses = [
            path for path, node in schema_nodes(ROOT) if node.get("additionalProperties") is False
        ]
        assert falses == []

    def test_a_union_of_two_types_is_refused_rather_than_mistranslated(self) -> None:
        class Ambiguous(pydantic.BaseModel):
            value: int | str

        with pytest.raises(crd.UntranslatableSchemaError, match="union"):
            crd.structural_schema(Ambiguous)

    def test_a_float_is_refused(self) -> None:
        class Floating(pydantic.BaseModel):
            ratio: float

        with pytest.raises(crd.UntranslatableSchemaError, match="'number'"):
            crd.structural_schema(Floating)


class TestUsersCanReadWhatEachFieldMeans:
    def test_every_property_has_a_description(self) -> None:
        # The API server refuses anything but a type on metadata, even a description.
        undocumented = [
            path
            for path, node in properties(ROOT)
            if path != ".metadata" and not node.get("description", "").strip()
        ]
        assert undocumented == []

    def test_descriptions_are_single_lines(self) -> None:
        multi_line = [
            path for path, node in schema_nodes(ROOT) if "\n" in node.get("description", "")
        ]
        assert multi_line == []

    def test_an_enum_field_lists_its_values_from_the_scheduling_enums(self) -> None:
        properties = SPEC["properties"]
        assert properties["concurrencyPolicy"]["enum"] == ["Forbid", "Allow", "Replace", "Queue"]
        assert properties["missedRuns"]["properties"]["policy"]["enum"] == [
            "Skip",
            "RunOnce",
            "CatchUp",
        ]
        assert properties["dst"]["properties"]["nonexistent"]["enum"] == ["ShiftForward", "Skip"]
        assert properties["dst"]["properties"]["ambiguous"]["enum"] == ["First", "Second", "Both"]


class TestValidationTheApiServerDoes:
    DURATIONS = (
        ".spec.every",
        ".spec.jitter",
        ".spec.timeout",
        ".spec.missedRuns.startingDeadline",
    )

    @pytest.mark.parametrize("path", DURATIONS)
    def test_every_duration_has_the_pattern_a_bound_and_the_positive_rule(self, path: str) -> None:
        node = dict(schema_nodes(ROOT))[path]
        assert node["type"] == "string"
        assert node["pattern"] == fields.DURATION_PATTERN
        assert node["maxLength"] == fields.MAX_DURATION_LENGTH
        [rule] = node["x-kubernetes-validations"]
        assert "duration(self) > duration('0s')" in rule["rule"]
        assert "positive duration" in rule["message"]

    def test_the_spec_rules_are_one_schedule_a_rising_window_and_jitter_below_every(
        self,
    ) -> None:
        rules = SPEC["x-kubernetes-validations"]
        assert rules[0]["rule"] == (
            "has(self.schedules) ? !has(self.schedule) && !has(self.every) : "
            "has(self.schedule) ? !has(self.every) : (has(self.every) || has(self.startsAt))"
        )
        assert rules[1]["rule"] == (
            "!has(self.startsAt) || !has(self.endsAt) || self.endsAt > self.startsAt"
        )
        assert rules[1]["fieldPath"] == ".endsAt"
        assert "duration(self.jitter) < duration(self.every)" in rules[2]["rule"]
        assert rules[2]["fieldPath"] == ".jitter"

    @pytest.mark.parametrize("path", [".spec.startsAt", ".spec.endsAt"])
    def test_the_window_is_bounded_instants_with_an_offset(self, path: str) -> None:
        node = dict(schema_nodes(ROOT))[path]
        assert node["type"] == "string"
        assert node["format"] == "date-time"
        assert node["pattern"] == fields.INSTANT_PATTERN
        assert node["maxLength"] == fields.MAX_INSTANT_LENGTH

    def test_the_target_rule_is_exactly_one_target(self) -> None:
        [rule] = SPEC["properties"]["target"]["x-kubernetes-validations"]
        assert rule["rule"] == (
            "[has(self.http), has(self.queue), has(self.job)].filter(set, set).size() == 1"
        )

    def test_target_is_required_and_nothing_else_at_the_top_of_spec(self) -> None:
        assert SPEC["required"] == ["target"]
        assert ROOT["required"] == ["spec"]

    def test_every_string_and_list_in_spec_is_bounded_to_keep_cel_cost_estimates_low(
        self,
    ) -> None:
        unbounded = [
            path
            for path, node in schema_nodes(SPEC, ".spec")
            if (node["type"] == "string" and "maxLength" not in node and "enum" not in node)
            or (node["type"] == "array" and "maxItems" not in node)
            or (
                node["type"] == "object"
                and "additionalProperties" in node
                and "maxProperties" not in node
            )
        ]
        assert unbounded == []

    @pytest.mark.parametrize(
        ("path", "minimum", "maximum"),
        [
            (".spec.maxQueued", 1, 100),
            (".spec.missedRuns.maxCatchUp", 1, 1000),
            (".spec.history.succeeded", 0, 100),
            (".spec.history.failed", 0, 100),
            (".spec.target.queue.maxLen", 1, None),
        ],
    )
    def test_counts_have_their_bounds(self, path: str, minimum: int, maximum: int | None) -> None:
        node = dict(schema_nodes(ROOT))[path]
        assert node["type"] == "integer"
        assert node["minimum"] == minimum
        assert node.get("maximum") == maximum


class TestDefaultsAreTheModelsDefaults:
    def test_the_documented_defaults(self) -> None:
        properties = SPEC["properties"]
        assert properties["timeZone"]["default"] == "UTC"
        assert properties["concurrencyPolicy"]["default"] == "Forbid"
        assert properties["maxQueued"]["default"] == 1
        assert properties["timeout"]["default"] == "10m"
        assert properties["suspend"]["default"] is False
        assert properties["missedRuns"]["properties"]["policy"]["default"] == "RunOnce"
        assert properties["missedRuns"]["properties"]["maxCatchUp"]["default"] == 10
        assert properties["history"]["properties"]["succeeded"]["default"] == 3
        assert properties["target"]["properties"]["http"]["properties"]["method"]["default"] == (
            "POST"
        )

    def test_nested_option_groups_default_to_empty_so_their_fields_get_defaults_too(
        self,
    ) -> None:
        for name in ("dst", "missedRuns", "history"):
            assert SPEC["properties"][name]["default"] == {}

    def test_optional_fields_have_no_default_so_unset_stays_absent(self) -> None:
        for name in ("schedule", "every", "jitter"):
            assert "default" not in SPEC["properties"][name]

    def test_a_spec_defaulted_by_the_crd_means_what_the_models_default_it_to(self) -> None:
        minimal = {"every": "10s", "target": {"http": {"url": "http://svc/run"}}}

        defaulted = with_crd_defaults(minimal, SPEC)

        assert defaulted != minimal
        assert spec_parsing.parse_spec(defaulted) == spec_parsing.parse_spec(minimal)
