"""The webhook's reviews: the reconciler's check refuses, a job target's Job is dry-run, and
what is not the spec's business (metadata changes, objects being deleted) is never checked."""

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from punctual import replica
from punctual.api import planning
from punctual.controller import admission, handlers
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets.job import manifests

NOW = datetime(2026, 12, 1, 9, 15, 30, 123456, tzinfo=UTC)
HTTP = {"http": {"url": "http://127.0.0.1:8080/run"}}
JOB = {"job": {"template": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}}}


def scheduled_job(spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "reports", "name": "nightly", "uid": "u-1", **metadata},
        "spec": spec,
    }


class DryRuns:
    def __init__(self, answer: tuple[int, dict[str, Any]] = (201, {})) -> None:
        self.answer = answer
        self.sent: list[manifests.BatchJobRequest] = []

    async def dry_run(self, request: manifests.BatchJobRequest) -> tuple[int, dict[str, Any]]:
        self.sent.append(request)
        return self.answer


def reviews(dry_runs: DryRuns | None = None) -> admission.Admission:
    return admission.Admission(batch_jobs=dry_runs, wall=lambda: NOW)  # type: ignore[arg-type]


class TestTheCheck:
    async def test_a_spec_the_operator_calls_invalid_is_refused_with_its_words(self) -> None:
        body = scheduled_job({"schedule": "61 * * * *", "target": HTTP})

        with pytest.raises(InvalidSpecError, match=r"^spec\.schedule: minute field '61'"):
            await reviews().review(operation="CREATE", body=body, old=None)

    async def test_a_valid_spec_is_admitted_without_warnings(self) -> None:
        body = scheduled_job({"schedule": "0 3 * * *", "target": HTTP})

        assert await reviews().review(operation="CREATE", body=body, old=None) == []

    async def test_a_schedule_faster_than_the_platform_allows_is_refused(self) -> None:
        body = scheduled_job({"every": "1ms", "target": HTTP})

        with pytest.raises(InvalidSpecError, match=r"^spec\.every: slots 1ms apart: .*1s"):
            await reviews().review(operation="CREATE", body=body, old=None)

    async def test_the_platform_s_bounds_are_the_ones_checked(self) -> None:
        lowered = planning.Bounds(min_period=timedelta(milliseconds=1))
        checking = admission.Admission(batch_jobs=None, wall=lambda: NOW, bounds=lowered)
        body = scheduled_job({"every": "1ms", "target": HTTP})

        assert await checking.review(operation="CREATE", body=body, old=None) == []

    async def test_a_changed_spec_is_checked_on_update(self) -> None:
        old = scheduled_job({"schedule": "0 3 * * *", "target": HTTP})
        body = scheduled_job({"schedule": "0 3 * * *", "timeZone": "Nowhere", "target": HTTP})

        with pytest.raises(InvalidSpecError, match=r"^spec\.timeZone: "):
            await reviews().review(operation="UPDATE", body=body, old=old)


class TestWhatIsNeverChecked:
    async def test_an_update_that_leaves_the_spec_alone_is_admitted_whatever_the_spec(
        self,
    ) -> None:
        invalid = {"schedule": "61 * * * *", "target": HTTP}
        body = scheduled_job(invalid, annotations={"team": "a"})

        found = await reviews().review(operation="UPDATE", body=body, old=scheduled_job(invalid))

        assert found == []

    async def test_an_object_being_deleted_is_admitted_whatever_the_spec(self) -> None:
        body = scheduled_job(
            {"schedule": "61 * * * *", "target": HTTP}, deletionTimestamp="2026-12-01T09:00:00Z"
        )

        assert await reviews().review(operation="UPDATE", body=body, old=None) == []


class TestTheJobTarget:
    async def test_the_job_of_the_current_second_is_dry_run_for_the_object(self) -> None:
        dry_runs = DryRuns()

        await reviews(dry_runs).review(
            operation="CREATE", body=scheduled_job({"every": "1h", "target": JOB}), old=None
        )

        [sent] = dry_runs.sent
        assert (sent.namespace, sent.name) == ("reports", f"nightly-{int(NOW.timestamp())}")

    async def test_the_api_servers_refusal_refuses_the_scheduled_job(self) -> None:
        cause = {"field": "spec.template.spec.containers[0].image", "message": "Required value"}
        dry_runs = DryRuns((422, {"details": {"causes": [cause]}}))
        body = scheduled_job({"every": "1h", "target": JOB})

        with pytest.raises(InvalidSpecError) as refused:
            await reviews(dry_runs).review(operation="CREATE", body=body, old=None)

        assert str(refused.value) == (
            "spec.target.job.template.spec.template.spec.containers[0].image: Required value"
        )

    async def test_a_dry_run_that_could_not_say_is_a_warning(self) -> None:
        dry_runs = DryRuns((503, {"reason": "ServiceUnavailable"}))
        body = scheduled_job({"every": "1h", "target": JOB})

        [warning] = await reviews(dry_runs).review(operation="CREATE", body=body, old=None)

        assert warning.startswith("spec.target.job.template: not checked")

    async def test_without_the_jobs_api_there_is_no_dry_run(self) -> None:
        body = scheduled_job({"every": "1h", "target": JOB})

        assert await reviews(None).review(operation="CREATE", body=body, old=None) == []


class TestTheOperatorsLog:
    def test_a_refusal_is_logged_at_info_not_as_an_error(self) -> None:
        text = f"Webhook {admission.WEBHOOK_ID!r} failed permanently: spec.schedule: bad"
        record = logging.LogRecord("kopf.objects", logging.ERROR, __file__, 1, text, (), None)

        assert handlers.RefusalsAreNotErrors().filter(record)

        assert (record.levelname, record.getMessage()) == ("INFO", "refused: spec.schedule: bad")

    def test_other_errors_stay_errors(self) -> None:
        text = "Handler 'scheduled_job_event' failed permanently: boom"
        record = logging.LogRecord("kopf.objects", logging.ERROR, __file__, 1, text, (), None)

        assert handlers.RefusalsAreNotErrors().filter(record)

        assert (record.levelname, record.getMessage()) == ("ERROR", text)


def test_a_webhook_port_needs_a_certificate() -> None:
    with pytest.raises(InvalidSpecError, match=r"^--webhook-cert-dir: required with --webhook"):
        replica.ReplicaSettings(replica_id="r1", webhook_port=9443)
