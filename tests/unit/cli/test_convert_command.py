"""``punctual convert``: CronJob manifests from files or stdin, ScheduledJobs on stdout, every
problem on stderr naming the input, the object and the field, and the exit status that says
which: 0 all converted, 1 something left out (the rest printed), 2 unreadable input.
"""

import io
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from punctual.api import planning, spec_parsing
from punctual.cli import main

UID = "8f0b4d3c-1a2b-4c5d-8e9f-0a1b2c3d4e5f"

NIGHTLY = textwrap.dedent(
    """\
    apiVersion: batch/v1
    kind: CronJob
    metadata:
      name: nightly
      namespace: reports
      uid: 0d6d7a0e-1111-4222-8333-444455556666
      resourceVersion: "4711"
      creationTimestamp: "2026-01-01T00:00:00Z"
      annotations:
        kubectl.kubernetes.io/last-applied-configuration: |
          {"apiVersion":"batch/v1","kind":"CronJob"}
    spec:
      schedule: "30 2 * * *"
      timeZone: Europe/Copenhagen
      concurrencyPolicy: Forbid
      startingDeadlineSeconds: 300
      jobTemplate:
        metadata:
          creationTimestamp: null
        spec:
          activeDeadlineSeconds: 3600
          template:
            spec:
              restartPolicy: Never
              containers:
              - name: report
                image: busybox:1.36
                command:
                - sh
                - -c
                - |
                  date
                  echo "report for $(date +%F)"
    status:
      lastScheduleTime: "2026-01-01T01:30:00Z"
    """
)
HOURLY = textwrap.dedent(
    """\
    apiVersion: batch/v1
    kind: CronJob
    metadata: {name: hourly, namespace: reports}
    spec:
      schedule: "@hourly"
      jobTemplate:
        spec:
          template:
            spec:
              restartPolicy: OnFailure
              containers: [{name: ping, image: busybox:1.36}]
    """
)
SERVICE = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: reports}\n"


