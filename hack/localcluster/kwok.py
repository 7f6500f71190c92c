"""kwok: one fake Node, and the controller that plays kubelet for it.

kwok watches only the nodes annotated ``kwok.x-k8s.io/node=fake``, renews their Leases (the
heartbeat the node lifecycle controller watches) and applies the stages of ``kwok-stages.yaml``
(kwok v0.8 has no built-in ones): the node becomes Ready; a pod bound to it goes Running, a pod
owned by a Job then Succeeded, and a pod being deleted is removed. That is all a CronJob -> Job ->
Pod -> Complete chain needs, without any container runtime. The stages file is passed as
``--config``, which also keeps a ``~/.kwok/kwok.yaml`` of the user's out of the picture.

The node carries no taint so that ordinary pods schedule onto it without tolerations (unless a
real node is beside it), and it
advertises 127.0.0.1 with kwok's own server port, so that anything asking "the kubelet" (logs,
exec) reaches kwok on loopback rather than a made-up address.
"""

from pathlib import Path
from typing import Any

from localcluster.ports import LOOPBACK

STAGES = Path(__file__).with_name("kwok-stages.yaml")

FAKE_NODE_NAME = "kwok-node-0"
FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"
FAKE_NODE_ANNOTATION_VALUE = "fake"
NODE_LEASE_SECONDS = 40
"""The fake node's Lease, renewed by kwok as the kubelet renews its own (the same duration)."""
# Pod IPs handed out by kwok: only ever written into pod status, never contacted.
POD_CIDR = "10.244.0.1/24"


def fake_node(*, tainted: bool = False) -> dict[str, Any]:
    """The fake Node; ``tainted`` (beside a real node) lets only pods tolerating
    ``kwok.x-k8s.io/node=fake:NoSchedule`` land on it."""
    taint = {
        "key": FAKE_NODE_ANNOTATION,
        "value": FAKE_NODE_ANNOTATION_VALUE,
        "effect": "NoSchedule",
    }
    # Every kubelet reports its root filesystem as ephemeral-storage: without it a pod that
    # requests some (the chart's do) would never be scheduled here.
    resources = {"cpu": "32", "memory": "256Gi", "ephemeral-storage": "100Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": FAKE_NODE_NAME,
            "annotations": {
                FAKE_NODE_ANNOTATION: FAKE_NODE_ANNOTATION_VALUE,
                "node.alpha.kubernetes.io/ttl": "0",
            },
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": FAKE_NODE_NAME,
                "kubernetes.io/os": "linux",
                "kubernetes.io/role": "agent",
                "node-role.kubernetes.io/agent": "",
                "type": "kwok",
            },
        },
        "spec": {"taints": [taint]} if tainted else {},
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": "fake",
                "kubeProxyVersion": "fake",
            },
        },
    }


def kwok_args(kubeconfig: Path, port: int) -> list[str]:
    return [
        f"--kubeconfig={kubeconfig}",
        f"--config={STAGES}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={FAKE_NODE_ANNOTATION}={FAKE_NODE_ANNOTATION_VALUE}",
        f"--node-ip={LOOPBACK}",
        f"--node-port={port}",
        f"--server-address={LOOPBACK}:{port}",
        f"--cidr={POD_CIDR}",
        # The heartbeat: without a lease duration kwok renews no Lease, the node lifecycle
        # controller finds the node's heartbeat stale every ~50 s and marks its pods not ready
        # for a moment, which a Deployment rolled out just then never recovers from.
        f"--node-lease-duration-seconds={NODE_LEASE_SECONDS}",
    ]


def node_is_ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
