"""``punctual convert`` keeps a CronJob's slots: a differential against CronJob's own library.

``hack/cronref`` (robfig/cron v3 at the version Kubernetes pins, parsing as kube-controller-manager
does; built once and cached by its ``build.sh``) answers the next fire times of generated
schedules (seeded: the same every run) from instants on the eves of DST changes and elsewhere, in
UTC and two DST zones. Each CronJob is converted, the ScheduledJob's spec planned as the operator
plans it, and its next slots must be robfig's, one for one. A schedule the conversion refuses
must be one of the refusals docs/time.md names, said as a problem on ``spec.schedule``.
"""

import random
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from punctual.api import cronjobs, planning, spec_bounds, spec_parsing

CRONREF_SOURCE = Path(__file__).resolve().parents[3] / "hack" / "cronref"
BUILD_TIMEOUT = 300.0
"""A cold build: seconds, minutes when the module must come from the proxy."""
ANSWER_TIMEOUT = 60.0
SEED = 26
EXPRESSIONS = 1000
FIRE_TIMES = 20
ZONES = ("UTC", "Europe/Berlin", "America/New_York")
INSTANTS = (
    "2026-01-01T00:00:00Z",
    "2026-03-07T22:00:00Z",  # the eve of New York's spring forward
    "2026-03-28T20:00:00Z",  # the eve of Berlin's
    "2026-10-24T20:00:00Z",  # the eve of Berlin's fall back
    "2026-10-31T20:00:00Z",  # the eve of New York's
    "2028-02-27T12:34:56Z",  # before a leap day, off the minute
)
ROBFIG_SEARCH = timedelta(days=5 * 366)
"""robfig gives up on a slot more than about five years on (Punctual looks ten years ahead): a
schedule whose gap is longer there stops under CronJob, and goes on under Punctual."""
DOCUMENTED_REFUSALS = (
    "'?' (no specific value) is only supported as the whole day-of-month or day-of-week",
    "never fires",
)
"""What convert may refuse of a schedule CronJob takes (docs/time.md): ``?`` inside a list, and
a schedule without a slot (``0 0 30 2 *``), which CronJob accepts and never runs."""

BOUNDS = {"minute": (0, 59), "hour": (0, 23), "dom": (1, 31), "month": (1, 12), "dow": (0, 6)}
NAMES = {
    "month": ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
    "dow": ("sun", "mon", "tue", "wed", "thu", "fri", "sat"),
}
MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


@dataclass(frozen=True, slots=True)
class Case:
    zone: str
    after: str
    expression: str

    def request(self) -> str:
        return f"{self.zone}\t{self.after}\t{FIRE_TIMES}\t{self.expression}\n"


def generated_cases(seed: int, count: int) -> list[Case]:
    """``count`` schedules in robfig's grammar, each with a zone and an instant; the day fields
    often hold what the day rule turns on (``*``, ``?``, ``*/1``, ``*/n``, full ranges, lists
    mixing ``*``), the hour often a fixed one so that the DST eves matter."""
    chance = random.Random(seed)
    cases = []
    for number in range(count):
        if chance.random() < 0.03:
            expression = chance.choice(MACROS)
        else:
            fields = [_field(chance, name) for name in BOUNDS]
            if chance.random() < 0.6:
                fields[0] = str(chance.randint(0, 59))
            if chance.random() < 0.4:
                fields[1] = ",".join(str(chance.randint(0, 4)) for _ in range(chance.randint(1, 2)))
            expression = " ".join(fields)
        cases.append(Case(ZONES[number % len(ZONES)], chance.choice(INSTANTS), expression))
    return cases


def _field(chance: random.Random, name: str) -> str:
    return ",".join(_item(chance, name) for _ in range(chance.choice((1, 1, 1, 2, 3))))


def _item(chance: random.Random, name: str) -> str:
    low, high = BOUNDS[name]
    roll = chance.random()
    if roll < 0.12:
        return "*"
    if roll < 0.17 and name in ("dom", "dow"):
        return "?"
    if roll < 0.30:
        return f"*/{chance.choice((1, 2, 3, chance.randint(1, high)))}"
    if roll < 0.55:
        return _value(chance, name)
    first, last = sorted((chance.randint(low, high), chance.randint(low, high)))
    if chance.random() < 0.1:
        first, last = low, high
    if roll < 0.80:
        return f"{first}-{last}"
    if roll < 0.92:
        return f"{first}-{last}/{chance.randint(1, 5)}"
    return f"{_value(chance, name)}/{chance.randint(1, 10)}"


def _value(chance: random.Random, name: str) -> str:
    low, high = BOUNDS[name]
    number = chance.randint(low, high)
    if name in NAMES and chance.random() < 0.2:
        written = NAMES[name][number - low]
        return chance.choice((written, written.upper(), written.capitalize()))
    return str(number)