def kubectl_list(*documents: str) -> str:
    """What ``kubectl get cronjob -o yaml`` prints: a List of the objects."""
    items = [yaml.safe_load(document) for document in documents]
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}})


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def convert(*arguments: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main.main(["convert", *arguments])
    out, err = capsys.readouterr()
    return status, out, err


def scheduled_jobs(out: str) -> list[dict[str, Any]]:
    documents = [document for document in yaml.safe_load_all(out) if document is not None]
    for document in documents:
        planning.plan_for(spec_parsing.parse_spec(document["spec"]), uid=UID)
    return documents


def names(out: str) -> list[str]:
    return [document["metadata"]["name"] for document in scheduled_jobs(out)]


class TestConvertingEverything:
    def test_a_file_of_cronjobs_prints_their_scheduled_jobs_and_exits_0(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = write(tmp_path, "cronjobs.yaml", NIGHTLY + "---\n" + HOURLY)

        status, out, err = convert(str(path), capsys=capsys)

        assert (status, err) == (0, "")
        assert out.startswith("---\n")
        assert names(out) == ["nightly", "hourly"]

    def test_the_scheduled_job_printed_behaves_as_the_cronjob(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        status, out, _ = convert(str(write(tmp_path, "a.yaml", NIGHTLY)), capsys=capsys)

        (printed,) = scheduled_jobs(out)
        assert status == 0
        assert printed["metadata"] == {"name": "nightly", "namespace": "reports"}
        assert printed["spec"] == {
            "schedule": "30 2 * * *",
            "timeZone": "Europe/Copenhagen",
            "dst": {"nonexistent": "Skip", "ambiguous": "Both"},
            "concurrencyPolicy": "Forbid",
            "suspend": False,
            "timeout": "1h",
            "missedRuns": {"policy": "RunOnce", "startingDeadline": "5m"},
            "history": {"succeeded": 3, "failed": 1},
            "target": {
                "job": {
                    "template": {
                        "spec": {
                            "template": yaml.safe_load(NIGHTLY)["spec"]["jobTemplate"]["spec"][
                                "template"
                            ]
                        }
                    }
                }
            },
        }

    def test_scripts_are_printed_as_literal_blocks(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        _, out, _ = convert(str(write(tmp_path, "a.yaml", NIGHTLY)), capsys=capsys)

        assert "- |\n" in out
        assert 'echo "report for $(date +%F)"\n' in out

    def test_a_kubectl_list_on_stdin_is_read_when_no_file_is_named(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setattr("sys.stdin", io.StringIO(kubectl_list(NIGHTLY, HOURLY)))

        status, out, err = convert(capsys=capsys)

        assert (status, err) == (0, "")
        assert names(out) == ["nightly", "hourly"]

    def test_a_dash_reads_stdin_among_files(
        self,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        monkeypatch.setattr("sys.stdin", io.StringIO(HOURLY))
        path = write(tmp_path, "nightly.yaml", NIGHTLY)

        status, out, _ = convert(str(path), "-", capsys=capsys)

        assert status == 0
        assert names(out) == ["nightly", "hourly"]

    def test_timestamps_in_the_input_stay_strings(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        text = HOURLY.replace("{name: hourly,", "{annotations: {since: 2026-01-01}, name: hourly,")

        status, out, _ = convert(str(write(tmp_path, "a.yaml", text)), capsys=capsys)

        assert status == 0
        assert scheduled_jobs(out)[0]["metadata"]["annotations"] == {"since": "2026-01-01"}

    def test_an_empty_list_prints_nothing_and_exits_0(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setattr("sys.stdin", io.StringIO("apiVersion: v1\nkind: List\nitems: []\n"))

        assert convert(capsys=capsys) == (0, "", "")

    def test_the_time_zone_and_timeout_options_fill_what_cronjobs_leave_unsaid(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = write(tmp_path, "a.yaml", HOURLY)

        status, out, _ = convert(
            str(path), "--time-zone", "Europe/Berlin", "--timeout", "2h", capsys=capsys
        )

        (printed,) = scheduled_jobs(out)
        assert status == 0
        assert (printed["spec"]["timeZone"], printed["spec"]["timeout"]) == ("Europe/Berlin", "2h")


class TestLeavingSomethingOut:
    def test_a_field_left_out_is_named_with_its_path_and_the_rest_is_printed_with_status_1(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        text = NIGHTLY.replace("      activeDeadlineSeconds: 3600\n", "      x: 1\n").replace(
            "  startingDeadlineSeconds: 300\n", "  startingDeadlineSeconds: 300\n  extra: 1\n"
        )
        path = write(tmp_path, "cronjobs.yaml", text + "---\n" + HOURLY)

        status, out, err = convert(str(path), capsys=capsys)

        assert status == 1
        assert names(out) == ["nightly", "hourly"]
        assert err.splitlines() == [
            f"punctual convert: {path}: CronJob reports/nightly: spec.extra: "
            "not a field of a CronJob's spec: left out",
            f"punctual convert: {path}: CronJob reports/nightly: spec.jobTemplate.spec.x: "
            "not a field of a batch/v1 JobSpec (as of Kubernetes 1.35): copied as is, but an API "
            "server that does not know it drops it from the Jobs",
        ]

    def test_a_document_that_is_not_a_cronjob_is_named_and_left_out_with_status_1(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = write(tmp_path, "mixed.yaml", SERVICE + "---\n" + HOURLY)

        status, out, err = convert(str(path), capsys=capsys)

        assert status == 1
        assert names(out) == ["hourly"]
        assert err == (
            f"punctual convert: {path}: Service reports/web: not a CronJob of "
            "batch/v1 or batch/v1beta1 (kind 'Service', apiVersion 'v1'): left out\n"
        )

    def test_an_unnamed_object_is_named_by_its_place_in_the_input(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = write(tmp_path, "a.yaml", HOURLY + "---\n" + kubectl_list(SERVICE, "kind: Pod\n"))

        status, _, err = convert(str(path), capsys=capsys)

        assert status == 1
        assert f"punctual convert: {path}: document 2, items[1]: Pod without a name: " in err

    def test_a_cronjob_the_operator_would_refuse_is_not_printed(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        text = HOURLY.replace('"@hourly"', '"TZ=Mars/Olympus 0 * * * *"')

        status, out, err = convert(str(write(tmp_path, "a.yaml", text)), capsys=capsys)

        assert (status, out) == (1, "")
        assert "CronJob reports/hourly: spec.schedule: unknown time zone 'Mars/Olympus'" in err


class TestUnreadableInput:
    @pytest.mark.parametrize(
        ("content", "says"),
        [
            pytest.param(b"spec: [unclosed\n", "not YAML: ", id="text that is not YAML"),
            pytest.param(b"- a\n- b\n", "document 1 is not a Kubernetes object", id="a list"),
            pytest.param(b"\xff\xfe\x00", "not UTF-8 text", id="bytes that are not UTF-8"),
        ],
    )
    def test_an_unreadable_file_is_one_line_naming_it_nothing_printed_and_status_2(
        self,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        content: bytes,
        says: str,
    ) -> None:
        good = write(tmp_path, "good.yaml", HOURLY)
        bad = tmp_path / "bad.yaml"
        bad.write_bytes(content)

        status, out, err = convert(str(good), str(bad), capsys=capsys)

        assert (status, out) == (2, "")
        assert err.startswith(f"punctual convert: {bad}: {says}")
        assert err.count("\n") == 1

    def test_aliases_that_expand_past_the_bound_are_refused_before_anything_is_built(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        # Nine levels of nine aliases: a few hundred bytes that would print as 9**9 values.
        levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"] + [
            f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 9)}]" for level in range(1, 9)
        ]
        bomb = write(tmp_path, "bomb.yaml", "\n".join(levels) + "\n")

        status, out, err = convert(str(bomb), capsys=capsys)

        assert (status, out) == (2, "")
        assert err.startswith(f"punctual convert: {bomb}: its aliases expand it by ")
        assert "more than the 100,000 allowed" in err

    def test_input_nested_deeper_than_any_manifest_is_refused(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        deep = write(tmp_path, "deep.yaml", "a: " + "[" * 5000 + "]" * 5000 + "\n")

        status, _, err = convert(str(deep), capsys=capsys)

        assert status == 2
        assert err == f"punctual convert: {deep}: nested too deeply to be a manifest\n"

    def test_a_template_shared_by_an_alias_converts_as_if_written_twice(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        first = yaml.safe_load(NIGHTLY)
        second = {**first, "metadata": {**first["metadata"], "name": "nightly-copy"}}
        listed = {"apiVersion": "v1", "kind": "List", "items": [first, second]}
        shared = yaml.safe_dump(listed, sort_keys=False)  # the spec both share: an anchor
        assert "&id" in shared
        written_twice = yaml.dump(listed, Dumper=Unshared, sort_keys=False)

        _, with_aliases, _ = convert(str(write(tmp_path, "a.yaml", shared)), capsys=capsys)
        _, without, _ = convert(str(write(tmp_path, "b.yaml", written_twice)), capsys=capsys)

        assert with_aliases == without != ""

    def test_not_yaml_says_on_which_line(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        bad = write(tmp_path, "bad.yaml", "kind: CronJob\nspec: {schedule: [\n")

        _, _, err = convert(str(bad), capsys=capsys)

        assert "(line 3)" in err

    @pytest.mark.parametrize("name", ["missing.yaml", "."], ids=["a missing file", "a folder"])
    def test_a_file_that_cannot_be_opened_is_named_with_status_2(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
    ) -> None:
        path = tmp_path / name

        status, out, err = convert(str(path), capsys=capsys)

        assert (status, out) == (2, "")
        assert err.startswith(f"punctual convert: {path}: ")
        assert err.count("\n") == 1

    def test_unreadable_stdin_is_named_stdin(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setattr("sys.stdin", io.StringIO("a: [\n"))

        status, _, err = convert(capsys=capsys)

        assert status == 2
        assert err.startswith("punctual convert: <stdin>: not YAML: ")

    @pytest.mark.parametrize(
        ("option", "value", "says"),
        [
            pytest.param("--time-zone", "Europe/Nowhere", "unknown time zone", id="a bad zone"),
            pytest.param("--timeout", "1 day", "is not a duration", id="a bad timeout"),
        ],
    )
    def test_a_bad_option_is_named_with_status_2(
        self,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        option: str,
        value: str,
        says: str,
    ) -> None:
        path = write(tmp_path, "a.yaml", HOURLY)

        status, out, err = convert(str(path), option, value, capsys=capsys)

        assert (status, out) == (2, "")
        assert err.startswith(f"punctual convert: {option}: ")
        assert says in err


class Unshared(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def test_help_describes_the_command_and_its_exit_statuses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main.main(["convert", "--help"])

    out = capsys.readouterr().out
    assert exited.value.code == 0
    assert "--time-zone ZONE" in out
    assert "--timeout DURATION" in out
    assert "2 unreadable input" in " ".join(out.split())
