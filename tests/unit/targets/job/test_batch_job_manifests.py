"""The Job of one slot: its name, labels, annotations, owner, deadline; and how Jobs end."""

import copy
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from punctual.scheduling import slots, timeline
from punctual.targets.job import manifests, states

OWNER = slots.JobRef(
    namespace="reports", name="nightly", uid="5f0c1d2e-0000-4000-8000-00000000000a"
)
SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
SLOT_SECONDS = 1796002200
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"team": "reports"}, "annotations": {"owner": "ops"}},
    "spec": {
        "backoffLimit": 0,
        "template": {
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
        },
    },
}


def manifest(
    template: dict[str, Any] = TEMPLATE,
    *,
    owner: slots.JobRef = OWNER,
    deadline: timedelta = timedelta(minutes=10),
    scheduled: datetime = SLOT,
    lead: timedelta = timedelta(),
) -> dict[str, Any]:
    return manifests.batch_job_manifest(
        template,
        owner=owner,
        slot=SLOT,
        slot_id=slots.slot_id(owner, SLOT),
        scheduled_time=scheduled,
        active_deadline=deadline,
        lead=lead,
    )


class TestTheJobName:
    def test_is_the_name_and_the_unix_seconds_of_the_slot(self) -> None:
        assert manifests.batch_job_name("nightly", SLOT) == f"nightly-{SLOT_SECONDS}"

    def test_ignores_milliseconds_of_the_slot(self) -> None:
        assert manifests.batch_job_name("nightly", SLOT + timedelta(milliseconds=250)) == (
            f"nightly-{SLOT_SECONDS}"
        )

    def test_keeps_a_52_character_name_whole(self) -> None:
        name = "a" * 52

        assert manifests.batch_job_name(name, SLOT) == f"{name}-{SLOT_SECONDS}"

    @pytest.mark.parametrize(
        "name",
        [
            "a" * 53,
            "x" * 253,
            "report-" * 30 + "z",
            "a" * 42 + "-" + "b" * 20,  # the cut falls just after a dash
            "a" * 42 + "." + "b" * 20,  # or a dot
        ],
    )
    def test_shortens_a_longer_name_to_52_characters_with_a_hash(self, name: str) -> None:
        job_name = manifests.batch_job_name(name, SLOT)
        base = manifests.base_name(name)

        assert len(base) <= 52
        assert len(job_name) <= 63  # fits a label value: the pods' job-name label
        assert job_name == f"{base}-{SLOT_SECONDS}"
        assert re.fullmatch(r"[a-z0-9.-]*[a-z0-9]-[0-9a-f]{8}", base)

    def test_the_short_form_is_stable_and_tells_apart_names_with_a_long_common_prefix(
        self,
    ) -> None:
        first, second = "a" * 60 + "-first", "a" * 60 + "-second"

        assert manifests.base_name(first) == manifests.base_name(first)
        assert manifests.base_name(first) != manifests.base_name(second)


