"""Exclusions on the real control plane: ``punctual skip NAME --at T`` leaves one slot out (the
``punctual.dev/skip`` annotation), ``punctual unskip`` takes it back, and the slot skipped is
never run on either of two replicas, counted ``excluded``, never missed; a holiday Calendar
named by jobs already armed applies at once when it is created and when it is edited."""

from datetime import UTC, datetime, time, timedelta
from typing import Any

from operator_harness import (
    Operators,
    Receiver,
    apply,
    condition,
    counts,
    eventually,
    every_slots,
    fmt,
    http_target,
    now,
    punctual,
    read,
    scheduled_job,
    status,
)

from localcluster import LocalCluster
from punctual.scheduling import timeline

pytest_plugins = ["operator_fixtures", "replica_pairs"]

PERIOD = timedelta(seconds=10)
LEAD = 6 * PERIOD
"""From the first call to the slot skipped: four ``punctual`` commands (a process each, a few
seconds on a busy machine) and their edits reach both replicas well within it."""


def test_a_skipped_slot_never_runs_and_an_unskipped_one_runs(
    cluster: LocalCluster, two_replicas: Operators, receiver: Receiver, module_namespace: str
) -> None:
    name = "skipping"
    job = f"{module_namespace}/{name}"
    spec = {"every": "10s", "target": http_target(receiver, module_namespace, name)}
    apply(cluster, scheduled_job(module_namespace, name, spec))
    eventually(lambda: receiver.calls(job), timeout=30, what=f"a first call of {job}")
    # Slots far enough ahead that the commands (each a process of its own, on a machine that
    # may be busy) and the edits they make reach both replicas before them.
    ahead = now() + LEAD
    skipped, unskipped, after = every_slots(ahead, ahead + 3 * PERIOD, PERIOD)[:3]

    for at in (skipped, unskipped):
        done = punctual(cluster, "skip", name, "-n", module_namespace, "--at", timeline.rfc3339(at))
        assert done.returncode == 0, done.stderr
        assert f"the slot at {timeline.rfc3339(at)} is skipped" in done.stdout
    again = punctual(
        cluster, "skip", name, "-n", module_namespace, "--at", timeline.rfc3339(skipped)
    )
    assert again.returncode == 1
    assert "is skipped already" in again.stderr
    done = punctual(
        cluster, "unskip", name, "-n", module_namespace, "--at", timeline.rfc3339(unskipped)
    )
    assert done.returncode == 0, done.stderr

    eventually(
        lambda: any(call.slot >= after for call in receiver.calls(job)),
        timeout=300,
        what=f"the call of {fmt(after)}",
    )
    called = [call.slot for call in receiver.calls(job)]
    assert skipped not in called
    assert called.count(unskipped) == 1
    assert called.count(after) == 1
    eventually(
        lambda: counts(read(cluster, module_namespace, name))["excluded"] == 1,
        timeout=30,
        what="one slot counted excluded",
    )
    body = read(cluster, module_namespace, name)
    assert counts(body)["missed"] == 0
    assert body["metadata"]["annotations"]["punctual.dev/skip"] == timeline.rfc3339(skipped)


def holidays(namespace: str, *dates: str) -> dict[str, Any]:
    return {
        "apiVersion": "punctual.dev/v1alpha1",
        "kind": "Calendar",
        "metadata": {"name": "holidays", "namespace": namespace},
        "spec": {"dates": list(dates)},
    }


def test_a_holiday_calendar_edited_while_jobs_are_armed_applies_at_once(
    cluster: LocalCluster, two_replicas: Operators, receiver: Receiver, module_namespace: str
) -> None:
    names = ("holiday-a", "holiday-b")
    for name in names:
        spec = {
            "every": "5s",
            "exclude": {"calendars": ["holidays"]},
            "target": http_target(receiver, module_namespace, name),
        }
        apply(cluster, scheduled_job(module_namespace, name, spec))

    def ready(name: str) -> dict[str, Any]:
        return condition(read(cluster, module_namespace, name), "Ready") or {}

    for name in names:
        eventually(
            lambda name=name: ready(name).get("reason") == "CalendarNotFound",
            timeout=60,
            what=f"{name} waiting for its Calendar",
        )
        assert ready(name)["message"] == (
            "spec.exclude.calendars[0]: no Calendar 'holidays' in the job's namespace"
        )
        assert not receiver.calls(f"{module_namespace}/{name}")

    today = now().astimezone(UTC).date()
    apply(cluster, holidays(module_namespace, f"{today}/{today + timedelta(days=2)}"))
    after_the_holidays = datetime.combine(today + timedelta(days=3), time(), tzinfo=UTC)
    for name in names:
        eventually(
            lambda name=name: (
                ready(name).get("status") == "True"
                and status(read(cluster, module_namespace, name)).get("nextRunTime")
                == timeline.rfc3339(after_the_holidays)
            ),
            timeout=60,
            what=f"{name} armed for the day after the holidays",
        )
    eventually(
        lambda: counts(read(cluster, module_namespace, names[0]))["excluded"] >= 1,
        timeout=150,
        what="slots counted excluded as they pass",
    )

    apply(cluster, holidays(module_namespace, "2020-01-01"))  # the holidays are called off

    for name in names:
        eventually(
            lambda name=name: receiver.calls(f"{module_namespace}/{name}"),
            timeout=60,
            what=f"a call of {name} once the holidays are called off",
        )
        assert counts(read(cluster, module_namespace, name))["missed"] == 0
