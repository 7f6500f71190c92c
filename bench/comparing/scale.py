"""The suite's scale part: 20, 200, 1,000 per-minute objects, each system alone and both."""

import argparse
import time
from datetime import timedelta

from comparing.figures import (
    Phase,
)
from comparing.objects import (
    apply,
    create_namespace,
    cronjob,
    job_spec,
    scheduled_job,
    wait_armed,
)
from comparing.observing import (
    Observations,
    Observers,
    wall,
)
from comparing.running import (
    Results,
    measured_slots,
    progress,
    sleep_until,
)
from comparing.systems import (
    CRONJOB,
    JOB_CREATED,
    JOB_TEMPLATE,
    JOB_WATCH,
    PUNCTUAL,
)
from lib.output import load, say
from localcluster import LocalCluster, processes
from localcluster import certs as pki
from localcluster.api import ApiClient

# -- the suite: scale ------------------------------------------------------------------------

SCALE_MEASURES = {CRONJOB: (JOB_WATCH, JOB_CREATED), PUNCTUAL: (JOB_WATCH, JOB_CREATED)}
"""No pods (see Observers) and no run started: at 1,000 the status writes are spread out
(--status-writes-per-second), so a slot's record may not be there yet."""


def delete_all(cluster: LocalCluster, namespace: str) -> None:
    """Every CronJob and ScheduledJob of the namespace, in one request each; their Jobs stay
    (orphaned, finished), so no garbage collection runs into the next measurement."""
    api = ApiClient(cluster.server, pki.ClusterCerts(cluster.run_dir / "pki"), timeout=120)
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"}
    for path in (
        f"/apis/batch/v1/namespaces/{namespace}/cronjobs",
        f"/apis/punctual.dev/v1alpha1/namespaces/{namespace}/scheduledjobs",
    ):
        api.request_text("DELETE", path, body)


def all_jobs_seen(seen: Observations, phase: Phase) -> bool:
    slot = phase.slots[-1]
    with seen.lock:
        owners = {
            job["owner"]
            for (namespace, _), job in seen.jobs.items()
            if namespace == phase.namespace and job["scheduled"] and job["scheduled"] >= slot
        }
    return all(name in owners for names in phase.owners.values() for name in names)


def run_scale(
    arguments: argparse.Namespace,
    cluster: LocalCluster,
    operator: processes.ManagedProcess,
    observers: Observers,
    results: Results,
) -> None:
    history = {"succeeded": 3, "failed": 1}
    # Allow, not Forbid: at 1,000 the Job controller's backlog keeps Jobs active for minutes,
    # and a slot skipped as an overlap would say nothing about the scheduler.
    window = timedelta(seconds=arguments.scale_window)
    for count in arguments.scale_sizes:
        for key, scenario, systems in (
            ("cron", "alone", (CRONJOB,)),
            ("sj", "alone", (PUNCTUAL,)),
            ("both", "together", (CRONJOB, PUNCTUAL)),
        ):
            namespace = f"scale-{count}-{key}"
            create_namespace(cluster, namespace, for_pods=True)
            owners: dict[str, list[str]] = {}
            made = []
            if CRONJOB in systems:
                owners[CRONJOB] = [f"cron-{i:04d}" for i in range(count)]
                made += [
                    cronjob(name, namespace=namespace, policy="Allow") for name in owners[CRONJOB]
                ]
            if PUNCTUAL in systems:
                owners[PUNCTUAL] = [f"sj-{i:04d}" for i in range(count)]
                spec = job_spec(JOB_TEMPLATE, history, concurrencyPolicy="Allow")
                made += [
                    scheduled_job(name, spec, namespace=namespace) for name in owners[PUNCTUAL]
                ]
            began = time.monotonic()
            apply(cluster, made)
            if PUNCTUAL in systems:
                wait_armed(cluster, operator, count, namespace)
            slots = measured_slots(wall(), 1)
            label = f"N={count} {' + '.join(s.split()[0] for s in systems)} {scenario}"
            phase = Phase("scale", label, namespace, owners, slots, window)
            say(
                f"scale {label}: {len(made)} objects created and armed in "
                f"{time.monotonic() - began:.0f}s; slot {slots[0]:%H:%M:%S} ({load()})"
            )
            sleep_until(slots[0] + timedelta(seconds=5), watched=[operator])
            while not all_jobs_seen(observers.seen, phase) and wall() < slots[0] + window:
                sleep_until(wall() + timedelta(seconds=1), watched=[operator])
            progress(observers.seen, phase, slots[0], 1)
            results.add_phase(cluster, observers.seen, phase, SCALE_MEASURES)
            delete_all(cluster, namespace)
