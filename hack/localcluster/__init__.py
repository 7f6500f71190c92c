"""A throwaway local Kubernetes control plane and Redis for development and integration tests.

Everything runs as plain processes bound to 127.0.0.1 (no containers): etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and, optionally, kwok faking a node so pods "run", and a
real node whose containers run (containerd, the kubelet, kube-proxy, CoreDNS in namespaces of
their own; the API server then listens on the node link's address). The binaries come from
``hack/build-control-plane.sh``, the node's images from ``hack/image/build-node-images.sh``.

Modules, one concept each:

- ``binaries``: finds (building once if needed) the control-plane binaries and the node's images.
- ``ports``: free TCP ports on 127.0.0.1.
- ``processes``: child processes in their own process groups, readiness waits, clean stops.
- ``certs``: the throwaway CA, serving and client certificates, service-account keys.
- ``kubeconfig``: the admin kubeconfig file.
- ``api``: a tiny HTTPS JSON client for the launcher's own readiness checks.
- ``etcd``: a single-member etcd on free ports.
- ``kwok`` (and ``kwok-stages.yaml``): the fake node, and kwok driving pods through their phases.
- ``node``: ``RealNode``, the real node: its namespaces, link, cgroups, daemons and clean-up.
- ``cluster``: ``LocalCluster``, the whole control plane as a context manager.
- ``redis``: ``LocalRedis``, a disposable redis-server.
- ``sentinel``: ``LocalSentinelRedis``, a primary, two replicas and three Sentinels, for failovers.
- ``manifests``: applying CRDs and examples with the built kubectl.
- ``helm_release``: Punctual installed with Helm onto the real node, from images built here.
- ``cli``: ``python -m localcluster up`` and ``python -m localcluster run`` (with ``hack`` on
  ``PYTHONPATH``, as ``make run`` sets it; pytest has it through its ``pythonpath``).
"""

from localcluster.binaries import Binaries, locate_binaries
from localcluster.cluster import KubectlError, LocalCluster
from localcluster.processes import ComponentError
from localcluster.redis import LocalRedis

__all__ = [
    "Binaries",
    "ComponentError",
    "KubectlError",
    "LocalCluster",
    "LocalRedis",
    "locate_binaries",
]