class TestTheManifest:
    def test_is_a_batch_v1_job_in_the_owners_namespace_named_after_the_slot(self) -> None:
        job = manifest()

        assert job["apiVersion"] == "batch/v1"
        assert job["kind"] == "Job"
        assert job["metadata"]["name"] == f"nightly-{SLOT_SECONDS}"
        assert job["metadata"]["namespace"] == "reports"

    def test_is_labelled_with_the_scheduled_job_beside_the_templates_labels(self) -> None:
        labels = manifest()["metadata"]["labels"]

        assert labels == {"team": "reports", "punctual.dev/scheduled-job": "nightly"}

    def test_a_name_too_long_for_a_label_value_is_labelled_by_its_short_form(self) -> None:
        owner = slots.JobRef(namespace="reports", name="n" * 80, uid=OWNER.uid)

        label = manifest(owner=owner)["metadata"]["labels"]["punctual.dev/scheduled-job"]

        assert label == manifests.base_name("n" * 80)

    def test_is_annotated_with_the_scheduled_time_the_slot_id_and_cronjobs_timestamp(
        self,
    ) -> None:
        """CronJob's ``cronjob-scheduled-timestamp`` is the slot (no jitter), RFC 3339, on the
        Job only: tooling written for CronJob's Jobs reads it unchanged."""
        jittered = SLOT + timedelta(seconds=7, milliseconds=250)

        job = manifest(scheduled=jittered)

        assert job["metadata"]["annotations"] == {
            "owner": "ops",
            "punctual.dev/scheduled-time": "2026-11-30T01:30:07.250Z",
            "punctual.dev/slot-id": f"reports/nightly/{OWNER.uid}/{SLOT_SECONDS * 1000}",
            "batch.kubernetes.io/cronjob-scheduled-timestamp": "2026-11-30T01:30:00Z",
        }
        pod_annotations = job["spec"]["template"]["metadata"]["annotations"]
        assert "batch.kubernetes.io/cronjob-scheduled-timestamp" not in pod_annotations

    def test_cronjobs_timestamp_reads_back_as_the_slot_in_rfc_3339(self) -> None:
        stamp = manifest()["metadata"]["annotations"][
            manifests.CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION
        ]

        assert timeline.parse_rfc3339(stamp) == SLOT
        assert stamp.endswith("Z")  # an offset, as RFC 3339 (and Go's time.RFC3339) requires

    def test_is_owned_by_the_scheduled_job_as_its_controller_without_blocking_deletion(
        self,
    ) -> None:
        assert manifest()["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "punctual.dev/v1alpha1",
                "kind": "ScheduledJob",
                "name": "nightly",
                "uid": OWNER.uid,
                "controller": True,
                "blockOwnerDeletion": False,
            }
        ]

    def test_keeps_the_templates_spec_and_sets_the_deadline_from_the_timeout(self) -> None:
        spec = manifest(deadline=timedelta(minutes=10))["spec"]
        del spec["template"]["metadata"]

        assert spec == {**TEMPLATE["spec"], "activeDeadlineSeconds": 600}
        assert "activeDeadlineSeconds" not in TEMPLATE["spec"]  # the template is not changed

    def test_puts_the_slots_annotations_on_the_pods_beside_the_templates_own(self) -> None:
        template = copy.deepcopy(TEMPLATE)
        template["spec"]["template"]["metadata"] = {"annotations": {"team": "reports"}}

        pod_annotations = manifest(template)["spec"]["template"]["metadata"]["annotations"]

        assert pod_annotations == {
            "team": "reports",
            manifests.SCHEDULED_TIME_ANNOTATION: "2026-11-30T01:30:00Z",
            manifests.SLOT_ID_ANNOTATION: slots.slot_id(OWNER, SLOT),
        }
        assert "metadata" not in TEMPLATE["spec"]["template"]  # the template is not changed

    def test_rounds_a_fractional_timeout_up_to_whole_seconds(self) -> None:
        assert manifest(deadline=timedelta(milliseconds=1500))["spec"]["activeDeadlineSeconds"] == 2
        assert manifest(deadline=timedelta(milliseconds=1))["spec"]["activeDeadlineSeconds"] == 1

    def test_a_shorter_deadline_in_the_template_is_kept(self) -> None:
        template = {**TEMPLATE, "spec": {**TEMPLATE["spec"], "activeDeadlineSeconds": 30}}

        assert manifest(template)["spec"]["activeDeadlineSeconds"] == 30

    def test_a_longer_deadline_in_the_template_gives_way_to_the_timeout(self) -> None:
        template = {**TEMPLATE, "spec": {**TEMPLATE["spec"], "activeDeadlineSeconds": 3600}}

        assert manifest(template)["spec"]["activeDeadlineSeconds"] == 600

    @pytest.mark.parametrize(
        ("templates", "timeout", "lead", "deadline"),
        [
            pytest.param(None, timedelta(minutes=10), timedelta(seconds=30), 630, id="the-timeout"),
            pytest.param(30, timedelta(minutes=10), timedelta(seconds=30), 60, id="its-own"),
            pytest.param(
                3600, timedelta(minutes=10), timedelta(seconds=30), 630, id="longer-than-timeout"
            ),
            pytest.param(
                None,
                timedelta(milliseconds=1500),
                timedelta(milliseconds=1500),
                3,
                id="rounded-up-once-summed",
            ),
            pytest.param(10**18, timedelta(minutes=10), timedelta(seconds=30), 630, id="huge"),
            pytest.param(0, timedelta(minutes=10), timedelta(seconds=30), 630, id="zero-not-own"),
        ],
    )
    def test_a_warm_jobs_deadline_is_a_lead_longer_the_templates_own_too(
        self, templates: int | None, timeout: timedelta, lead: timedelta, deadline: int
    ) -> None:
        # Created a lead early: the workload, released at the slot, keeps its whole deadline.
        spec = dict(TEMPLATE["spec"])
        if templates is not None:
            spec["activeDeadlineSeconds"] = templates
        job = manifest({**TEMPLATE, "spec": spec}, deadline=timeout, lead=lead)

        assert job["spec"]["activeDeadlineSeconds"] == deadline

    def test_a_template_without_metadata_is_fine(self) -> None:
        job = manifest({"spec": TEMPLATE["spec"]})

        assert job["metadata"]["labels"] == {"punctual.dev/scheduled-job": "nightly"}


