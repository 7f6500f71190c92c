"""``make compare`` measures warm starts beside cold ones: the gate's own line, the pod waiting at
its gate, and rows and ratios for the warm systems against CronJob."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from comparing.figures import Phase, collect, summarize, table
from comparing.objects import warm_job_spec
from comparing.observing import Observations, at_its_gate, gate_late_ms, gated_containers
from comparing.systems import (
    AT_GATE,
    CRONJOB,
    GATE_RELEASED,
    JOB_WATCH,
    POD_RUNNING,
    PUNCTUAL_ANNOTATION,
    WARM_EXEC,
    WARM_INIT,
    WORKLOAD_STARTED,
)
from comparing.workload import NODE_MEASURES

SLOT = datetime(2026, 12, 1, 14, 41, tzinfo=UTC)
RELEASED = (
    '{"punctualGate":"released","releaseAtMs":1796136060000,"nodeClockMs":1796136060003,"lateMs":3}'
)


def ms(value: float) -> timedelta:
    return timedelta(milliseconds=value)


class TestTheGatesLine:
    @pytest.mark.parametrize(
        ("log", "late_ms"),
        [
            (RELEASED + "\n", 3),
            (RELEASED + "\nCALL_URL http://x/started/node/we-00-1: HTTP 200 ok\n", 3),
            (RELEASED.replace('"lateMs":3', '"lateMs":-1'), -1),
            ("CALL_URL http://x: HTTP 200 ok\n", None),
            ("", None),
            ('{"punctualGate":"released"\n', None),
            ('{"punctualGate":"waiting","lateMs":0}\n', None),
            ('{"punctualGate":"released","lateMs":"3"}\n', None),
            ('["punctualGate"]\n', None),
        ],
        ids=[
            "alone",
            "before the workload's output",
            "a few ms early",
            "no gate line",
            "an empty log",
            "a cut line",
            "not a release",
            "lateMs not an integer",
            "not an object",
        ],
    )
    def test_gives_the_lateness_it_printed_or_none(self, log: str, late_ms: int | None) -> None:
        assert gate_late_ms(log) == late_ms


def container(name: str, command: list[str] | None = None) -> dict[str, Any]:
    return {"name": name, "image": "i", **({"command": command} if command else {})}


class TestTheGatedContainers:
    @pytest.mark.parametrize(
        ("spec", "gated"),
        [
            ({"containers": [container("workload", ["/workload"])]}, []),
            ({"containers": [container("workload")]}, []),
            (
                {
                    "initContainers": [
                        container("punctual-gate", ["/gate", "install", "/punctual-gate/gate"]),
                        container("punctual-pull-0", ["/punctual-gate/gate", "noop"]),
                    ],
                    "containers": [
                        container(
                            "workload", ["/punctual-gate/gate", "--at", "1", "--", "/workload"]
                        )
                    ],
                },
                ["workload"],
            ),
            (
                {
                    "initContainers": [
                        container("punctual-gate", ["/gate", "install", "/punctual-gate/gate"]),
                        container("punctual-release", ["/gate", "wait", "--at", "1"]),
                    ],
                    "containers": [container("workload", ["/workload"])],
                },
                ["punctual-release"],
            ),
        ],
        ids=["cold", "cold, the image's entrypoint", "Exec", "Init"],
    )
    def test_are_those_waiting_at_an_instant(self, spec: dict[str, Any], gated: list[str]) -> None:
        assert gated_containers(spec) == gated


class TestAPodAtItsGate:
    @pytest.mark.parametrize(
        ("status", "at_gate"),
        [
            ({}, False),
            ({"initContainerStatuses": [{"name": "punctual-release", "state": {"waiting": {}}}]},
             False),
            ({"initContainerStatuses": [{"name": "punctual-gate", "state": {"running": {}}}]},
             False),
            ({"initContainerStatuses": [{"name": "punctual-release", "state": {"running": {}}}]},
             True),
            ({"initContainerStatuses": [{"name": "punctual-release",
                                         "state": {"terminated": {}}}]}, True),
        ],
        ids=["no status", "waiting", "another container", "running", "past it"],
    )  # fmt: skip
    def test_has_a_gated_container_running_or_done(
        self, status: dict[str, Any], at_gate: bool
    ) -> None:
        assert at_its_gate(status, ["punctual-release"]) is at_gate


def job(name: str, owner: str, kind: str = "ScheduledJob") -> dict[str, Any]:
    annotation = PUNCTUAL_ANNOTATION if kind == "ScheduledJob" else "other"
    return {
        "metadata": {
            "name": name,
            "namespace": "node",
            "ownerReferences": [{"kind": kind, "name": owner}],
            "annotations": {annotation: SLOT.isoformat()},
            "creationTimestamp": SLOT.isoformat(),
        }
    }


def pod(job_name: str, phase: str, statuses: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"{job_name}-abcde",
            "namespace": "node",
            "labels": {"batch.kubernetes.io/job-name": job_name},
        },
        "spec": {
            "containers": [
                container("workload", ["/punctual-gate/gate", "--at", "1", "--", "/workload"])
            ]
        },
        "status": {"phase": phase, "containerStatuses": statuses},
    }


class TestAWarmSlotsSamples:
    def seen_warm_exec_slot(self) -> Observations:
        seen = Observations()
        name = "we-00-1796136060"
        seen.job_seen(job(name, "we-00"), SLOT - ms(30_000))
        seen.pod_seen(pod(name, "Pending", []), SLOT - ms(29_500))
        running = [{"name": "workload", "state": {"running": {}}}]
        seen.pod_seen(pod(name, "Running", running), SLOT - ms(24_000))
        seen.pod_seen(pod(name, "Succeeded", running), SLOT + ms(900))
        seen.gate_read(("node", name), 3)
        seen.arrived(f"/started/node/{name}", None, SLOT + ms(7))
        return seen

    def test_are_made_ahead_waited_at_the_gate_and_started_at_the_slot(self) -> None:
        phase = Phase("workload", "", "node", {WARM_EXEC: ["we-00"], CRONJOB: []}, [SLOT])

        samples, tallies = collect(self.seen_warm_exec_slot(), phase)

        by_measure = {s.measure: s.lateness_ms for s in samples if s.system == WARM_EXEC}
        assert by_measure == {
            JOB_WATCH: -30_000,
            "Job created (creationTimestamp)": 0,
            AT_GATE: -24_000,
            POD_RUNNING: -24_000,
            GATE_RELEASED: 3,
            WORKLOAD_STARTED: 7,
        }
        assert (tallies[WARM_EXEC].duplicates, tallies[WARM_EXEC].misses) == (0, 0)

    def test_read_the_gate_of_a_pod_once(self) -> None:
        seen = self.seen_warm_exec_slot()

        assert seen.gates_to_read("node") == []
        seen.pod_seen(pod("we-01-1", "Pending", []), SLOT)
        assert seen.gates_to_read("node") == [(("node", "we-01-1"), "we-01-1-abcde", ["workload"])]


class TestTheWarmRows:
    def test_sit_beside_cronjobs_with_their_workload_start_ratio(self) -> None:
        owners = {CRONJOB: ["cron-00"], WARM_EXEC: ["we-00"], WARM_INIT: ["wi-00"]}
        phase = Phase("workload", "", "node", owners, [SLOT])
        seen = Observations()
        for owner in ("we-00", "wi-00"):
            seen.job_seen(job(f"{owner}-1", owner), SLOT - ms(30_000))
        seen.arrived("/started/node/we-00-1", None, SLOT + ms(8))
        seen.arrived("/started/node/wi-00-1", None, SLOT + ms(800))
        cron = job("cron-00-1", "cron-00", kind="CronJob")
        cron["metadata"]["annotations"] = {
            "batch.kubernetes.io/cronjob-scheduled-timestamp": SLOT.isoformat()
        }
        seen.job_seen(cron, SLOT + ms(300))
        seen.arrived("/started/node/cron-00-1", None, SLOT + ms(8_000))
        samples, tallies = collect(seen, phase)

        rows = summarize(
            samples,
            tallies,
            {system: NODE_MEASURES["workload"][system] for system in owners},
            part="workload",
        )
        text = table(rows, header="h")

        assert "Punctual Job, warm (Exec) workload started (its call)" in " ".join(text.split())
        assert (
            "[workload] workload start p99, warm (Exec): CronJob 8000 ms, Punctual 8.0 ms: "
            "1000.0x lower" in text
        )
        assert (
            "[workload] workload start p99, warm (Init): CronJob 8000 ms, Punctual 800 ms: "
            "10.0x lower" in text
        )


class TestAWarmScheduledJob:
    def test_asks_for_its_mode_and_lead_with_a_timeout_that_fits_the_minute(self) -> None:
        template = {"spec": {"template": {"spec": {"containers": []}}}}

        spec = warm_job_spec(template, {"succeeded": 3}, mode="Init", lead=timedelta(seconds=30))

        assert spec["target"]["job"] == {
            "template": template,
            "warmStart": {"lead": "30s", "mode": "Init"},
        }
        assert (spec["schedule"], spec["timeout"]) == ("*/1 * * * *", "30s")
