"""The job target's warm start in the operator's check (``planning.plan_for``): its lead fits
between two slots less the timeout and reaches the plan; a template the gate cannot hold the
way its mode asks, or that uses warm start's reserved names, is refused naming the field users
wrote."""

from datetime import timedelta
from typing import Any

import pytest

from punctual.api import planning, spec_parsing
from punctual.scheduling import plans
from punctual.scheduling.errors import InvalidSpecError

UID = "0b6f2c1e-8d2a-4c7e-9a51-3f1d2e4b5a69"
POD_SPEC = "spec.target.job.template.spec.template.spec"
LEAD = "spec.target.job.warmStart.lead"
REPORT = {"name": "report", "image": "registry.example/report:1", "command": ["/report"]}


def job_template(**pod_spec: Any) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": [REPORT], **pod_spec}}}}


def plan(
    *, warm_start: dict[str, Any] | None, template: dict[str, Any] | None = None, **spec: Any
) -> plans.JobPlan:
    job: dict[str, Any] = {"template": template or job_template()}
    if warm_start is not None:
        job["warmStart"] = warm_start
    raw = {**({} if "schedule" in spec else {"every": "1m"}), "target": {"job": job}, **spec}
    return planning.plan_for(spec_parsing.parse_spec(raw), uid=UID)


def refused(**given: Any) -> InvalidSpecError:
    with pytest.raises(InvalidSpecError) as caught:
        plan(**given)
    return caught.value


class TestTheLeadReachesThePlan:
    def test_as_a_duration(self) -> None:
        assert plan(warm_start={"lead": "30s"}, timeout="20s").warm_lead == timedelta(seconds=30)

    def test_none_without_a_warm_start(self) -> None:
        assert plan(warm_start=None).warm_lead is None

    def test_the_slots_claim_lives_the_lead_longer(self) -> None:
        # A lost run's retry keeps a slot in play longer than two periods: the TTL is not the
        # floor. (Queue, the other way to, cannot go with a warm start.)
        retried = {"timeout": "20s", "retryLostRuns": True}
        cold = plan(warm_start=None, **retried)
        warm = plan(warm_start={"lead": "30s"}, **retried)

        assert warm.lock_ttl - cold.lock_ttl == timedelta(seconds=30)


class TestTheLeadFitsBetweenTwoSlotsLessTheTimeout:
    @pytest.mark.parametrize(
        ("spec", "lead"),
        [
            pytest.param({"every": "1m", "timeout": "20s"}, "40s", id="every-at-the-bound"),
            pytest.param({"every": "1m", "timeout": "20s"}, "1s", id="every-well-within"),
            pytest.param(
                {"schedule": "*/5 * * * *", "timeout": "1m"}, "4m", id="cron-at-the-bound"
            ),
            pytest.param(
                {"schedule": "0 9,10 * * *", "timeout": "10m"},
                "50m",
                id="cron-at-its-shortest-gap",
            ),
        ],
    )
    def test_a_lead_within_is_accepted(self, spec: dict[str, Any], lead: str) -> None:
        assert plan(warm_start={"lead": lead}, **spec).warm_lead is not None

    @pytest.mark.parametrize(
        ("spec", "lead", "words"),
        [
            pytest.param(
                {"every": "1m", "timeout": "20s"},
                "41s",
                "41s is more than the 1m between two slots less spec.timeout (20s): at most 40s",
                id="every-just-past",
            ),
            pytest.param(
                {"every": "1m", "timeout": "1m"},
                "1s",
                "at most 0s",
                id="a-timeout-as-long-as-the-period-leaves-no-lead",
            ),
            pytest.param(
                {"schedule": "*/5 * * * *", "timeout": "1m"},
                "4m1s",
                "4m1s is more than the 5m between two slots (the shortest gap in a sample of "
                "the cron schedule's slots, as for jitter) less spec.timeout (1m): at most 4m",
                id="cron-just-past",
            ),
            pytest.param(
                {"schedule": "0 9,10 * * *", "timeout": "10m"},
                "51m",
                "the 1h between two slots",
                id="cron-measured-at-its-shortest-gap-not-its-longest",
            ),
        ],
    )
    def test_a_longer_one_is_refused_at_the_lead(
        self, spec: dict[str, Any], lead: str, words: str
    ) -> None:
        error = refused(warm_start={"lead": lead}, **spec)

        assert error.field == LEAD
        assert words in error.problem

    @pytest.mark.parametrize(
        ("warm_start", "field"),
        [
            pytest.param({"lead": "0s"}, LEAD, id="zero"),
            pytest.param({"lead": "-5s"}, LEAD, id="negative"),
            pytest.param({"lead": "30"}, LEAD, id="no-unit"),
            pytest.param({}, LEAD, id="missing"),
            pytest.param({"lead": "30s", "mode": "Warm"}, "spec.target.job.warmStart.mode"),
            pytest.param({"lead": "30s", "gateImage": ""}, "spec.target.job.warmStart.gateImage"),
            pytest.param({"lead": "30s", "image": "x"}, "spec.target.job.warmStart.image"),
        ],
    )
    def test_a_malformed_warm_start_is_refused_naming_its_field(
        self, warm_start: dict[str, Any], field: str
    ) -> None:
        assert refused(warm_start=warm_start, timeout="20s").field == field


