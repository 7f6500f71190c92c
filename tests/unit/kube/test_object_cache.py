"""The object cache keeps what status writes, claims and Events read, and nothing else."""

from punctual.kube import objects, resources


def _body(version: str) -> dict[str, object]:
    return {
        "apiVersion": "punctual.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {
            "name": "nightly",
            "namespace": "team",
            "uid": "u-1",
            "resourceVersion": version,
            "generation": 3,
            "labels": {"app": "x"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {"every": "10s"},
        "status": {"lastScheduleTime": "2026-01-01T00:00:00Z"},
    }


def test_a_body_is_kept_without_spec_labels_annotations_or_managed_fields() -> None:
    cache = objects.ObjectCache()
    body = _body("7")
    cache.remember(body)
    kept = cache.get(resources.job_ref(body))
    assert kept == {
        "apiVersion": "punctual.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {
            "name": "nightly",
            "namespace": "team",
            "uid": "u-1",
            "resourceVersion": "7",
            "generation": 3,
        },
        "status": {"lastScheduleTime": "2026-01-01T00:00:00Z"},
    }


def test_an_older_body_does_not_replace_a_newer_one() -> None:
    cache = objects.ObjectCache()
    cache.remember(_body("8"))
    cache.remember(_body("7"))
    kept = cache.get(resources.job_ref(_body("8")))
    assert kept is not None
    assert kept["metadata"]["resourceVersion"] == "8"
