"""The `helm test` script's verdict (charts/punctual/files/helm-test.py), from a ScheduledJob's
status and the calls its target received. The script runs end to end against the real control
plane and operator in tests/integration/test_helm_chart.py."""

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "charts" / "punctual" / "files" / "helm-test.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("helm_test_script", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


helm_test = load_script()
READY = {"type": "Ready", "status": "True", "reason": "Scheduled"}
NOT_READY = {"type": "Ready", "status": "False", "reason": "HostNotAllowed", "message": "no"}
SUCCEEDED = {"result": "Succeeded", "slot": "2026-12-01T00:00:02Z", "replica": "r1"}


def body(*, conditions: list[Any], last_run: dict[str, Any] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": conditions}
    if last_run is not None:
        status["lastRun"] = last_run
    return {"status": status}


class TestVerdict:
    @pytest.mark.parametrize(
        ("status", "called", "expected"),
        [
            ({}, False, None),
            (body(conditions=[READY]), False, None),
            (body(conditions=[READY], last_run=SUCCEEDED), False, None),
            (body(conditions=[READY], last_run=SUCCEEDED), True, True),
            (body(conditions=[NOT_READY]), False, False),
            (
                body(conditions=[READY], last_run={"result": "Failed", "message": "HTTP 500"}),
                True,
                False,
            ),
            (body(conditions=[READY], last_run={"result": "TimedOut"}), False, False),
            (body(conditions=[READY], last_run={"result": "Lost"}), False, False),
        ],
        ids=[
            "no status yet",
            "armed, no run yet",
            "succeeded but the call not seen yet",
            "succeeded and called",
            "not ready",
            "failed",
            "timed out",
            "lost",
        ],
    )
    def test_it_decides_only_on_a_success_it_saw_or_a_failure(
        self, status: dict[str, Any], called: bool, expected: bool | None
    ) -> None:
        calls = helm_test.Calls()
        if called:
            calls.add("default/job/uid/1764547202000")

        decided = helm_test.outcome(status, calls)

        assert (None if decided is None else decided[0]) == expected

    def test_a_refusal_names_its_reason(self) -> None:
        passed, why = helm_test.outcome(body(conditions=[NOT_READY]), helm_test.Calls())

        assert not passed
        assert why == "Ready=False HostNotAllowed: no"