class TestQueueCannotGoWithAWarmStart:
    @pytest.mark.parametrize("policy", ["Forbid", "Allow", "Replace"])
    def test_the_other_policies_are_accepted(self, policy: str) -> None:
        accepted = plan(warm_start={"lead": "30s"}, timeout="20s", concurrencyPolicy=policy)

        assert accepted.warm_lead == timedelta(seconds=30)

    def test_queue_is_refused_at_the_policy_saying_why(self) -> None:
        error = refused(
            warm_start={"lead": "30s"}, timeout="20s", concurrencyPolicy="Queue", maxQueued=2
        )

        assert error.field == "spec.concurrencyPolicy"
        assert "Queue cannot go with spec.target.job.warmStart" in error.problem
        assert "would hold back the slot queued before it" in error.problem

    def test_queue_without_a_warm_start_is_accepted(self) -> None:
        assert plan(warm_start=None, timeout="20s", concurrencyPolicy="Queue").warm_lead is None


NO_COMMAND = {"name": "report", "image": "registry.example/report:1"}
SETUP = {"name": "setup", "image": "registry.example/setup:1", "command": ["/setup"]}
PROXY = {"name": "proxy", "image": "registry.example/proxy:1", "restartPolicy": "Always"}


class TestExecHoldsOnlyContainersWithACommand:
    @pytest.mark.parametrize(
        ("pod_spec", "field"),
        [
            pytest.param(
                {"containers": [NO_COMMAND]}, f"{POD_SPEC}.containers[0].command", id="main"
            ),
            pytest.param(
                {"containers": [REPORT, {**NO_COMMAND, "name": "second"}]},
                f"{POD_SPEC}.containers[1].command",
                id="the-second-of-several",
            ),
            pytest.param(
                {"containers": [{**REPORT, "command": []}]},
                f"{POD_SPEC}.containers[0].command",
                id="an-empty-command",
            ),
            pytest.param(
                {"initContainers": [{**SETUP, "command": None}]},
                f"{POD_SPEC}.initContainers[0].command",
                id="the-first-init-container-holds-the-rest",
            ),
            pytest.param(
                {"initContainers": [PROXY, SETUP]},
                f"{POD_SPEC}.initContainers[0].command",
                id="a-sidecar-before-it-starts-without-waiting",
            ),
            pytest.param(
                {"containers": [{**REPORT, "livenessProbe": {"exec": {"command": ["true"]}}}]},
                f"{POD_SPEC}.containers[0].livenessProbe",
                id="a-liveness-probe-would-fail-at-the-gate",
            ),
            pytest.param(
                {"containers": [{**REPORT, "startupProbe": {"exec": {"command": ["true"]}}}]},
                f"{POD_SPEC}.containers[0].startupProbe",
                id="a-startup-probe-would-fail-at-the-gate",
            ),
            pytest.param(
                {"containers": [{**REPORT, "lifecycle": {"postStart": {"exec": {}}}}]},
                f"{POD_SPEC}.containers[0].lifecycle.postStart",
                id="a-post-start-hook-would-run-before-the-slot",
            ),
        ],
    )
    def test_a_held_container_that_cannot_be_is_refused(
        self, pod_spec: dict[str, Any], field: str
    ) -> None:
        error = refused(
            warm_start={"lead": "30s", "mode": "Exec"},
            template=job_template(**pod_spec),
            timeout="20s",
        )

        assert error.field == field
        assert "mode Init or Auto" in error.problem

    @pytest.mark.parametrize(
        "pod_spec",
        [
            pytest.param({"containers": [REPORT]}, id="a-command"),
            pytest.param(
                {"initContainers": [SETUP], "containers": [NO_COMMAND]},
                id="main-containers-wait-for-a-held-init-container",
            ),
            pytest.param(
                {"initContainers": [SETUP, {**PROXY, "command": None}]},
                id="so-do-sidecars-after-it",
            ),
            pytest.param(
                {"containers": [{**REPORT, "readinessProbe": {"exec": {"command": ["true"]}}}]},
                id="a-readiness-probe-holds-nothing-back",
            ),
        ],
    )
    def test_what_it_does_not_hold_needs_none(self, pod_spec: dict[str, Any]) -> None:
        template = job_template(**pod_spec)

        assert plan(warm_start={"lead": "30s", "mode": "Exec"}, template=template, timeout="20s")

    @pytest.mark.parametrize("mode", ["Init", "Auto"])
    def test_init_and_auto_hold_any_container(self, mode: str) -> None:
        template = job_template(containers=[NO_COMMAND], initContainers=[PROXY])

        assert plan(warm_start={"lead": "30s", "mode": mode}, template=template, timeout="20s")


