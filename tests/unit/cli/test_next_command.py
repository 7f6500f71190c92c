"""``punctual next`` with ``H``: the values a named job's ``H`` stands for, and the slots."""

import pytest

from punctual.cli import main


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