@pytest.fixture(scope="session")
def cronref() -> Path:
    built = subprocess.run(
        [str(CRONREF_SOURCE / "build.sh")],
        check=True, stdout=subprocess.PIPE, text=True, timeout=BUILD_TIMEOUT,
    )  # fmt: skip
    return Path(built.stdout.strip().splitlines()[-1])


def robfig_answers(cronref: Path, cases: list[Case]) -> list[list[str]]:
    """robfig's answer to each case: ``["ok", fire times...]`` or ``["error", reason]``."""
    answered = subprocess.run(
        [str(cronref)],
        input="".join(case.request() for case in cases),
        capture_output=True, text=True, check=True, timeout=ANSWER_TIMEOUT,
    )  # fmt: skip
    answers = [line.split("\t") for line in answered.stdout.splitlines()]
    assert len(answers) == len(cases)
    return answers


def cronjob(case: Case) -> dict[str, Any]:
    pod = {"restartPolicy": "Never", "containers": [{"name": "report", "image": "busybox:1.36"}]}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "reports"},
        "spec": {
            "schedule": case.expression,
            "timeZone": case.zone,
            "jobTemplate": {"spec": {"template": {"spec": pod}}},
        },
    }


def converted_slots(scheduled_job: dict[str, Any], *, after: str) -> list[str]:
    """The next slots of the ScheduledJob as the operator plans it, written as robfig's are."""
    plan = planning.plan_for(
        spec_parsing.parse_spec(scheduled_job["spec"]),
        uid="differential",
        bounds=spec_bounds.UNBOUNDED,
    )
    instant = datetime.fromisoformat(after)
    slots = []
    for _ in range(FIRE_TIMES):
        occurrence = plan.schedule.next_after(instant)
        if occurrence is None:
            break
        instant = occurrence.at
        slots.append(f"{instant.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}")
    return slots


def disagreement(case: Case, answer: list[str]) -> str | None:
    """What convert does against robfig for ``case``, if it is not the same slots (or a
    documented refusal); None when they agree."""
    verdict, *fire_times = answer
    assert verdict == "ok", f"the generator wrote {case.expression!r}, which robfig refuses"
    conversion = cronjobs.convert(cronjob(case), defaults=cronjobs.Defaults())
    if conversion.scheduled_job is None:
        said = [str(problem) for problem in conversion.problems]
        documented = any(
            text.startswith("spec.schedule: ") and reason in text
            for text in said
            for reason in DOCUMENTED_REFUSALS
        )
        return None if documented else f"refused: {said}"
    slots = converted_slots(conversion.scheduled_job, after=case.after)
    if len(slots) > len(fire_times) and fire_times:
        gap = datetime.fromisoformat(slots[len(fire_times)]) - datetime.fromisoformat(
            fire_times[-1]
        )
        if slots[: len(fire_times)] == fire_times and gap > ROBFIG_SEARCH:
            return None
    if slots == fire_times:
        return None
    pairs = zip(slots, fire_times, strict=False)
    first = next(
        (index for index, (ours, theirs) in enumerate(pairs) if ours != theirs),
        min(len(slots), len(fire_times)),
    )
    return (
        f"slot {first}: convert {slots[first : first + 2]}, robfig {fire_times[first : first + 2]}"
    )


class TestConvertKeepsEveryCronJobSlot:
    def test_generated_schedules_fire_when_cronjob_fires_them(self, cronref: Path) -> None:
        cases = generated_cases(SEED, EXPRESSIONS)
        answers = robfig_answers(cronref, cases)
        disagreements = [
            f"{case.expression!r} in {case.zone} after {case.after}: {problem}"
            for case, answer in zip(cases, answers, strict=True)
            if (problem := disagreement(case, answer)) is not None
        ]
        assert disagreements == []

    @pytest.mark.parametrize(
        ("expression", "fire_times"),
        [
            pytest.param("0 0 */2 * 1", ["2026-01-03", "2026-01-05"], id="a-starred-step"),
            pytest.param("0 0 */1 * 1", ["2026-01-05", "2026-01-12"], id="a-step-of-one-does-not"),
            pytest.param("0 0 15,* * 1", ["2026-01-05", "2026-01-12"], id="a-list-with-a-star"),
            pytest.param("0 0 1-31 * */2", ["2026-01-02", "2026-01-03"], id="a-full-range"),
        ],
    )
    def test_the_day_rule_is_cronjobs(
        self, cronref: Path, expression: str, fire_times: list[str]
    ) -> None:
        case = Case("UTC", "2026-01-01T00:00:00Z", expression)
        [answer] = robfig_answers(cronref, [case])
        assert [time.removesuffix("T00:00:00Z") for time in answer[1:3]] == fire_times
        assert disagreement(case, answer) is None
