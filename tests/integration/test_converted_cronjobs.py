"""``punctual convert`` against the real API server: CronJobs created there, read back the way
``kubectl get cronjob -o yaml`` gives them (a ``List``, with everything the server set and
defaulted), converted by the console script, and the ScheduledJobs applied with
``kubectl apply --server-side --validate=strict``. The API server accepts them (the CRD's schema
and CEL rules, installed by the fixtures) and the operator's own check passes on what it stored.

No operator runs: this is about the manifests. The CronJobs are suspended or due once a year,
so the CronJob controller creates no Jobs meanwhile.
"""

import subprocess
from typing import Any

import yaml
from operator_harness import API, PUNCTUAL

from localcluster import LocalCluster
from punctual.api import models, planning, spec_parsing
from punctual.scheduling import cron, overlap

pytest_plugins = ["operator_fixtures"]

CONVERT_TIMEOUT = 30.0
POD_SPEC = {
    "restartPolicy": "Never",
    "containers": [{"name": "report", "image": "busybox:1.36", "args": ["sh", "-c", "date"]}],
}


def cronjob(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "labels": {"app": "reports"}},
        "spec": spec,
    }


CRONJOBS = [
    cronjob(
        "nightly",
        {
            "schedule": "30 2 1 1 *",
            "timeZone": "Europe/Copenhagen",
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": 300,
            "successfulJobsHistoryLimit": 5,
            "jobTemplate": {
                "metadata": {"labels": {"job": "report"}},
                "spec": {"activeDeadlineSeconds": 5400, "template": {"spec": POD_SPEC}},
            },
        },
    ),
    cronjob(
        "hourly",
        {
            "schedule": "@hourly",
            "suspend": True,
            "jobTemplate": {"spec": {"template": {"spec": POD_SPEC}}},
        },
    ),
]


def test_cronjobs_read_from_the_api_server_become_scheduled_jobs_it_accepts(
    cluster: LocalCluster, namespace: str, scheduled_job_crd: object
) -> None:
    for body in CRONJOBS:
        cluster.api.post(f"/apis/batch/v1/namespaces/{namespace}/cronjobs", body)
    listed = cluster.kubectl("get", "cronjob", "-n", namespace, "-o", "yaml").stdout
    assert yaml.safe_load(listed)["kind"] == "List"

    converted = subprocess.run(
        [str(PUNCTUAL), "convert"],
        input=listed,
        capture_output=True,
        text=True,
        timeout=CONVERT_TIMEOUT,
        check=False,
    )

    assert (converted.returncode, converted.stderr) == (0, "")
    printed = [document for document in yaml.safe_load_all(converted.stdout) if document]
    assert sorted(document["metadata"]["name"] for document in printed) == ["hourly", "nightly"]
    cluster.kubectl(
        "apply", "--server-side", "--validate=strict", "-f", "-", input=converted.stdout
    )
    stored = {
        name: cluster.api.get(f"{API}/namespaces/{namespace}/{models.PLURAL}/{name}")
        for name in ("nightly", "hourly")
    }
    plans = {
        name: planning.plan_for(spec_parsing.parse_spec(body["spec"]), uid=body["metadata"]["uid"])
        for name, body in stored.items()
    }

    nightly, hourly = stored["nightly"]["spec"], stored["hourly"]["spec"]
    assert stored["nightly"]["metadata"]["labels"] == {"app": "reports"}
    assert nightly["schedule"] == "30 2 1 1 *"
    assert nightly["timeZone"] == "Europe/Copenhagen"
    assert nightly["dst"] == {"nonexistent": "Skip", "ambiguous": "Both"}
    assert nightly["timeout"] == "1h30m"
    assert nightly["missedRuns"]["startingDeadline"] == "5m"
    assert nightly["history"] == {"succeeded": 5, "failed": 1}
    assert plans["nightly"].concurrency is overlap.ConcurrencyPolicy.FORBID
    template = nightly["target"]["job"]["template"]
    assert template["metadata"] == {"labels": {"job": "report"}}
    # The Job spec as the API server defaulted it in the CronJob, but for the deadline, which is
    # now the timeout.
    source = cluster.api.get(f"/apis/batch/v1/namespaces/{namespace}/cronjobs/nightly")
    expected = dict(source["spec"]["jobTemplate"]["spec"])
    del expected["activeDeadlineSeconds"]
    expected["template"] = dict(expected["template"])
    expected["template"].pop("metadata", None)
    assert template["spec"] == expected

    assert hourly["schedule"] == "@hourly"
    assert hourly["timeZone"] == "UTC"
    assert hourly["suspend"] is True
    assert hourly["timeout"] == "24h"
    assert hourly["history"] == {"succeeded": 3, "failed": 1}
    assert plans["hourly"].concurrency is overlap.ConcurrencyPolicy.ALLOW
    assert isinstance(plans["hourly"].schedule, cron.CronSchedule)
