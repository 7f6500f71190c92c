"""A warm start's Job template (``warm.rewrite``): the gate installed, every image pulled, the
workload held until the release (Exec: its command through the gate; Init: a last init
container before the user's), nothing of the user's started early, every added container
PodSecurity ``restricted``, the input never changed."""

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from punctual.api import job_models
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets.job import warm

EXEC, INIT, AUTO = (
    job_models.WarmStartMode.EXEC,
    job_models.WarmStartMode.INIT,
    job_models.WarmStartMode.AUTO,
)
RELEASE_AT = datetime(2026, 11, 30, 1, 30, 0, 250000, tzinfo=UTC)
RELEASE_MS = str(int(RELEASE_AT.timestamp() * 1000))
GATE_IMAGE = "registry.example/punctual-gate:1.0"
GATE = "/punctual-gate/gate"
REPORT = {"name": "report", "image": "registry.example/report:1", "command": ["/report"]}
SETUP = {"name": "setup", "image": "registry.example/setup:1", "command": ["/setup"]}
PROXY = {
    "name": "proxy",
    "image": "registry.example/proxy:1",
    "command": ["/proxy"],
    "restartPolicy": "Always",
}
OURS = ["punctual-gate", "punctual-pull-0"]


def job_template(**pod_spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"team": "reports"}},
        "spec": {
            "backoffLimit": 0,
            "template": {"spec": {"restartPolicy": "Never", "containers": [REPORT], **pod_spec}},
        },
    }


def rewrite(template: dict[str, Any], mode: job_models.WarmStartMode = EXEC) -> warm.WarmJob:
    return warm.rewrite(template, release_at=RELEASE_AT, mode=mode, gate_image=GATE_IMAGE)


def pod_spec(job: warm.WarmJob) -> dict[str, Any]:
    spec: dict[str, Any] = job.template["spec"]["template"]["spec"]
    return spec


def names(containers: list[dict[str, Any]]) -> list[str]:
    return [container["name"] for container in containers]


def held(command: list[str]) -> list[str]:
    return [GATE, "--at", RELEASE_MS, "--", *command]


class TestTheContainersAdded:
    @pytest.mark.parametrize(
        ("mode", "init_containers"),
        [
            pytest.param(EXEC, OURS, id="exec-installs-and-pulls"),
            pytest.param(INIT, [*OURS, "punctual-release"], id="init-then-waits"),
        ],
    )
    def test_come_first_in_order(
        self, mode: job_models.WarmStartMode, init_containers: list[str]
    ) -> None:
        assert names(pod_spec(rewrite(job_template(), mode))["initContainers"]) == init_containers

    def test_the_gate_copies_itself_to_the_shared_volume(self) -> None:
        [install, *_] = pod_spec(rewrite(job_template()))["initContainers"]

        assert install["image"] == GATE_IMAGE
        assert install["command"] == ["/gate", "install", GATE]
        assert install["volumeMounts"] == [
            {"name": "punctual-gate", "mountPath": "/punctual-gate", "readOnly": False}
        ]

    def test_the_shared_volume_is_a_small_empty_dir_after_the_users(self) -> None:
        volumes = pod_spec(rewrite(job_template(volumes=[{"name": "data", "emptyDir": {}}])))[
            "volumes"
        ]

        assert volumes == [
            {"name": "data", "emptyDir": {}},
            {"name": "punctual-gate", "emptyDir": {"sizeLimit": "16Mi"}},
        ]

    def test_init_mode_waits_for_the_release_in_the_gates_image(self) -> None:
        release = pod_spec(rewrite(job_template(), INIT))["initContainers"][-1]

        assert release["image"] == GATE_IMAGE
        assert release["command"] == ["/gate", "wait", "--at", RELEASE_MS]
        assert "volumeMounts" not in release

    @pytest.mark.parametrize("mode", [EXEC, INIT])
    def test_each_passes_pod_security_restricted_with_small_resources(
        self, mode: job_models.WarmStartMode
    ) -> None:
        added = pod_spec(rewrite(job_template(), mode))["initContainers"]

        for container in added:
            assert container["securityContext"] == {
                "runAsNonRoot": True,
                "runAsUser": 65532,
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"]},
                "seccompProfile": {"type": "RuntimeDefault"},
                "readOnlyRootFilesystem": True,
            }
            small = {"cpu": "10m", "memory": "16Mi"}
            assert container["resources"] == {"requests": small, "limits": small}


