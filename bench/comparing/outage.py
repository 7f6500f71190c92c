"""The suite's outage part: both controllers stopped, then what each runs of the slots missed."""

import argparse
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from comparing.objects import (
    apply,
    create_namespace,
    cronjob,
    job_spec,
    scheduled_job,
    start_operator,
    stress,
    wait_armed,
    wait_served,
)
from comparing.observing import (
    Observers,
    wall,
)
from comparing.running import (
    Results,
    measured_slots,
    sleep_until,
)
from comparing.scale import (
    delete_all,
    run_scale,
)
from comparing.systems import (
    JOB_TEMPLATE,
    MINUTE,
)
from lib.output import say
from localcluster import LocalCluster, LocalRedis, manifests, processes

# -- the suite: a controller outage ----------------------------------------------------------

OUTAGE_NAMESPACE = "outage"


def run_outage(
    arguments: argparse.Namespace,
    *,
    cluster: LocalCluster,
    redis_server: LocalRedis,
    run_dir: Path,
    operator: processes.ManagedProcess,
    observers: Observers,
    results: Results,
) -> processes.ManagedProcess:
    """kube-controller-manager and the operator stopped together for ``--outage`` seconds,
    started again; returns the operator now running."""
    count = arguments.outage_n
    create_namespace(cluster, OUTAGE_NAMESPACE)
    history = {"succeeded": 10, "failed": 10}
    sets = {
        "CronJob": [f"cron-{i:02d}" for i in range(count)],
        "Punctual RunOnce": [f"runonce-{i:02d}" for i in range(count)],
        "Punctual CatchUp": [f"catchup-{i:02d}" for i in range(count)],
    }
    made = [cronjob(name, namespace=OUTAGE_NAMESPACE, policy="Allow") for name in sets["CronJob"]]
    for label, policy in (("Punctual RunOnce", "RunOnce"), ("Punctual CatchUp", "CatchUp")):
        made += [
            scheduled_job(
                name,
                job_spec(
                    JOB_TEMPLATE,
                    history,
                    concurrencyPolicy="Allow",
                    missedRuns={"policy": policy},
                ),
                namespace=OUTAGE_NAMESPACE,
            )
            for name in sets[label]
        ]
    apply(cluster, made)
    wait_armed(cluster, operator, 2 * count, OUTAGE_NAMESPACE)
    [before] = measured_slots(wall(), 1)
    say(f"outage: {len(made)} objects armed; a slot run normally first ({before:%H:%M:%S})")
    sleep_until(before + timedelta(seconds=15), watched=[operator])
    [controller_manager] = [p for p in cluster.launched if p.name == "kube-controller-manager"]
    stopped_at = wall()
    controller_manager.stop()
    operator.stop()
    outage = timedelta(seconds=arguments.outage)
    say(f"outage: kube-controller-manager and the operator stopped for {outage}")
    sleep_until(stopped_at + outage)
    # The cluster knows only the process it started: the new one is ours to stop.
    restarted = processes.start(controller_manager.name, controller_manager.argv, cluster.run_dir)
    operator = start_operator(cluster, redis_server, run_dir, namespace=None)
    resumed_at = wall()
    missed = [
        before + k * MINUTE for k in range(1, 10) if stopped_at < before + k * MINUTE < resumed_at
    ]
    after = (resumed_at.replace(second=0, microsecond=0)) + MINUTE
    say(f"outage: both started again; slots missed {[f'{s:%H:%M}' for s in missed]}")
    try:
        sleep_until(after + timedelta(seconds=10), watched=[operator, restarted])
        with observers.seen.lock:
            jobs = [
                job for (namespace, _), job in observers.seen.jobs.items()
                if namespace == OUTAGE_NAMESPACE
            ]  # fmt: skip
        listing = cluster.api.get(
            f"/apis/punctual.dev/v1alpha1/namespaces/{OUTAGE_NAMESPACE}/scheduledjobs"
        )
        counted = {
            item["metadata"]["name"]: ((item.get("status") or {}).get("counts") or {})
            for item in listing["items"]
        }
    finally:
        restarted.stop()
    lines = [
        f"controller outage: kube-controller-manager and the operator stopped together for "
        f"{outage.total_seconds():.0f} s ({stopped_at:%H:%M:%S} to {resumed_at:%H:%M:%S}); "
        f"{count} objects per row, {len(missed)} slot(s) fell in the outage",
        f"{'system':<18} {'missed slots run':>16} {'which':<24} {'created after restart (s)':>26} "
        f"{'counted missed':>15} {'next slot ran':>14}",
    ]
    for label, names in sets.items():
        mine = [job for job in jobs if job["owner"] in names and job["scheduled"]]
        caught = [job for job in mine if job["scheduled"] in missed]
        which = sorted({f"{job['scheduled']:%H:%M}" for job in caught})
        delays = sorted(
            (job["observed"] - resumed_at).total_seconds() for job in caught if job["observed"]
        )
        delay = f"{delays[0]:.1f}-{delays[-1]:.1f}" if delays else "-"
        missed_counts = (
            "-"
            if label == "CronJob"
            else str(sum(counted.get(n, {}).get("missed", 0) for n in names))
        )
        next_ran = sum(1 for job in mine if job["scheduled"] == after)
        lines.append(
            f"{label:<18} {len(caught):>7} of {len(missed) * len(names):<6} {','.join(which):<24} "
            f"{delay:>26} {missed_counts:>15} {next_ran:>7} of {len(names):<4}"
        )
        results.outage.append(
            [
                label,
                len(names),
                len(missed),
                len(caught),
                " ".join(which),
                delay,
                missed_counts,
                next_ran,
            ]
        )
    results.texts.append("\n".join(lines))
    delete_all(cluster, OUTAGE_NAMESPACE)
    return operator


def run_on_kwok(
    arguments: argparse.Namespace, parts: Sequence[str], run_dir: Path, results: Results
) -> None:
    """Parts scale and outage: one cluster with kwok's node, the operator on every namespace."""
    with (
        LocalCluster(kwok=True, run_dir=run_dir / "kwok", progress=say) as cluster,
        LocalRedis(run_dir=run_dir / "kwok-redis") as redis_server,
    ):
        manifests.install_crds(cluster)
        wait_served(cluster)
        with Observers(cluster.kubeconfig, redis_server.url, pods=False) as observers:
            operator = start_operator(cluster, redis_server, run_dir, namespace=None)
            with stress(arguments.stress):
                if "scale" in parts:
                    run_scale(arguments, cluster, operator, observers, results)
                if "outage" in parts:
                    operator = run_outage(
                        arguments,
                        cluster=cluster,
                        redis_server=redis_server,
                        run_dir=run_dir,
                        operator=operator,
                        observers=observers,
                        results=results,
                    )
            operator.stop()