class TestWarmStartsNamesAreReserved:
    @pytest.mark.parametrize(
        ("pod_spec", "field"),
        [
            pytest.param(
                {"containers": [{**REPORT, "name": "punctual-gate"}]},
                f"{POD_SPEC}.containers[0].name",
                id="the-gate",
            ),
            pytest.param(
                {"initContainers": [{**SETUP, "name": "punctual-pull-0"}]},
                f"{POD_SPEC}.initContainers[0].name",
                id="a-pull",
            ),
            pytest.param(
                {"initContainers": [{**SETUP, "name": "punctual-pull-mine"}]},
                f"{POD_SPEC}.initContainers[0].name",
                id="any-name-of-the-pulls",
            ),
            pytest.param(
                {"containers": [REPORT, {**REPORT, "name": "punctual-release"}]},
                f"{POD_SPEC}.containers[1].name",
                id="the-release",
            ),
            pytest.param(
                {"volumes": [{"name": "data"}, {"name": "punctual-gate", "emptyDir": {}}]},
                f"{POD_SPEC}.volumes[1].name",
                id="the-gates-volume",
            ),
            pytest.param(
                {"containers": [{**REPORT, "volumeMounts": [{"mountPath": "/punctual-gate/"}]}]},
                f"{POD_SPEC}.containers[0].volumeMounts[0].mountPath",
                id="the-gates-directory",
            ),
            pytest.param(
                {"containers": [{**REPORT, "volumeMounts": [{"mountPath": "/punctual-gate/x"}]}]},
                f"{POD_SPEC}.containers[0].volumeMounts[0].mountPath",
                id="under-the-gates-directory",
            ),
        ],
    )
    def test_a_template_using_one_is_refused_naming_it(
        self, pod_spec: dict[str, Any], field: str
    ) -> None:
        error = refused(
            warm_start={"lead": "30s"}, template=job_template(**pod_spec), timeout="20s"
        )

        assert error.field == field

    def test_names_alike_are_not_ours(self) -> None:
        template = job_template(
            containers=[{**REPORT, "name": "punctual-gateway"}],
            volumes=[{"name": "punctual-pull"}],
            initContainers=[
                {**SETUP, "volumeMounts": [{"name": "data", "mountPath": "/punctual-gates"}]}
            ],
        )

        assert plan(warm_start={"lead": "30s"}, template=template, timeout="20s")

    def test_they_are_free_without_a_warm_start(self) -> None:
        template = job_template(containers=[{**REPORT, "name": "punctual-gate"}])

        assert plan(warm_start=None, template=template)


class TestAMalformedTemplateIsLeftToTheApiServer:
    @pytest.mark.parametrize(
        "template",
        [
            pytest.param({"spec": {"template": {"spec": {"containers": "report"}}}}, id="string"),
            pytest.param({"spec": {"template": {"spec": {"containers": [7]}}}}, id="no-object"),
            pytest.param({"spec": {"template": []}}, id="no-pod-template"),
        ],
    )
    def test_its_shape_is_not_the_warm_starts_to_judge(self, template: dict[str, Any]) -> None:
        assert plan(warm_start={"lead": "30s"}, template=template, timeout="20s")
