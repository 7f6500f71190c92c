"""The webhook's dry run of a job target's Job: the API server's verdict on the Job, told as the
ScheduledJob's fields; only the template's faults refuse, the moment's are warnings."""

import asyncio
import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from punctual.api import job_models
from punctual.scheduling import slots
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets.job import dry_run, manifests, requests, warm

OWNER = slots.JobRef(namespace="reports", name="nightly", uid="5f0c1d2e-0000-4000-8000-0000000a")
SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
TEMPLATE = {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}


class DryRuns:
    """Answers every dry run with ``answer``; raises ``error`` instead, or never answers."""

    def __init__(
        self,
        answer: tuple[int, dict[str, Any]] = (201, {}),
        *,
        error: Exception | None = None,
        hang: bool = False,
    ) -> None:
        self.answer, self.error, self.hang = answer, error, hang
        self.sent: list[manifests.BatchJobRequest] = []

    async def dry_run(self, request: manifests.BatchJobRequest) -> tuple[int, dict[str, Any]]:
        self.sent.append(request)
        if self.hang:
            await asyncio.Event().wait()
        if self.error is not None:
            raise self.error
        return self.answer


async def check(
    api: DryRuns,
    *,
    template: dict[str, Any] = TEMPLATE,
    warm_start: job_models.WarmStart | None = None,
    gate_image: str | None = None,
) -> str | None:
    return await dry_run.check(
        api,  # type: ignore[arg-type]
        owner=OWNER,
        template=template,
        active_deadline=timedelta(minutes=5),
        slot=SLOT,
        warm_start=warm_start,
        gate_image=gate_image,
    )


def invalid(*causes: tuple[str, str]) -> tuple[int, dict[str, Any]]:
    return 422, {
        "kind": "Status",
        "reason": "Invalid",
        "message": "Job.batch is invalid",
        "details": {"causes": [{"field": field, "message": message} for field, message in causes]},
    }


class TestTheJobSent:
    async def test_it_is_the_job_the_executor_would_create_at_the_slot(self) -> None:
        api = DryRuns()

        assert await check(api) is None

        [sent] = api.sent
        job = json.loads(sent.body)
        assert (sent.namespace, sent.name) == ("reports", f"nightly-{int(SLOT.timestamp())}")
        assert job["metadata"]["ownerReferences"][0]["uid"] == OWNER.uid
        assert job["metadata"]["annotations"][manifests.SLOT_ID_ANNOTATION] == slots.slot_id(
            OWNER, SLOT
        )
        job_annotations = dict(job["metadata"]["annotations"])
        # CronJob's own annotation is on the Job only, as CronJob writes it.
        del job_annotations[manifests.CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION]
        assert job["spec"]["template"]["metadata"]["annotations"] == job_annotations
        del job["spec"]["template"]["metadata"]
        assert job["spec"] == {**TEMPLATE["spec"], "activeDeadlineSeconds": 300}


class TestRefusals:
    @pytest.mark.parametrize(
        ("field", "path"),
        [
            (
                "spec.template.spec.containers[0].image",
                "spec.target.job.template.spec.template.spec.containers[0].image",
            ),
            ("metadata.labels", "spec.target.job.template.metadata.labels"),
            ("metadata.name", "metadata.name"),
            ("metadata.namespace", "spec.target.job.template"),
            ("metadata.ownerReferences[0].uid", "spec.target.job.template"),
            ("", "spec.target.job.template"),
        ],
    )
    async def test_a_field_of_the_job_is_named_as_the_scheduled_job_field(
        self, field: str, path: str
    ) -> None:
        with pytest.raises(InvalidSpecError) as refused:
            await check(DryRuns(invalid((field, "Required value"))))

        assert (refused.value.field, refused.value.problem) == (path, "Required value")

    async def test_further_problems_are_counted(self) -> None:
        answer = invalid(
            ("spec.parallelism", "must be >= 0"), ("spec.completions", "bad"), ("", "x")
        )

        with pytest.raises(InvalidSpecError, match=r"must be >= 0 \(and 2 more problems\)$"):
            await check(DryRuns(answer))

    async def test_a_job_that_does_not_decode_is_refused_in_the_api_servers_words(self) -> None:
        answer = (400, {"reason": "BadRequest", "message": "cannot unmarshal string into int32"})

        with pytest.raises(InvalidSpecError) as refused:
            await check(DryRuns(answer))

        assert str(refused.value) == "spec.target.job.template: cannot unmarshal string into int32"

    async def test_the_api_servers_words_are_cut_short(self) -> None:
        with pytest.raises(InvalidSpecError) as refused:
            await check(DryRuns(invalid(("spec.x", "v" * 10_000))))

        assert len(refused.value.problem) == 300
        assert refused.value.problem.endswith("...")


class TestWarnings:
    async def test_a_refusal_of_the_moment_admits_with_a_warning(self) -> None:
        answer = (403, {"reason": "Forbidden", "message": "exceeded quota: jobs"})

        warning = await check(DryRuns(answer))

        assert warning == (
            "spec.target.job.template: not checked, the dry run of its Job was answered "
            "HTTP 403 Forbidden: exceeded quota: jobs"
        )

    async def test_no_answer_admits_with_a_warning(self) -> None:
        api = DryRuns(error=requests.BatchJobApiError("a dry run of Job x: ConnectionResetError"))

        assert await check(api) == (
            "spec.target.job.template: not checked (a dry run of Job x: ConnectionResetError)"
        )

    @pytest.mark.looptime
    async def test_a_dry_run_is_given_up_after_its_timeout(self) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()

        warning = await check(DryRuns(hang=True))

        assert loop.time() - started == pytest.approx(dry_run.TIMEOUT.total_seconds())
        assert warning == (
            "spec.target.job.template: not checked, the dry run of its Job took longer than 5s"
        )


