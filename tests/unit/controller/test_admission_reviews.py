"""The webhook's reviews: only within the review's own namespace; the reconciler's check
refuses, a job target's Job is dry-run, and what is not the spec's business (metadata changes,
objects being deleted) is never checked; answers are bounded."""

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import kopf
import pytest

from punctual.api import spec_bounds
from punctual.controller import admission, handlers
from punctual.replica import settings as replica_settings
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


def review_request(
    namespace: str | None, *, of: str | None, before: str | None = None, update: bool = False
) -> dict[str, Any]:
    """An AdmissionReview's ``request`` for ``namespace`` whose object is of namespace ``of``
    (and, with ``update``, whose object before is of ``before``); ``None``: the field left out."""
    request: dict[str, Any] = {"uid": "r-1", "operation": "UPDATE" if update else "CREATE"}
    if namespace is not None:
        request["namespace"] = namespace
    request["object"] = scheduled_job({"every": "1h", "target": JOB}, namespace=of)
    if of is None:
        del request["object"]["metadata"]["namespace"]
    if update:
        request["oldObject"] = scheduled_job({"every": "1h", "target": JOB}, namespace=before)
        if before is None:
            del request["oldObject"]["metadata"]["namespace"]
    return request


class TestTheNamespaceUnderReview:
    @pytest.mark.parametrize(
        ("request_namespace", "object_namespace", "before", "update"),
        [
            ("tenant-a", "tenant-a", None, False),
            ("tenant-a", "tenant-a", "tenant-a", True),
        ],
        ids=["create", "update"],
    )
    def test_a_review_whose_objects_are_of_its_namespace_is_for_that_namespace(
        self, request_namespace: str, object_namespace: str, before: str | None, update: bool
    ) -> None:
        request = review_request(
            request_namespace, of=object_namespace, before=before, update=update
        )

        assert admission.namespace_under_review(request) == "tenant-a"

    @pytest.mark.parametrize(
        ("request_namespace", "object_namespace", "before", "update", "field"),
        [
            ("tenant-a", "tenant-b", None, False, "request.object.metadata.namespace"),
            ("tenant-a", "kube-system", None, False, "request.object.metadata.namespace"),
            ("tenant-a", None, None, False, "request.object.metadata.namespace"),
            ("tenant-a", "", None, False, "request.object.metadata.namespace"),
            ("tenant-a", "tenant-a", "tenant-b", True, "request.oldObject.metadata.namespace"),
            ("tenant-a", "tenant-a", None, True, "request.oldObject.metadata.namespace"),
            ("kube-system", "tenant-a", None, False, "request.object.metadata.namespace"),
            (None, "tenant-a", None, False, "request.namespace"),
            ("", "tenant-a", None, False, "request.namespace"),
            (None, None, None, False, "request.namespace"),
        ],
        ids=[
            "an object of another namespace",
            "an object of kube-system",
            "an object without a namespace",
            "an object of the empty namespace",
            "an object before of another namespace",
            "an object before without a namespace",
            "a review for kube-system of another namespace's object",
            "a review without a namespace (cluster-scoped)",
            "a review of the empty namespace",
            "nothing namespaced at all",
        ],
    )
    def test_any_other_review_is_refused_naming_the_field(
        self,
        request_namespace: str | None,
        object_namespace: str | None,
        before: str | None,
        update: bool,
        field: str,
    ) -> None:
        request = review_request(
            request_namespace, of=object_namespace, before=before, update=update
        )

        with pytest.raises(InvalidSpecError) as refused:
            admission.namespace_under_review(request)

        assert refused.value.field == field

    @pytest.mark.parametrize(
        "payload",
        [{}, {"namespace": "a", "object": "x"}, {"namespace": "a", "object": {"metadata": []}}],
        ids=["empty", "an object that is not one", "metadata that is not a mapping"],
    )
    def test_a_malformed_review_is_refused(self, payload: dict[str, Any]) -> None:
        with pytest.raises(InvalidSpecError):
            admission.namespace_under_review(payload)


class KopfReviews:
    """kopf's webhook function: records the reviews it is given."""

    def __init__(self) -> None:
        self.served: list[Any] = []

    async def __call__(self, request: Any, **_: Any) -> Any:
        self.served.append(request)
        return {"response": {"allowed": True}}


