"""The suite's workload, http and stress parts: the workload's own start on a real node."""

import argparse
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from comparing.figures import (
    Phase,
)
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
    warm_job_spec,
)
from comparing.observing import (
    Observations,
    Observers,
    Receiver,
    gate_late_ms,
    wall,
)
from comparing.running import (
    Results,
    measure,
    measured_slots,
    sleep_until,
)
from comparing.systems import (
    AT_GATE,
    AT_RECEIVER,
    CRONJOB,
    GATE_RELEASED,
    HTTP,
    JOB_WATCH,
    LEAD,
    POD_RUNNING,
    PUNCTUAL,
    RUN_STARTED,
    WARM_EXEC,
    WARM_INIT,
    WARM_MODES,
    WORKLOAD_STARTED,
)
from lib.output import say
from localcluster import LocalCluster, LocalRedis, helm_release, manifests
from localcluster.api import ApiError
from localcluster.binaries import NodeImages

# -- the suite: workload start and "call my service" on the real node -----------------------

NODE_NAMESPACE = "node"
WARM_MEASURES = (JOB_WATCH, AT_GATE, POD_RUNNING, GATE_RELEASED, WORKLOAD_STARTED)
NODE_MEASURES = {
    "workload": {
        CRONJOB: (JOB_WATCH, POD_RUNNING, WORKLOAD_STARTED),
        PUNCTUAL: (RUN_STARTED, JOB_WATCH, POD_RUNNING, WORKLOAD_STARTED),
        WARM_EXEC: WARM_MEASURES,
        WARM_INIT: WARM_MEASURES,
    },
    "http": {CRONJOB: (JOB_WATCH, AT_RECEIVER), HTTP: (RUN_STARTED, AT_RECEIVER)},
}


def workload_template(receiver_url: str, namespace: str) -> dict[str, Any]:
    """A Job whose container calls ``<receiver>/started/<namespace>/<its Job>`` on start. Its
    ``command`` is the image's own entrypoint, written out: warm ``Exec`` gates it."""
    container = {
        "name": "workload",
        "image": NodeImages.WORKLOAD,
        "imagePullPolicy": "IfNotPresent",
        "command": ["/workload"],
        "env": [
            {
                "name": "JOB_NAME",
                "valueFrom": {
                    "fieldRef": {"fieldPath": "metadata.labels['batch.kubernetes.io/job-name']"}
                },
            },
            {"name": "CALL_URL", "value": f"{receiver_url}/started/{namespace}/$(JOB_NAME)"},
        ],
    }
    return {
        "spec": {
            "backoffLimit": 0,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        }
    }


def read_gates(cluster: LocalCluster, seen: Observations, namespace: str) -> None:
    """The release lines of the namespace's warm pods not read yet, from their gated containers'
    logs (a pod still at its gate, or gone, is asked again next time)."""
    for key, pod, containers in seen.gates_to_read(namespace):
        for container in containers:
            try:
                log = cluster.api.request_text(
                    "GET",
                    f"/api/v1/namespaces/{namespace}/pods/{pod}/log"
                    f"?container={container}&limitBytes=65536",
                )
            except ApiError:
                continue
            late_ms = gate_late_ms(log)
            if late_ms is not None:
                seen.gate_read(key, late_ms)
                break