class TestTheImagePulls:
    @pytest.mark.parametrize(
        ("spec", "pulled"),
        [
            pytest.param({}, [("registry.example/report:1", None)], id="one-container"),
            pytest.param(
                {"containers": [REPORT, {**REPORT, "name": "again"}]},
                [("registry.example/report:1", None)],
                id="the-same-image-twice-is-pulled-once",
            ),
            pytest.param(
                {
                    "initContainers": [SETUP],
                    "containers": [REPORT, {**PROXY, "restartPolicy": None, "name": "p"}],
                },
                [
                    ("registry.example/setup:1", None),
                    ("registry.example/report:1", None),
                    ("registry.example/proxy:1", None),
                ],
                id="init-containers-first-then-the-main-ones",
            ),
            pytest.param(
                {"containers": [{**REPORT, "imagePullPolicy": "Always"}]},
                [("registry.example/report:1", "Always")],
                id="the-pull-policy-copied",
            ),
            pytest.param(
                {
                    "containers": [
                        {**REPORT, "imagePullPolicy": "IfNotPresent"},
                        {**REPORT, "name": "again", "imagePullPolicy": "Always"},
                    ]
                },
                [("registry.example/report:1", "IfNotPresent")],
                id="the-policy-of-its-first-use",
            ),
        ],
    )
    def test_one_per_distinct_image(
        self, spec: dict[str, Any], pulled: list[tuple[str, str | None]]
    ) -> None:
        added = pod_spec(rewrite(job_template(**spec), INIT))["initContainers"]
        pulls = [pull for pull in added if pull["name"].startswith("punctual-pull-")]

        assert [(pull["image"], pull.get("imagePullPolicy")) for pull in pulls] == pulled
        assert names(pulls) == [f"punctual-pull-{n}" for n in range(len(pulled))]
        for pull in pulls:
            assert pull["command"] == [GATE, "noop"]
            assert pull["volumeMounts"] == [
                {"name": "punctual-gate", "mountPath": "/punctual-gate", "readOnly": True}
            ]


class TestExecHoldsTheContainersThatWouldStartFirst:
    @pytest.mark.parametrize(
        ("container", "command", "args"),
        [
            pytest.param(REPORT, ["/report"], None, id="a-command"),
            pytest.param(
                {**REPORT, "command": ["python", "-m", "report"], "args": ["--day", "$(DAY)"]},
                ["python", "-m", "report"],
                ["--day", "$(DAY)"],
                id="args-untouched",
            ),
            pytest.param(
                {**REPORT, "command": ["sh", "-c", "exec report"]},
                ["sh", "-c", "exec report"],
                None,
                id="a-shell",
            ),
        ],
    )
    def test_its_command_runs_through_the_gate(
        self, container: dict[str, Any], command: list[str], args: list[str] | None
    ) -> None:
        [report] = pod_spec(rewrite(job_template(containers=[container])))["containers"]

        assert report["command"] == held(command)
        assert report.get("args") == args
        assert report["volumeMounts"][-1] == {
            "name": "punctual-gate",
            "mountPath": "/punctual-gate",
            "readOnly": True,
        }

    @pytest.mark.parametrize(
        ("spec", "held_init", "held_main"),
        [
            pytest.param(
                {"containers": [REPORT, {**SETUP, "name": "second"}]},
                [],
                ["report", "second"],
                id="several-containers-all-held",
            ),
            pytest.param(
                {"initContainers": [SETUP, {**SETUP, "name": "more"}]},
                ["setup"],
                [],
                id="the-first-init-container-holds-the-rest",
            ),
            pytest.param(
                {"initContainers": [PROXY]},
                ["proxy"],
                ["report"],
                id="a-sidecar-starts-without-waiting",
            ),
            pytest.param(
                {"initContainers": [PROXY, SETUP, {**PROXY, "name": "late"}]},
                ["proxy", "setup"],
                [],
                id="sidecars-up-to-the-first-init-container",
            ),
        ],
    )
    def test_and_only_those(
        self, spec: dict[str, Any], held_init: list[str], held_main: list[str]
    ) -> None:
        template = job_template(**spec)
        rewritten = pod_spec(rewrite(template))
        original = template["spec"]["template"]["spec"]

        for kind, expected in (("initContainers", held_init), ("containers", held_main)):
            users = original.get(kind, [])
            # The user's come after ours, in their order.
            for before, after in zip(
                users, rewritten[kind][len(rewritten[kind]) - len(users) :], strict=True
            ):
                if before["name"] in expected:
                    assert after["command"] == held(before["command"])
                else:
                    assert after == before