SCHEDULED_JOB_CONTROLLER = {
    "apiVersion": "punctual.dev/v1alpha1",
    "kind": "ScheduledJob",
    "uid": OWNER.uid,
    "controller": True,
}


def body(
    *conditions: dict[str, str],
    annotations: dict[str, str] | None = None,
    controller: dict[str, Any] = SCHEDULED_JOB_CONTROLLER,
) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "reports",
            "name": f"nightly-{SLOT_SECONDS}",
            "uid": "job-uid",
            "resourceVersion": "42",
            "annotations": annotations or {},
            "ownerReferences": [
                {"kind": "ConfigMap", "uid": "not-the-controller"},
                controller,
            ],
        },
        "status": {"conditions": list(conditions)},
    }


class TestWhoControlsAJob:
    @pytest.mark.parametrize(
        ("controller", "owner_uid"),
        [
            pytest.param(SCHEDULED_JOB_CONTROLLER, OWNER.uid, id="a-scheduled-job"),
            pytest.param(
                {**SCHEDULED_JOB_CONTROLLER, "apiVersion": "punctual.dev/v1"},
                OWNER.uid,
                id="a-scheduled-job-of-another-version",
            ),
            pytest.param(
                {**SCHEDULED_JOB_CONTROLLER, "apiVersion": "batch/v1", "kind": "CronJob"},
                None,
                id="a-cronjob",
            ),
            pytest.param(
                {**SCHEDULED_JOB_CONTROLLER, "apiVersion": "example.com/v1"},
                None,
                id="a-scheduled-job-of-another-group",
            ),
            pytest.param(
                {**SCHEDULED_JOB_CONTROLLER, "controller": False}, None, id="no-controller"
            ),
        ],
    )
    def test_its_owner_is_a_scheduled_job_of_punctual_controlling_it(
        self, controller: dict[str, Any], owner_uid: str | None
    ) -> None:
        assert states.BatchJobState.from_body(body(controller=controller)).owner_uid == owner_uid

    @pytest.mark.parametrize(
        ("length", "kept"),
        [(states.MAX_SLOT_ID_LENGTH, True), (states.MAX_SLOT_ID_LENGTH + 1, False)],
    )
    def test_a_slot_id_annotation_is_kept_up_to_the_longest_slot_id(
        self, length: int, kept: bool
    ) -> None:
        slot_id = ("reports/nightly/" + "9" * length)[:length]

        state = states.BatchJobState.from_body(
            body(annotations={manifests.SLOT_ID_ANNOTATION: slot_id})
        )

        assert state.slot_id == (slot_id if kept else None)


