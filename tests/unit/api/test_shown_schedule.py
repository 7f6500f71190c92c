"""``status.schedule`` and ``status.target``: the schedule as ``kubectl get sj``'s SCHEDULE
column shows it, whichever field holds it, and what a run does as its TARGET column shows it,
with a queue target's format (a printer column reads one field)."""

import pytest

from punctual.api import planning, spec_parsing, status_models

TARGET = {"http": {"url": "http://example.test/run"}}


def shown(**spec: object) -> str:
    return planning.shown_schedule(spec_parsing.parse_spec({**spec, "target": TARGET}))


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"schedule": "30 2 * * *"}, "30 2 * * *"),
        ({"schedule": "@daily"}, "@daily"),
        ({"schedule": "H H * * *"}, "H H * * *"),
        ({"schedule": "0 30 2 * * mon-fri", "timeZone": "Europe/Copenhagen"}, "0 30 2 * * mon-fri"),
        ({"every": "10s"}, "every 10s"),
        ({"every": "1h30m", "startsAt": "2026-12-01T00:00:00Z"}, "every 1h30m"),
        ({"startsAt": "2026-12-24T18:00:00+01:00"}, "once at 2026-12-24T17:00:00Z"),
        (
            {
                "schedules": [
                    {"name": "morning", "schedule": "0 9 * * *"},
                    {"name": "fast", "every": "1h"},
                ]
            },
            "2 schedules",
        ),
    ],
    ids=[
        "cron as written",
        "a macro as written",
        "H as written, not resolved",
        "six fields in a zone",
        "an interval",
        "an interval in a window",
        "a one-off, in UTC",
        "several, counted",
    ],
)
def test_the_schedule_as_people_read_it(spec: dict[str, object], expected: str) -> None:
    assert shown(**spec) == expected


def test_the_longest_schedule_fits_the_status_field() -> None:
    longest = "1," * 59 + "10 * * * *"  # spec.schedule's longest: 128 characters

    assert len(longest) == 128 < status_models.SCHEDULE_SHOWN_MAX
    assert shown(schedule=longest) == longest


BROKER = {"brokerFrom": {"secretName": "broker", "key": "url"}}


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (TARGET, "http"),
        ({"job": {"template": {"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "busybox"}]}}}}}}, "job"),
        ({"queue": {"stream": "reports"}}, "queue:stream"),
        ({"queue": {**BROKER, "celery": {"task": "t.nightly"}}}, "queue:celery"),
        ({"queue": {**BROKER, "rq": {"function": "m.f"}}}, "queue:rq"),
        ({"queue": {**BROKER, "arq": {"function": "f"}}}, "queue:arq"),
        ({"queue": {**BROKER, "dramatiq": {"actor": "a"}}}, "queue:dramatiq"),
        ({"queue": {**BROKER, "taskiq": {"task": "m:t", "brokerClass": "RedisStreamBroker"}}},
         "queue:taskiq"),
        ({"queue": {**BROKER, "sidekiq": {"class": "Reports::Job"}}}, "queue:sidekiq"),
        ({"queue": {**BROKER, "bullmq": {"queue": "q", "name": "n"}}}, "queue:bullmq"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)  # fmt: skip
def test_the_target_as_people_read_it(target: dict[str, object], expected: str) -> None:
    spec = spec_parsing.parse_spec({"every": "1m", "target": target})

    assert planning.shown_target(spec) == expected
    assert len(expected) <= status_models.TARGET_SHOWN_MAX
