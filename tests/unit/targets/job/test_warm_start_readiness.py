"""A warm Job's pod at the run's scheduled time (``readiness.not_ready``): at its gate, or the
pod's own reason why not, as a table of pods as the API server sends them."""

from typing import Any

import pytest

from punctual.targets.job import readiness

GATED = ["/punctual-gate/gate", "--at", "1796002200000", "--", "/report"]
RUNNING: dict[str, Any] = {"running": {"startedAt": "2026-11-30T01:29:31Z"}}
CREATING = {"waiting": {"reason": "ContainerCreating"}}
INITIALIZING = {"waiting": {"reason": "PodInitializing"}}
PULL_BACKOFF = {
    "waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "nope:1"'}
}


def ended(code: int, reason: str = "Completed") -> dict[str, Any]:
    return {"terminated": {"exitCode": code, "reason": reason}}


def exec_pod(state: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "nightly-1796002200-x7k2p"},
        "spec": {"containers": [{"name": "report", "command": GATED}]},
        "status": {
            "phase": "Running",
            "containerStatuses": [{"name": "report", "state": state}],
            **status,
        },
    }


def init_pod(
    release: dict[str, Any], *, pull: dict[str, Any] | None = None, **status: Any
) -> dict[str, Any]:
    return {
        "metadata": {"name": "nightly-1796002200-x7k2p"},
        "spec": {"containers": [{"name": "report"}]},
        "status": {
            "phase": "Pending",
            "initContainerStatuses": [
                {"name": "punctual-gate", "state": ended(0)},
                {"name": "punctual-pull-0", "state": pull or ended(0)},
                {"name": "punctual-release", "state": release},
            ],
            "containerStatuses": [{"name": "report", "state": INITIALIZING}],
            **status,
        },
    }


UNSCHEDULABLE = {
    "conditions": [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 Insufficient cpu.",
        }
    ]
}


class TestAPodAtItsGate:
    @pytest.mark.parametrize(
        "pods",
        [
            pytest.param([exec_pod(RUNNING)], id="exec-its-held-container-running"),
            pytest.param([exec_pod(ended(0))], id="exec-its-workload-ended-already"),
            pytest.param([exec_pod(ended(1, "Error"))], id="exec-its-workload-failed-after"),
            pytest.param([init_pod(RUNNING)], id="init-its-release-waiting"),
            pytest.param([init_pod(ended(0))], id="init-its-release-done"),
            pytest.param(
                [{**exec_pod(CREATING), "status": {"phase": "Succeeded"}}], id="a-pod-that-ended"
            ),
            pytest.param([exec_pod(PULL_BACKOFF), exec_pod(RUNNING)], id="one-retry-of-several"),
        ],
    )
    def test_is_ready(self, pods: list[dict[str, Any]]) -> None:
        assert readiness.not_ready(pods, {}) is None


class TestAPodNotAtItsGateSaysItsOwnReason:
    @pytest.mark.parametrize(
        ("pods", "told"),
        [
            pytest.param(
                [init_pod(INITIALIZING, pull=PULL_BACKOFF)],
                "pod nightly-1796002200-x7k2p: ImagePullBackOff (container punctual-pull-0): "
                'Back-off pulling image "nope:1"',
                id="init-an-image-that-cannot-be-pulled",
            ),
            pytest.param(
                [init_pod(INITIALIZING, pull={"waiting": {"reason": "ErrImagePull"}})],
                "pod nightly-1796002200-x7k2p: ErrImagePull (container punctual-pull-0)",
                id="init-err-image-pull",
            ),
            pytest.param(
                [exec_pod({"waiting": {"reason": "CreateContainerConfigError", "message": "x"}})],
                "pod nightly-1796002200-x7k2p: CreateContainerConfigError (container report): x",
                id="exec-a-missing-secret",
            ),
            pytest.param(
                [{**exec_pod(CREATING), "status": {"phase": "Pending", **UNSCHEDULABLE}}],
                "pod nightly-1796002200-x7k2p: Unschedulable: 0/1 nodes are available: 1 "
                "Insufficient cpu.",
                id="unschedulable",
            ),
            pytest.param(
                [init_pod(INITIALIZING, pull=ended(2, "Error"))],
                "pod nightly-1796002200-x7k2p: Error (container punctual-pull-0, exit code 2)",
                id="a-pull-container-that-failed",
            ),
            pytest.param(
                [init_pod(ended(1, "Error"))],
                "pod nightly-1796002200-x7k2p: Error (container punctual-release, exit code 1)",
                id="a-release-that-failed",
            ),
            pytest.param(
                [exec_pod(CREATING)],
                "pod nightly-1796002200-x7k2p: ContainerCreating (container report)",
                id="still-starting",
            ),
            pytest.param(
                [{"metadata": {"name": "p"}, "status": {"phase": "Pending"}}],
                "pod p: Pending",
                id="nothing-but-its-phase",
            ),
            pytest.param(
                [exec_pod({"waiting": {"reason": "ImagePullBackOff", "message": "m" * 1000}})],
                "pod nightly-1796002200-x7k2p: ImagePullBackOff (container report): "
                + "m" * 297
                + "...",
                id="a-long-message-cut",
            ),
            pytest.param(
                [{"status": "not an object", "spec": [], "metadata": None}],
                "pod ?: Pending",
                id="a-malformed-pod",
            ),
        ],
    )
    def test_is_told(self, pods: list[dict[str, Any]], told: str) -> None:
        assert readiness.not_ready(pods, {}) == told


class TestAJobWithoutAPod:
    @pytest.mark.parametrize(
        ("job_status", "told"),
        [
            pytest.param(
                {},
                "no pod (the Job controller created none: see the Job's Events)",
                id="nothing-said",
            ),
            pytest.param(
                {
                    "conditions": [
                        {"type": "Suspended", "status": "True", "reason": "JobSuspended"},
                        {"type": "Failed", "status": "False"},
                    ]
                },
                "no pod (the Job controller created none: see the Job's Events); the Job: "
                "JobSuspended",
                id="with-its-conditions",
            ),
        ],
    )
    def test_says_no_pod_and_the_jobs_own_conditions(
        self, job_status: dict[str, Any], told: str
    ) -> None:
        assert readiness.not_ready([], job_status) == told