class TestHowAJobEnded:
    def test_a_running_job_has_not_ended(self) -> None:
        state = states.BatchJobState.from_body(body())

        assert state.end is None
        assert state.owner_uid == OWNER.uid
        assert state.key == ("reports", f"nightly-{SLOT_SECONDS}")

    def test_complete_is_success(self) -> None:
        state = states.BatchJobState.from_body(
            body(
                {"type": "SuccessCriteriaMet", "status": "True"},
                {"type": "Complete", "status": "True", "message": "Reached expected number"},
            )
        )

        assert state.end == states.BatchJobEnd(True, "Complete", "Reached expected number")

    def test_failed_is_failure_with_the_controllers_reason(self) -> None:
        failed = {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}

        end = states.BatchJobState.from_body(body(failed)).end

        assert end == states.BatchJobEnd(False, "BackoffLimitExceeded", "")
        assert end is not None
        assert not end.deadline_exceeded

    def test_failure_target_already_is_failure(self) -> None:
        target = {"type": "FailureTarget", "status": "True", "reason": "DeadlineExceeded"}

        end = states.BatchJobState.from_body(body(target)).end

        assert end is not None
        assert end.deadline_exceeded
        assert not end.succeeded

    def test_a_condition_that_is_not_true_does_not_count(self) -> None:
        assert (
            states.BatchJobState.from_body(body({"type": "Failed", "status": "False"})).end is None
        )

    def test_the_annotations_give_the_slot_and_scheduled_time(self) -> None:
        state = states.BatchJobState.from_body(
            body(
                annotations={
                    "punctual.dev/slot-id": "reports/nightly/u/1",
                    "punctual.dev/scheduled-time": "2026-11-30T01:30:00Z",
                }
            )
        )

        assert state.slot_id == "reports/nightly/u/1"
        assert state.scheduled_time == SLOT

    def test_newest_slot_first(self) -> None:
        def at(minute: int, name: str) -> states.BatchJobState:
            return states.BatchJobState(
                namespace="reports",
                name=name,
                uid=name,
                resource_version="1",
                owner_uid=OWNER.uid,
                slot_id=None,
                scheduled_time=SLOT + timedelta(minutes=minute),
                end=None,
            )

        ordered = states.sorted_by_slot([at(1, "b"), at(3, "c"), at(2, "a")])

        assert [state.name for state in ordered] == ["c", "a", "b"]


def test_job_names_are_dns_labels() -> None:
    assert DNS_LABEL.fullmatch(manifests.batch_job_name("nightly-report", SLOT))


class TestAJobTemplateSerialisedOnce:
    @pytest.mark.parametrize(
        "template",
        [
            pytest.param(TEMPLATE, id="a-plain-template"),
            pytest.param({"spec": TEMPLATE["spec"]}, id="no-metadata"),
            pytest.param(
                {
                    "metadata": {
                        "labels": {"team": "reports", manifests.SCHEDULED_JOB_LABEL: "theirs"},
                        "annotations": {manifests.SLOT_ID_ANNOTATION: "theirs", "note": "é\\n"},
                    },
                    "spec": {
                        **TEMPLATE["spec"],
                        "activeDeadlineSeconds": 30,
                        "template": {
                            "metadata": {"annotations": {manifests.SCHEDULED_TIME_ANNOTATION: "x"}},
                            **TEMPLATE["spec"]["template"],
                        },
                    },
                },
                id="its-own-labels-and-annotations-some-of-them-ours",
            ),
        ],
    )
    @pytest.mark.parametrize("token", [None, "a-token"])
    def test_sends_the_same_bytes_as_the_slots_manifest(
        self, template: dict[str, Any], token: str | None
    ) -> None:
        deadline = timedelta(minutes=10)
        once = manifests.BatchJobTemplate(template, owner=OWNER, active_deadline=deadline)
        scheduled = SLOT + timedelta(seconds=7)

        request = once.request(
            slot=SLOT, slot_id=slots.slot_id(OWNER, SLOT), scheduled_time=scheduled, token=token
        )

        expected = manifests.BatchJobRequest.of(
            manifests.batch_job_manifest(
                template,
                owner=OWNER,
                slot=SLOT,
                slot_id=slots.slot_id(OWNER, SLOT),
                scheduled_time=scheduled,
                active_deadline=deadline,
                token=token,
            )
        )
        assert (request.namespace, request.name, request.body) == (
            expected.namespace,
            expected.name,
            expected.body,
        )

    def test_the_requests_of_two_slots_share_the_templates_bytes(self) -> None:
        env = [{"name": f"VARIABLE_{k}", "value": "x" * 40} for k in range(1000)]
        spec = copy.deepcopy(TEMPLATE["spec"])
        spec["template"]["spec"]["containers"][0]["env"] = env
        once = manifests.BatchJobTemplate(
            {"spec": spec}, owner=OWNER, active_deadline=timedelta(minutes=10)
        )
        first, second = (
            once.request(slot=slot, slot_id=slots.slot_id(OWNER, slot), scheduled_time=slot)
            for slot in (SLOT, SLOT + timedelta(minutes=1))
        )

        biggest = max(first.parts, key=len)
        assert len(biggest) > 50_000
        assert any(part is biggest for part in second.parts)
        assert first.body != second.body
