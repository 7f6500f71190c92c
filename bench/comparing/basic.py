"""The quick comparison: CronJobs, Punctual Jobs and queue jobs on a kwok node."""

import argparse
from pathlib import Path

from comparing.figures import (
    Phase,
)
from comparing.objects import (
    apply,
    create_namespace,
    objects,
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
    measure,
    measured_slots,
)
from comparing.systems import (
    BASIC_MEASURES,
    CRONJOB,
    NAMESPACE,
    PUNCTUAL,
    QUEUE,
)
from lib.output import say
from localcluster import LocalCluster, LocalRedis, manifests


def run_basic(arguments: argparse.Namespace, run_dir: Path, results: Results) -> str:
    count, minutes = arguments.n, arguments.m
    say(f"N={count} objects per system, M={minutes} minute(s); run directory {run_dir}")
    with (
        LocalCluster(kwok=True, run_dir=run_dir / "cluster", progress=say) as cluster,
        LocalRedis(run_dir=run_dir / "redis") as redis_server,
    ):
        manifests.install_crds(cluster)
        wait_served(cluster)
        create_namespace(cluster, NAMESPACE)
        operator = start_operator(cluster, redis_server, run_dir)
        say(f"operator started (pid {operator.pid}, log {operator.log_path})")
        with Observers(cluster.kubeconfig, redis_server.url) as observers:
            apply(cluster, objects(count, minutes))
            wait_armed(cluster, operator, 2 * count)
            slots = measured_slots(wall(), minutes)
            phase = Phase(
                "basic",
                "",
                NAMESPACE,
                {
                    CRONJOB: [f"cron-{i:02d}" for i in range(count)],
                    PUNCTUAL: [f"sj-{i:02d}" for i in range(count)],
                    QUEUE: [f"q-{i:02d}" for i in range(count)],
                },
                slots,
            )
            first_in = (slots[0] - wall()).total_seconds()
            say(
                f"{3 * count} objects armed; measuring the slots {slots[0]:%H:%M:%S} to "
                f"{slots[-1]:%H:%M:%S} UTC (the first in {first_in:.0f}s)"
            )
            with stress(arguments.stress):
                measure(observers, phase, [operator])
            results.add_phase(cluster, observers.seen, phase, BASIC_MEASURES)
        operator.stop()
    return (
        f"lateness in ms against the scheduled time; {count} objects per system, "
        f"{minutes} slot(s) each{', one core loaded (--stress)' if arguments.stress else ''}"
    )