def run_on_real_node(
    arguments: argparse.Namespace, parts: Sequence[str], run_dir: Path, results: Results
) -> None:
    """Parts workload, http and stress: one cluster with a real node, one set of objects."""
    count, minutes, lead = arguments.node_n, arguments.m, arguments.warm_lead
    with_jobs = "workload" in parts or set(parts) == {"stress"}
    with_http = "http" in parts or set(parts) == {"stress"}
    with (
        LocalCluster(kwok=False, real_node=True, run_dir=run_dir / "node", progress=say) as cluster,
        LocalRedis(run_dir=run_dir / "node-redis") as redis_server,
    ):
        manifests.install_crds(cluster)
        wait_served(cluster)
        create_namespace(cluster, NODE_NAMESPACE, for_pods=True)
        if with_jobs:  # the gate image the operator's warm Jobs name by default
            cluster.load_image(helm_release.built_image(helm_release.GATE_IMAGE_BUILD))
        host = cluster.node.address.host_address
        observers = Observers(cluster.kubeconfig, redis_server.url)
        with observers, Receiver(host, observers.seen) as receiver:
            operator = start_operator(
                cluster,
                redis_server,
                run_dir,
                namespace=NODE_NAMESPACE,
                extra=["--http-allowed-hosts", host],
            )
            template = workload_template(receiver.url, NODE_NAMESPACE)
            history = {"succeeded": 3, "failed": 1}  # CronJob's defaults
            owners: dict[str, list[str]] = {CRONJOB: [f"cron-{i:02d}" for i in range(count)]}
            made = [
                cronjob(name, namespace=NODE_NAMESPACE, template=template)
                for name in owners[CRONJOB]
            ]
            if with_jobs:
                owners[PUNCTUAL] = [f"sj-{i:02d}" for i in range(count)]
                made += [
                    scheduled_job(name, job_spec(template, history), namespace=NODE_NAMESPACE)
                    for name in owners[PUNCTUAL]
                ]
                for system, prefix in ((WARM_EXEC, "we"), (WARM_INIT, "wi")):
                    owners[system] = [f"{prefix}-{i:02d}" for i in range(count)]
                    spec = warm_job_spec(template, history, mode=WARM_MODES[system], lead=lead)
                    made += [
                        scheduled_job(name, spec, namespace=NODE_NAMESPACE)
                        for name in owners[system]
                    ]
            if with_http:
                owners[HTTP] = [f"h-{i:02d}" for i in range(count)]
                made += [
                    scheduled_job(
                        name,
                        {
                            "schedule": "*/1 * * * *",
                            "history": history,
                            "target": {
                                "http": {"url": f"{receiver.url}/http/{NODE_NAMESPACE}/{name}"}
                            },
                        },
                        namespace=NODE_NAMESPACE,
                    )
                    for name in owners[HTTP]
                ]
            apply(cluster, made)
            wait_armed(cluster, operator, len(made) - count, NODE_NAMESPACE)
            scenarios = [("", False)] if set(parts) - {"stress"} else []
            if "stress" in parts:
                scenarios.append(("one core loaded", True))
            # A warm job's first measured slot is armed with its whole lead.
            ahead = LEAD + lead if with_jobs else LEAD
            slots = measured_slots(wall(), minutes * len(scenarios), ahead=ahead)
            say(f"real node: {len(made)} objects armed; {len(slots)} slot(s) from {slots[0]:%H:%M}")
            for index, (scenario, loaded) in enumerate(scenarios):
                mine = slots[index * minutes : (index + 1) * minutes]
                workload_systems = (CRONJOB, PUNCTUAL, WARM_EXEC, WARM_INIT)
                part_owners = [
                    ("workload", {s: owners[s] for s in workload_systems if s in owners}),
                    ("http", {s: owners[s] for s in (CRONJOB, HTTP) if s in owners}),
                ]
                phases = [
                    (
                        part,
                        Phase(
                            "stress" if loaded else part,
                            f"{part}, {scenario}" if loaded else scenario,
                            NODE_NAMESPACE,
                            who,
                            mine,
                        ),
                    )
                    for part, who in part_owners
                    if (part in parts or loaded) and len(who) >= 2
                ]
                # The busy process starts a little before the first loaded slot is armed.
                loaded_ahead = max(timedelta(seconds=20), ahead)
                sleep_until(mine[0] - loaded_ahead, watched=[operator])
                with stress(loaded or arguments.stress):
                    measure(
                        observers,
                        phases[0][1],
                        [operator],
                        after_each_slot=lambda: read_gates(cluster, observers.seen, NODE_NAMESPACE),
                    )
                for part, phase in phases:
                    results.add_phase(cluster, observers.seen, phase, NODE_MEASURES[part])
            operator.stop()
