"""``punctual next``: its ``--after`` instant is checked like any option, near the calendar's
ends too (an error naming the option, never a traceback); with ``H``, the values a named job's
``H`` stands for, and the slots; of a job's manifest, the entries firing each slot and the
slots excluded."""

import json
from pathlib import Path

import pytest
import yaml

from punctual.cli import main


class TestAnAfterNearTheCalendarsEndsIsRefusedNamingTheOption:
    @pytest.mark.parametrize(
        "after",
        [
            pytest.param("9999-12-31T23:59:00Z", id="year-9999"),
            pytest.param("9000-01-01T00:00:00Z", id="where-the-search-stops"),
            pytest.param("0001-01-01T00:00:00Z", id="year-1"),
            pytest.param("0001-01-01T00:00:00+05:00", id="an-offset-before-year-1-in-utc"),
            pytest.param("9999-12-31T23:59:00-05:00", id="an-offset-past-year-9999-in-utc"),
        ],
    )
    @pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
    def test_the_error_names_after(
        self, after: str, zone: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        status = main.main(["next", "0 0 * * *", "--tz", zone, "--after", after])
        assert status == 2
        assert capsys.readouterr().err == (
            f"punctual next: --after: {after!r} is not between 0002-01-01 and 9000-01-01\n"
        )

    @pytest.mark.parametrize(
        ("after", "first"),
        [
            pytest.param("0002-01-01T00:00:00Z", "0002-01-02T00:00:00Z", id="the-earliest"),
            pytest.param("8999-12-30T12:00:00Z", "8999-12-31T00:00:00Z", id="near-the-latest"),
        ],
    )
    def test_an_instant_within_them_is_answered(
        self, after: str, first: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main.main(["next", "0 0 * * *", "-n", "1", "--after", after]) == 0
        assert capsys.readouterr().out.split()[-1] == first


def test_with_a_job_it_prints_what_h_became_and_its_slots(
    capsys: pytest.CaptureFixture[str],
) -> None:
    after = "2026-03-01T00:00:00Z"
    status = main.main(
        ["next", "H H * * *", "--job", "tenant-a/report", "--after", after, "-n", "2"]
    )

    out, err = capsys.readouterr()
    assert status == 0
    assert err == "punctual next: for tenant-a/report: 45 18 * * *\n"
    assert out.splitlines() == [
        "2026-03-01T18:45:00+00:00  UTC    2026-03-01T18:45:00Z",
        "2026-03-02T18:45:00+00:00  UTC    2026-03-02T18:45:00Z",
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param(
            ["H * * * *"],
            "punctual next: SCHEDULE: minute field 'H': H stands for a value derived from the "
            "job's namespace and name, and no job is named (punctual next --job NAMESPACE/NAME)",
            id="h-without-a-job",
        ),
        pytest.param(
            ["H * * * *", "--job", "report"],
            "punctual next: --job: 'report' is not NAMESPACE/NAME",
            id="a-job-without-its-namespace",
        ),
        pytest.param(
            ["H * * * *", "--job", "a/b/c"],
            "punctual next: --job: 'a/b/c' is not NAMESPACE/NAME",
            id="a-job-with-two-slashes",
        ),
    ],
)
def test_it_refuses_naming_the_argument(
    capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
) -> None:
    status = main.main(["next", *arguments])

    assert status == 2
    assert capsys.readouterr().err == message + "\n"


MANIFEST = """\
apiVersion: punctual.dev/v1alpha1
kind: ScheduledJob
metadata:
  name: report
  namespace: reports
  annotations: {punctual.dev/skip: "2026-12-24T12:00:00Z"}
spec:
  timeZone: Europe/Copenhagen
  schedules:
    - {name: noon, schedule: "0 13 * * *"}
    - {name: utc-noon, schedule: "0 12 * * *", timeZone: UTC}
    - {name: morning, schedule: "0 8 * * *"}
  exclude: {dates: ["2026-12-25"]}
  target: {http: {url: "http://example.test/run"}}
"""


class TestAJobsManifest:
    """``punctual next -f``: the slots of a ScheduledJob as the operator plans them."""

    def test_each_slot_names_its_entries_and_excluded_ones_are_marked(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        manifest = tmp_path / "report.yaml"
        manifest.write_text(MANIFEST)

        status = main.main(["next", "-f", str(manifest), "--after", "2026-12-24T00:00:00Z"])

        assert status == 0
        assert capsys.readouterr().out.splitlines() == [
            "2026-12-24T08:00:00+01:00  CET    2026-12-24T07:00:00Z  [morning]",
            "2026-12-24T13:00:00+01:00  CET    2026-12-24T12:00:00Z  [noon, utc-noon]"
            "  # excluded: not run",
            "2026-12-25T08:00:00+01:00  CET    2026-12-25T07:00:00Z  [morning]"
            "  # excluded: not run",
            "2026-12-25T13:00:00+01:00  CET    2026-12-25T12:00:00Z  [noon, utc-noon]"
            "  # excluded: not run",
            "2026-12-26T08:00:00+01:00  CET    2026-12-26T07:00:00Z  [morning]",
        ]

    @pytest.mark.parametrize(
        ("target", "shown"),
        [
            ('{http: {url: "http://example.test/run"}}', "http"),
            ("{job: {template: {spec: {template: {spec: {containers: [{name: c, image: i}]}}}}}}",
             "job"),
            ("{queue: {stream: reports}}", "queue:stream"),
            ("{queue: {brokerFrom: {secretName: b, key: url}, celery: {task: t.nightly}}}",
             "queue:celery"),
            ("{queue: {brokerFrom: {secretName: b, key: url}, rq: {function: m.f}}}", "queue:rq"),
            ("{queue: {brokerFrom: {secretName: b, key: url}, "
             "taskiq: {task: 'm:t', brokerClass: ListQueueBroker}}}", "queue:taskiq"),
            ("{queue: {brokerFrom: {secretName: b, key: url}, bullmq: {queue: q, name: n}}}",
             "queue:bullmq"),
        ],
        ids=["http", "job", "stream", "celery", "rq", "taskiq", "bullmq"],
    )  # fmt: skip
    def test_it_says_what_the_runs_do_on_stderr_and_the_slots_stay_alone_on_stdout(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str, shown: str
    ) -> None:
        manifest = tmp_path / "report.yaml"
        text = MANIFEST.replace('{http: {url: "http://example.test/run"}}', target)
        manifest.write_text(text)

        status = main.main(["next", "-f", str(manifest), "--after", "2026-12-24T00:00:00Z"])

        out, err = capsys.readouterr()
        assert status == 0
        assert err == f"punctual next: reports/report: target {shown}\n"
        assert len(out.splitlines()) == 5

    def test_as_json(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        manifest = tmp_path / "report.yaml"
        manifest.write_text(MANIFEST)

        main.main(
            [
                "next",
                "-f",
                str(manifest),
                "--after",
                "2026-12-24T10:00:00Z",
                "-n",
                "1",
                "-o",
                "json",
            ]
        )

        assert json.loads(capsys.readouterr().out) == [
            {
                "utc": "2026-12-24T12:00:00Z",
                "local": "2026-12-24T13:00:00+01:00",
                "schedules": ["noon", "utc-noon"],
                "excluded": True,
            }
        ]

    @pytest.mark.parametrize(
        ("text", "problem"),
        [
            pytest.param("kind: CronJob\n", "expected one ScheduledJob", id="another-kind"),
            pytest.param(
                MANIFEST.replace('"2026-12-25"', '"2026-12-32"'),
                "spec.exclude.dates[0]: '2026-12-32' is not a date",
                id="an-invalid-spec-names-the-field",
            ),
            pytest.param("a: [", "not YAML", id="not-yaml"),
        ],
    )
    def test_what_it_refuses(
        self, text: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        manifest = tmp_path / "report.yaml"
        manifest.write_text(text)

        assert main.main(["next", "-f", str(manifest)]) == 2
        assert problem in capsys.readouterr().err


DAILY_NOONS = """apiVersion: punctual.dev/v1alpha1
kind: ScheduledJob
metadata: {name: noon, namespace: reports}
spec:
  schedule: "0 12 * * *"
  exclude: {calendars: [holidays]}
  target: {http: {url: "http://example.test/run"}}
"""


def calendar(namespace: str = "reports", dates: str = '["2026-12-25/2026-12-26"]') -> str:
    return f"""\
apiVersion: punctual.dev/v1alpha1
kind: Calendar
metadata: {{name: holidays, namespace: {namespace}}}
spec: {{dates: {dates}}}
"""


CHRISTMAS = [
    "2026-12-24T12:00:00+00:00  UTC    2026-12-24T12:00:00Z",
    "2026-12-25T12:00:00+00:00  UTC    2026-12-25T12:00:00Z  # excluded: not run",
    "2026-12-26T12:00:00+00:00  UTC    2026-12-26T12:00:00Z  # excluded: not run",
    "2026-12-27T12:00:00+00:00  UTC    2026-12-27T12:00:00Z",
]


class TestTheCalendarsAJobNames:
    """``punctual next -f`` reads the Calendars the job names from its input, as the operator
    reads them from the job's namespace, and marks their days excluded."""

    def next_of(self, *texts: str, tmp_path: Path) -> int:
        files = []
        for number, text in enumerate(texts):
            path = tmp_path / f"{number}.yaml"
            path.write_text(text)
            files += ["-f", str(path)]
        return main.main(["next", *files, "--after", "2026-12-24T00:00:00Z", "-n", "4"])

    @pytest.mark.parametrize(
        "texts",
        [
            pytest.param((DAILY_NOONS, calendar()), id="several-files"),
            pytest.param((f"{calendar()}---\n{DAILY_NOONS}",), id="several-documents"),
            pytest.param(
                (
                    json.dumps(
                        {
                            "apiVersion": "v1",
                            "kind": "List",
                            "items": [yaml.safe_load(DAILY_NOONS), yaml.safe_load(calendar())],
                        }
                    ),
                ),
                id="a-list-as-kubectl-get-writes-it",
            ),
        ],
    )
    def test_their_days_are_marked_excluded(
        self, texts: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert self.next_of(*texts, tmp_path=tmp_path) == 0
        assert capsys.readouterr().out.splitlines() == CHRISTMAS

    @pytest.mark.parametrize(
        ("texts", "problem"),
        [
            pytest.param(
                (DAILY_NOONS,),
                "spec.exclude.calendars[0]: no Calendar 'holidays' in the job's namespace: give "
                "its manifest with -f",
                id="a-calendar-named-and-not-given",
            ),
            pytest.param(
                (DAILY_NOONS, calendar(namespace="other")),
                "Calendar 'holidays' is in namespace 'other', the job in 'reports'",
                id="a-calendar-of-another-namespace",
            ),
            pytest.param(
                (DAILY_NOONS, calendar(), calendar()),
                "Calendar 'holidays' is given twice",
                id="a-calendar-given-twice",
            ),
            pytest.param(
                (DAILY_NOONS, DAILY_NOONS),
                "expected one ScheduledJob",
                id="two-jobs",
            ),
            pytest.param(
                (DAILY_NOONS, "kind: CronJob\nmetadata: {name: x}\n"),
                "expected a ScheduledJob and named Calendars",
                id="another-kind",
            ),
            pytest.param(
                (DAILY_NOONS, calendar(dates='["2026-12-32"]')),
                "spec.exclude.calendars[0]: Calendar 'holidays'",
                id="an-invalid-calendar-names-the-field",
            ),
        ],
    )
    def test_what_it_refuses(
        self,
        texts: tuple[str, ...],
        problem: str,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        assert self.next_of(*texts, tmp_path=tmp_path) == 2
        assert problem in capsys.readouterr().err