class TestTheServer:
    async def test_a_review_within_its_namespace_reaches_kopf(self) -> None:
        kopf_reviews = KopfReviews()
        review = {"apiVersion": "admission.k8s.io/v1", "request": review_request("a", of="a")}

        answer = await handlers.NamespaceBound(kopf_reviews)(review, webhook="w")

        assert kopf_reviews.served == [review]
        assert answer == {"response": {"allowed": True}}

    async def test_a_review_of_another_namespace_is_refused_before_kopf_sees_it(self) -> None:
        kopf_reviews = KopfReviews()
        review = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": review_request("tenant-a", of="tenant-b"),
        }

        answer = await handlers.NamespaceBound(kopf_reviews)(review, webhook="w")

        assert kopf_reviews.served == []
        assert answer == {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {
                "uid": "r-1",
                "allowed": False,
                "status": {
                    "code": 403,
                    "message": "request.object.metadata.namespace: not the namespace of the review",
                },
            },
        }

    @pytest.mark.parametrize("review", [None, [], {"apiVersion": "x", "request": "y"}])
    async def test_a_review_that_is_not_one_is_refused(self, review: Any) -> None:
        kopf_reviews = KopfReviews()

        answer = await handlers.NamespaceBound(kopf_reviews)(review)

        assert kopf_reviews.served == []
        assert answer["apiVersion"] == "admission.k8s.io/v1"
        assert answer["response"]["allowed"] is False


class TestTheCheck:
    async def test_a_spec_the_operator_calls_invalid_is_refused_with_its_words(self) -> None:
        body = scheduled_job({"schedule": "61 * * * *", "target": HTTP})

        with pytest.raises(InvalidSpecError, match=r"^spec\.schedule: minute field '61'"):
            await reviews().review(operation="CREATE", body=body, old=None)

    async def test_a_schedule_that_never_fires_is_refused_naming_spec_schedule(self) -> None:
        never = {
            "schedule": "30 2 * 3 0L",
            "timeZone": "Europe/Berlin",
            "dst": {"nonexistent": "Skip"},
        }
        body = scheduled_job({**never, "target": HTTP})

        with pytest.raises(InvalidSpecError, match=r"^spec\.schedule: .* no slot in the next 10"):
            await reviews().review(operation="CREATE", body=body, old=None)

    async def test_a_valid_spec_is_admitted_without_warnings(self) -> None:
        body = scheduled_job({"schedule": "0 3 * * *", "target": HTTP})

        assert await reviews().review(operation="CREATE", body=body, old=None) == []

    async def test_a_schedule_faster_than_the_platform_allows_is_refused(self) -> None:
        body = scheduled_job({"every": "1ms", "target": HTTP})

        with pytest.raises(InvalidSpecError, match=r"^spec\.every: slots 1ms apart: .*1s"):
            await reviews().review(operation="CREATE", body=body, old=None)

    async def test_the_platform_s_bounds_are_the_ones_checked(self) -> None:
        lowered = spec_bounds.Bounds(min_period=timedelta(milliseconds=1))
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


class TestTheAnswersBounds:
    async def test_a_refusal_quoting_a_long_spec_is_cut(self) -> None:
        body = scheduled_job({"schedule": "0 3 * * *", "timeZone": "Z" * 5000, "target": HTTP})
        registry = kopf.OperatorRegistry()
        handlers.register_admission(registry, reviews())
        [handler] = registry._webhooks.get_all_handlers()

        with pytest.raises(kopf.AdmissionError) as refused:
            await handler.fn(body=body, warnings=[], operation="CREATE", old=None)

        assert len(str(refused.value)) == admission.ANSWER_LIMIT
        assert str(refused.value).startswith("spec.timeZone: ")
        assert str(refused.value).endswith("...")

    @pytest.mark.parametrize("length", [0, 1, admission.ANSWER_LIMIT])
    def test_an_answer_within_the_bound_is_left_whole(self, length: int) -> None:
        assert admission.bounded("a" * length) == "a" * length


def test_a_webhook_port_needs_a_certificate() -> None:
    with pytest.raises(InvalidSpecError, match=r"^--webhook-cert-dir: required with --webhook"):
        replica_settings.ReplicaSettings(replica_id="r1", webhook_port=9443)


def test_a_client_ca_needs_a_webhook(tmp_path: Path) -> None:
    with pytest.raises(InvalidSpecError, match=r"^--webhook-client-ca: only with --webhook-port"):
        replica_settings.ReplicaSettings(replica_id="r1", webhook_client_ca=tmp_path / "ca.crt")