WARM_TEMPLATE = {
    "spec": {
        "template": {
            "spec": {
                "initContainers": [{"name": "setup", "image": "setup", "command": ["/setup"]}],
                "containers": [{"name": "c", "image": "c"}],
            }
        }
    }
}
WARM_START = job_models.WarmStart(lead="30s", mode=job_models.WarmStartMode.INIT)


class TestAWarmStartsJob:
    async def test_is_dry_run_as_it_will_be_armed(self) -> None:
        api = DryRuns()

        await check(api, template=WARM_TEMPLATE, warm_start=WARM_START, gate_image="gate:1")

        [sent] = api.sent
        job = json.loads(sent.body)
        armed = warm.rewrite(
            WARM_TEMPLATE,
            release_at=SLOT + timedelta(seconds=30),
            mode=job_models.WarmStartMode.INIT,
            gate_image="gate:1",
        ).template
        assert (
            job["metadata"]["annotations"][warm.RELEASE_AT_ANNOTATION]
            == (armed["metadata"]["annotations"][warm.RELEASE_AT_ANNOTATION])
        )
        del job["spec"]["template"]["metadata"]
        assert job["spec"] == {**armed["spec"], "activeDeadlineSeconds": 330}

    @pytest.mark.parametrize(
        ("templates", "deadline"),
        [
            pytest.param(None, 330, id="the-timeout-and-the-lead"),
            pytest.param(60, 90, id="its-own-and-the-lead"),
            pytest.param(3600, 330, id="longer-than-the-timeout"),
        ],
    )
    async def test_with_the_deadline_it_will_be_armed_with(
        self, templates: int | None, deadline: int
    ) -> None:
        api = DryRuns()
        template = copy.deepcopy(WARM_TEMPLATE)
        if templates is not None:
            template["spec"]["activeDeadlineSeconds"] = templates

        await check(api, template=template, warm_start=WARM_START, gate_image="gate:1")

        [sent] = api.sent
        assert json.loads(sent.body)["spec"]["activeDeadlineSeconds"] == deadline

    async def test_a_cold_jobs_own_deadline_is_not_lengthened(self) -> None:
        api = DryRuns()
        template = copy.deepcopy(TEMPLATE)
        template["spec"]["activeDeadlineSeconds"] = 60

        await check(api, template=template)

        [sent] = api.sent
        assert json.loads(sent.body)["spec"]["activeDeadlineSeconds"] == 60

    @pytest.mark.parametrize(
        ("given", "operators", "used"),
        [
            pytest.param("mine:2", "gate:1", "mine:2", id="the-scheduled-jobs-own"),
            pytest.param(None, "gate:1", "gate:1", id="else-the-operators"),
            pytest.param(None, None, "punctual-gate", id="else-its-bare-name"),
        ],
    )
    async def test_with_the_gate_image_it_will_pull(
        self, given: str | None, operators: str | None, used: str
    ) -> None:
        api = DryRuns()
        warm_start = WARM_START.model_copy(update={"gate_image": given})

        await check(api, template=WARM_TEMPLATE, warm_start=warm_start, gate_image=operators)

        job = json.loads(api.sent[0].body)
        assert job["spec"]["template"]["spec"]["initContainers"][0]["image"] == used

    @pytest.mark.parametrize(
        ("field", "path", "problem"),
        [
            pytest.param(
                "spec.template.spec.initContainers[0].image",
                "spec.target.job.warmStart",
                "the warm start's punctual-gate init container (initContainers[0].image): bad",
                id="the-gates-own-container",
            ),
            pytest.param(
                "spec.template.spec.initContainers[2].resources.limits",
                "spec.target.job.warmStart",
                "the warm start's punctual-release init container "
                "(initContainers[2].resources.limits): bad",
                id="its-release",
            ),
            pytest.param(
                "spec.template.spec.initContainers[3].image",
                "spec.target.job.template.spec.template.spec.initContainers[0].image",
                "bad",
                id="the-users-init-container-at-its-own-index",
            ),
            pytest.param(
                "spec.template.spec.containers[0].image",
                "spec.target.job.template.spec.template.spec.containers[0].image",
                "bad",
                id="a-main-container-as-before",
            ),
        ],
    )
    async def test_refusals_name_the_field_users_wrote(
        self, field: str, path: str, problem: str
    ) -> None:
        # Ours: punctual-gate, punctual-pull-0 (setup), punctual-pull-1 (c), punctual-release.
        template = copy.deepcopy(WARM_TEMPLATE)
        template["spec"]["template"]["spec"]["containers"][0]["image"] = "setup"

        with pytest.raises(InvalidSpecError) as refused:
            await check(DryRuns(invalid((field, "bad"))), template=template, warm_start=WARM_START)

        assert (refused.value.field, refused.value.problem) == (path, problem)