class TestInitHoldsEverythingOfTheUsers:
    @pytest.mark.parametrize(
        "spec",
        [
            pytest.param({}, id="no-init-containers"),
            pytest.param({"initContainers": [SETUP]}, id="init-containers"),
            pytest.param({"initContainers": [PROXY, SETUP]}, id="a-native-sidecar"),
        ],
    )
    def test_the_release_comes_before_them_all_and_nothing_is_rewritten(
        self, spec: dict[str, Any]
    ) -> None:
        template = job_template(**spec)
        rewritten = pod_spec(rewrite(template, INIT))
        original = template["spec"]["template"]["spec"]

        ours = len(rewritten["initContainers"]) - len(original.get("initContainers", []))
        assert rewritten["initContainers"][ours - 1]["name"] == "punctual-release"
        assert rewritten["initContainers"][ours:] == original.get("initContainers", [])
        assert rewritten["containers"] == original["containers"]


class TestAutoPicks:
    @pytest.mark.parametrize(
        ("spec", "mode"),
        [
            pytest.param({}, EXEC, id="exec-with-a-command"),
            pytest.param({"containers": [REPORT, {**REPORT, "name": "b"}]}, EXEC, id="all-have"),
            pytest.param(
                {"containers": [REPORT, {"name": "b", "image": "b"}]}, INIT, id="one-has-none"
            ),
            pytest.param(
                {"containers": [{**REPORT, "livenessProbe": {"exec": {"command": ["true"]}}}]},
                INIT,
                id="a-liveness-probe",
            ),
            pytest.param(
                {"initContainers": [SETUP], "containers": [{"name": "b", "image": "b"}]},
                EXEC,
                id="main-containers-wait-for-a-held-init-container",
            ),
            pytest.param(
                {"initContainers": [{**PROXY, "command": None}]}, INIT, id="a-sidecar-without"
            ),
        ],
    )
    def test_exec_when_it_can_hold_init_otherwise(
        self, spec: dict[str, Any], mode: job_models.WarmStartMode
    ) -> None:
        job = rewrite(job_template(**spec), AUTO)

        assert job.mode is mode
        assert job.template["metadata"]["annotations"][warm.WARM_START_ANNOTATION] == mode.value

    @pytest.mark.parametrize("mode", [EXEC, INIT])
    def test_a_mode_asked_for_is_the_one_used(self, mode: job_models.WarmStartMode) -> None:
        assert rewrite(job_template(), mode).mode is mode


class TestTheRest:
    def test_the_job_says_when_and_how_it_is_released(self) -> None:
        metadata = rewrite(job_template()).template["metadata"]

        assert metadata == {
            "labels": {"team": "reports"},
            "annotations": {
                warm.RELEASE_AT_ANNOTATION: "2026-11-30T01:30:00.250Z",
                warm.WARM_START_ANNOTATION: "Exec",
            },
        }

    def test_env_env_from_and_the_users_own_settings_are_untouched(self) -> None:
        container = {
            **REPORT,
            "env": [{"name": "DAY", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "envFrom": [{"secretRef": {"name": "report-credentials"}}],
            "securityContext": {"runAsUser": 1000},
            "resources": {"limits": {"memory": "1Gi"}},
            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        }
        [report] = pod_spec(rewrite(job_template(containers=[container])))["containers"]

        assert {key: report[key] for key in ("env", "envFrom", "securityContext", "resources")} == {
            key: container[key] for key in ("env", "envFrom", "securityContext", "resources")
        }
        assert report["volumeMounts"][0] == {"name": "data", "mountPath": "/data"}

    def test_the_job_spec_is_the_users(self) -> None:
        spec = rewrite(job_template()).template["spec"]

        assert spec["backoffLimit"] == 0
        assert spec["template"]["spec"]["restartPolicy"] == "Never"

    @pytest.mark.parametrize("mode", [EXEC, INIT, AUTO])
    def test_the_template_given_is_never_changed(self, mode: job_models.WarmStartMode) -> None:
        template = job_template(
            initContainers=[PROXY, SETUP], volumes=[{"name": "data", "emptyDir": {}}]
        )
        before = copy.deepcopy(template)

        rewrite(template, mode)

        assert template == before

    def test_a_template_exec_cannot_hold_is_refused_as_the_check_does(self) -> None:
        with pytest.raises(InvalidSpecError, match=r"containers\[0\]\.command"):
            rewrite(job_template(containers=[{"name": "b", "image": "b"}]), EXEC)
