"""A real node: containerd, runc, the kubelet, kube-proxy and CoreDNS, in namespaces of its own.

Everything the node runs lives in one network namespace and one mount namespace that a holder
process (``unshare ... sleep``) keeps open; every daemon enters both with ``nsenter``. So:

- the node's iptables rules (kube-proxy's, the kubelet's), its bridge ``cni0``, the pods' veths
  and its routes exist in that network namespace only, and vanish with it; several nodes (of
  several clusters) never see each other's rules;
- the mounts of the node (containers' root filesystems, the kubelet's volumes, the pods' network
  namespace handles, a tmpfs over ``/run/containerd`` for containerd's and the shims' sockets,
  one over ``/var/log/containers``, and ``directory/kubelet`` bound over ``/var/lib/kubelet``)
  exist in that mount namespace only, and vanish with it (the machine keeps at most those three
  empty directories, shared by every node, as mount points);
- the pods' cgroups are under ``/<cgroup root>`` (the kubelet's ``cgroupRoot``), removed on stop.

One veth pair joins the node to the machine: ``host_address`` on the machine's side (where the
API server listens and where a test's receiver binds for pods to reach it), ``node_address`` on
the node's (the Node's InternalIP, where the kubelet, kube-proxy's health check and CoreDNS
listen). The machine routes the cluster's block (``10.N.0.0/16``: the link, the pods, the
Services) to the node; the node has no default route, so pods reach the node, the machine's side
of the link and each other, and nothing off the machine. Nothing is masqueraded off the node.
"""

import contextlib
import fcntl
import ipaddress
import json
import os
import signal
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from localcluster import processes
from localcluster.binaries import Binaries, NodeImages

NODE_NAME = "node-0"
CLUSTER_DOMAIN = "cluster.local"
CGROUP_ROOT = Path("/sys/fs/cgroup")
# 10.100.0.0/16 to 10.199.0.0/16: one block per live node, the first not routed on the machine.
BLOCKS = range(100, 200)
BLOCK_LOCK = Path("/tmp/punctual-node-blocks.lock")
KUBELET_PORT = 10250
KUBE_PROXY_HEALTH_PORT = 10256
COREDNS_READY_PORT = 8181
STOP_GRACE_SECONDS = 10.0


@dataclass(frozen=True)
class NodeAddresses:
    """The addresses of one node's block ``10.<block>.0.0/16``."""

    block: int

    @property
    def cidr(self) -> str:
        return f"10.{self.block}.0.0/16"

    @property
    def host_address(self) -> str:
        return f"10.{self.block}.0.1"

    @property
    def node_address(self) -> str:
        return f"10.{self.block}.0.2"

    @property
    def pod_cidr(self) -> str:
        return f"10.{self.block}.1.0/24"

    @property
    def pod_gateway(self) -> str:
        return f"10.{self.block}.1.1"

    @property
    def service_cidr(self) -> str:
        return f"10.{self.block}.2.0/24"

    @property
    def kubernetes_service_address(self) -> str:
        """The ``kubernetes`` Service's ClusterIP: the first address of the Service range."""
        return f"10.{self.block}.2.1"

    @property
    def host_interface(self) -> str:
        return f"punctual{self.block}"


def _run(*argv: str, check: bool = True) -> "subprocess.CompletedProcess[str]":
    result = subprocess.run(list(argv), capture_output=True, text=True, check=False, timeout=60)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr}")
    return result


def _routed_blocks() -> set[int]:
    """The second octets of the 10.x networks routed on the machine (any table)."""
    taken: set[int] = set()
    ten = ipaddress.IPv4Network("10.0.0.0/8")
    for line in _run("ip", "-4", "-o", "route", "show", "table", "all").stdout.splitlines():
        words = line.split()
        destination = words[1] if words[0] in {"local", "broadcast", "unreachable"} else words[0]
        with contextlib.suppress(ValueError):
            network = ipaddress.IPv4Network(destination, strict=False)
            if network.prefixlen >= 8 and network.subnet_of(ten):
                first, last = network.network_address.packed[1], network.broadcast_address.packed[1]
                taken.update(range(first, last + 1))
    return taken


def _ns_inode(pid: int | str, kind: str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/{kind}").st_ino
    except OSError:
        return None


def _cgroup_hierarchies(*, unified: bool = True) -> list[Path]:
    """Every mounted cgroup v1 hierarchy (the kubelet needs its root in each) and, unless told
    otherwise, the cgroup v2 one beside them (where runc makes the same cgroups too)."""
    kinds = {"cgroup", "cgroup2"} if unified else {"cgroup"}
    hierarchies = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        if after.split()[0] in kinds:
            hierarchies.append(Path(before.split()[4]))
    return hierarchies


class RealNode(processes.Service):
    """One real node of a ``LocalCluster``, its state in ``directory``.

    ``prepare()`` (before the API server starts: it listens on ``host_address``) makes the
    namespaces and the link; ``start(kubeconfig)`` then starts containerd (and loads the images),
    the kubelet, kube-proxy and CoreDNS, and returns once each is healthy and the Node Ready.
    """

    def __init__(
        self,
        *,
        binaries: Binaries,
        images: NodeImages,
        directory: Path,
        ca_cert: Path,
        extra_images: Sequence[Path] = (),
        timeout: float = 180.0,
        progress: Callable[[str], None] = lambda _message: None,
    ) -> None:
        self.binaries = binaries
        self.images = images
        self.directory = directory
        self.ca_cert = ca_cert
        self.extra_images = list(extra_images)
        self.timeout = timeout
        self.progress = progress
        self.addresses: NodeAddresses | None = None
        self.cgroup_name = f"punctual-node-{uuid.uuid4().hex[:12]}"
        self._holder: processes.ManagedProcess | None = None
        self._daemons: list[processes.ManagedProcess] = []
        self._containerd: processes.ManagedProcess | None = None
        self._kubeconfig = Path()
        self._net_inode: int | None = None
        self._mnt_inode: int | None = None

    # -- where things are ---------------------------------------------------------------------

    @property
    def address(self) -> NodeAddresses:
        if self.addresses is None:
            raise RuntimeError("the node is not prepared")
        return self.addresses

    @property
    def containerd_socket(self) -> Path:
        """In the node's own ``/run/containerd`` (a tmpfs of its mount namespace): short enough
        for a socket's path however deep ``directory`` is, and never another containerd's."""
        return Path("/run/containerd/containerd.sock")

    @property
    def launched(self) -> list[processes.ManagedProcess]:
        return [*([self._holder] if self._holder else []), *self._daemons]

    def _in_node(self, argv: Sequence[str]) -> list[str]:
        assert self._holder is not None
        return ["nsenter", f"--target={self._holder.pid}", "--net", "--mount", "--", *argv]

    def node_run(self, *argv: str, check: bool = True) -> "subprocess.CompletedProcess[str]":
        """Runs a command in the node's namespaces (``ip route``, ``iptables-save``, ...)."""
        return _run(*self._in_node(argv), check=check)

    # -- preparing: namespaces, link, cgroups ---------------------------------------------------

    def prepare(self) -> NodeAddresses:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._start_holder()
        with BLOCK_LOCK.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            taken = _routed_blocks()
            free = [block for block in BLOCKS if block not in taken]
            if not free:
                raise RuntimeError(f"every block 10.{BLOCKS[0]}-{BLOCKS[-1]}.0.0/16 is routed")
            self.addresses = addresses = NodeAddresses(free[0])
            self._link(addresses)
        self._make_cgroups()
        return addresses

    def _start_holder(self) -> None:
        # The holder makes the mounts private to the node, then only keeps the namespaces open.
        script = (
            "set -e; mkdir -p /run/containerd /var/log/containers /var/lib/kubelet $0/kubelet; "
            "mount -t tmpfs -o mode=0711 punctual-node /run/containerd; "
            "mount -t tmpfs -o mode=0755 punctual-node /var/log/containers; "
            "mount --bind $0/kubelet /var/lib/kubelet; "
            "touch $0/holder-ready; exec sleep infinity"
        )
        ready = self.directory / "holder-ready"
        ready.unlink(missing_ok=True)
        self._holder = holder = processes.start(
            "node-namespaces",
            [
                "unshare",
                "--net",
                "--mount",
                "--propagation=private",
                "sh",
                "-c",
                script,
                str(self.directory),
            ],
            self.directory,
        )
        processes.wait_until(holder, ready.exists, "the node's namespaces exist", 10)
        self._net_inode = _ns_inode(holder.pid, "net")
        self._mnt_inode = _ns_inode(holder.pid, "mnt")

    def _link(self, addresses: NodeAddresses) -> None:
        assert self._holder is not None
        host = addresses.host_interface
        _run(
            "ip", "link", "add", host, "type", "veth",
            "peer", "name", "eth0", "netns", str(self._holder.pid),
        )  # fmt: skip
        _run("ip", "address", "add", f"{addresses.host_address}/30", "dev", host)
        _run("ip", "link", "set", host, "up")
        _run("ip", "route", "add", addresses.cidr, "via", addresses.node_address, "dev", host)
        for command in (
            ["ip", "address", "add", f"{addresses.node_address}/30", "dev", "eth0"],
            ["ip", "link", "set", "eth0", "up"],
            ["ip", "link", "set", "lo", "up"],
            # Per network namespace: pods <-> the link; bridged pod traffic through iptables so
            # a Service answered by a pod on the same bridge is translated back.
            ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"],
            ["sysctl", "-q", "-w", "net.bridge.bridge-nf-call-iptables=1"],
        ):
            self.node_run(*command)

    def _make_cgroups(self) -> None:
        for hierarchy in _cgroup_hierarchies(unified=False):
            cgroup = hierarchy / self.cgroup_name
            cgroup.mkdir(exist_ok=True)
            # A new cpuset is empty (no task may join it) until given its parent's CPUs and nodes.
            for name in ("cpuset.cpus", "cpuset.mems"):
                if (hierarchy / name).exists():
                    (cgroup / name).write_text((hierarchy / name).read_text())

    # -- starting the daemons -----------------------------------------------------------------

    def start(self) -> None:
        raise RuntimeError("RealNode is started by LocalCluster: prepare(), then run(kubeconfig)")

    def run(self, kubeconfig: Path, api_ready: Callable[[], bool]) -> None:
        """Starts containerd, the kubelet, kube-proxy and CoreDNS against ``kubeconfig``;
        returns when ``api_ready()`` (the Node is Ready) and every health check answers."""
        self._kubeconfig = kubeconfig
        started = time.monotonic()

        def step(message: str) -> None:
            self.progress(f"{message} ({time.monotonic() - started:.1f}s)")

        containerd = self._start_containerd()
        processes.wait_until(containerd, self._containerd_answers, "containerd answers", 30)
        step(f"containerd answers on {self.containerd_socket} (in the node's mount namespace)")
        for archive in [*self.images.archives, *self.extra_images]:
            self.load_image(archive)
        step("loaded images: " + ", ".join(path.name for path in self.images.archives))
        kubelet = self._start("kubelet", [str(self.binaries.kubelet), *self._kubelet_args()])
        proxy = self._start("kube-proxy", [str(self.binaries.kube_proxy), *self._kube_proxy_args()])
        dns = self._start("coredns", [str(self.binaries.coredns), f"-conf={self._corefile()}"])
        node_address = self.address.node_address
        for process, probe, until in [
            (kubelet, api_ready, f"node {NODE_NAME} is Ready"),
            (
                proxy,
                _http_ok(f"http://{node_address}:{KUBE_PROXY_HEALTH_PORT}/healthz"),
                "kube-proxy is healthy",
            ),
            (
                dns,
                _http_ok(f"http://{node_address}:{COREDNS_READY_PORT}/ready"),
                "CoreDNS is ready",
            ),
        ]:
            processes.wait_until(process, probe, until, self.timeout)
            step(f"{process.name}: {until}")

    def _start(self, name: str, argv: Sequence[str]) -> processes.ManagedProcess:
        process = processes.start(name, self._in_node(argv), self.directory)
        self._daemons.append(process)
        return process

    def _containerd_answers(self) -> bool:
        return self._ctr("version", check=False).returncode == 0

    def _ctr(self, *args: str, check: bool = True) -> "subprocess.CompletedProcess[str]":
        return self.node_run(
            "ctr", f"--address={self.containerd_socket}", "--namespace=k8s.io", *args, check=check
        )

    def load_image(self, archive: Path) -> None:
        """Imports an OCI archive into the node's containerd: pods then use its image (by the
        name the archive carries) with ``imagePullPolicy: IfNotPresent``."""
        self._ctr("images", "import", "--no-unpack", str(archive))

    def _start_containerd(self) -> processes.ManagedProcess:
        root = self.directory / "containerd"
        cni = self.directory / "cni"
        (cni / "net.d").mkdir(parents=True, exist_ok=True)
        (cni / "net.d" / "10-punctual.conflist").write_text(json.dumps(self._cni_config()))
        config = root / "config.toml"
        root.mkdir(parents=True, exist_ok=True)
        config.write_text(
            f"""version = 2
root = "{root / "root"}"
state = "{root / "state"}"
disabled_plugins = ["io.containerd.internal.v1.tracing", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "{self.containerd_socket}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{root / "opt"}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{NodeImages.PAUSE}"
  # No CAP_SYS_RESOURCE on these machines: runc may not lower a sandbox's oom_score_adj.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{root / "runc"}"

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{cni / "net.d"}"
"""
        )
        return self._start("containerd", ["containerd", f"--config={config}"])

    def _cni_config(self) -> dict[str, object]:
        addresses = self.address
        return {
            "cniVersion": "1.0.0",
            "name": "punctual",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": "cni0",
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [
                            [{"subnet": addresses.pod_cidr, "gateway": addresses.pod_gateway}]
                        ],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(self.directory / "cni" / "ipam"),
                    },
                }
            ],
        }

    def _kubelet_args(self) -> list[str]:
        addresses = self.address
        config = self.directory / "kubelet.yaml"
        resolv = self.directory / "resolv.conf"
        # Pods with dnsPolicy Default get this: no nameserver off the machine.
        resolv.write_text(f"nameserver {addresses.node_address}\n")
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "kubelet.config.k8s.io/v1beta1",
                    "kind": "KubeletConfiguration",
                    "address": addresses.node_address,
                    "port": KUBELET_PORT,
                    "readOnlyPort": 0,
                    "healthzBindAddress": "127.0.0.1",
                    "containerRuntimeEndpoint": f"unix://{self.containerd_socket}",
                    "cgroupDriver": "cgroupfs",
                    "cgroupRoot": f"/{self.cgroup_name}",
                    # cgroup v1 on these machines; the kubelet refuses it unless told.
                    "failCgroupV1": False,
                    "clusterDNS": [addresses.node_address],
                    "clusterDomain": CLUSTER_DOMAIN,
                    "resolvConf": str(resolv),
                    "podLogsDir": str(self.directory / "pod-logs"),
                    "authentication": {
                        "anonymous": {"enabled": False},
                        "webhook": {"enabled": True},
                        "x509": {"clientCAFile": str(self.ca_cert)},
                    },
                    "authorization": {"mode": "Webhook"},
                    "failSwapOn": False,
                    "evictionHard": {
                        "memory.available": "100Mi",
                        "nodefs.available": "1%",
                        "imagefs.available": "1%",
                    },
                    "imageGCHighThresholdPercent": 100,
                    "imageGCLowThresholdPercent": 99,
                    "serializeImagePulls": False,
                    "rotateCertificates": False,
                    "nodeStatusReportFrequency": "10s",
                    "syncFrequency": "10s",
                    "fileCheckFrequency": "10s",
                }
            )
        )
        return [
            f"--config={config}",
            f"--kubeconfig={self._kubeconfig}",
            # /var/lib/kubelet is directory/kubelet, bound there in the node's mount namespace:
            # the kubelet's sockets need a short path, however deep directory is.
            "--root-dir=/var/lib/kubelet",
            f"--hostname-override={NODE_NAME}",
            f"--node-ip={addresses.node_address}",
        ]

    def _kube_proxy_args(self) -> list[str]:
        addresses = self.address
        return [
            f"--kubeconfig={self._kubeconfig}",
            f"--hostname-override={NODE_NAME}",
            "--proxy-mode=iptables",
            f"--cluster-cidr={addresses.pod_cidr}",
            f"--healthz-bind-address={addresses.node_address}:{KUBE_PROXY_HEALTH_PORT}",
            "--metrics-bind-address=127.0.0.1:10249",
            # Machine-wide sysctls: leave them as they are.
            "--conntrack-max-per-core=0",
            "--conntrack-tcp-timeout-established=0",
            "--conntrack-tcp-timeout-close-wait=0",
        ]

    def _corefile(self) -> Path:
        addresses = self.address
        corefile = self.directory / "Corefile"
        corefile.write_text(
            f""".:53 {{
    bind {addresses.node_address}
    errors
    health {addresses.node_address}:8080
    ready {addresses.node_address}:{COREDNS_READY_PORT}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {self._kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 5
}}
"""
        )
        return corefile

    # -- stopping, and what is left -----------------------------------------------------------

    def stop(self) -> None:
        """Stops every daemon, kills every process left in the node's namespaces and cgroups
        (shims, containers), then removes the cgroups and the link."""
        processes.stop_processes(reversed(self._daemons), STOP_GRACE_SECONDS)
        self._kill_leftover_processes()
        if self._holder is not None:
            self._holder.stop()
        self._kill_leftover_processes()
        self._remove_cgroups()
        if self.addresses is not None:
            _run("ip", "link", "delete", self.addresses.host_interface, check=False)

    def _node_pids(self) -> list[int]:
        """Processes in the node's network or mount namespace or under its cgroups."""
        pids = set(self._cgroup_pids())
        inodes = {("net", self._net_inode), ("mnt", self._mnt_inode)}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                for kind, inode in inodes:
                    if inode is not None and _ns_inode(entry.name, kind) == inode:
                        pids.add(int(entry.name))
        return sorted(processes.alive(pids))

    def _cgroup_pids(self) -> list[int]:
        pids: list[int] = []
        for hierarchy in _cgroup_hierarchies():
            cgroup = hierarchy / self.cgroup_name
            for procs in cgroup.rglob("cgroup.procs") if cgroup.exists() else []:
                with contextlib.suppress(OSError, ValueError):
                    pids.extend(int(pid) for pid in procs.read_text().split())
        return pids

    def _kill_leftover_processes(self) -> None:
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while (pids := self._node_pids()) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)

    def _cgroups(self) -> list[Path]:
        """The node's cgroups, deepest first."""
        found: list[Path] = []
        for hierarchy in _cgroup_hierarchies():
            cgroup = hierarchy / self.cgroup_name
            if cgroup.is_dir():
                found.extend(path for path in cgroup.rglob("*") if path.is_dir())
                found.append(cgroup)
        return sorted(found, key=lambda path: len(path.parts), reverse=True)

    def _remove_cgroups(self) -> None:
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while (cgroups := self._cgroups()) and time.monotonic() < deadline:
            for cgroup in cgroups:
                with contextlib.suppress(OSError):
                    cgroup.rmdir()
            time.sleep(0.05)

    def leftovers(self) -> list[str]:
        """What this node made that still exists (empty after ``stop()``)."""
        left = [f"process {pid}" for pid in self._node_pids()]
        left += [f"cgroup {path}" for path in self._cgroups()]
        if self.addresses is not None:
            interface = self.addresses.host_interface
            if _run("ip", "link", "show", interface, check=False).returncode == 0:
                left.append(f"interface {interface}")
            routes = _run("ip", "-4", "route", "show", self.addresses.cidr).stdout.strip()
            if routes:
                left.append(f"route {routes}")
        mountinfo = Path("/proc/self/mountinfo").read_text()
        left += [
            f"mount {line.split()[4]}"
            for line in mountinfo.splitlines()
            if line.split()[4].startswith(str(self.directory))
        ]
        return left


# The node's addresses are on this machine: never through a proxy from the environment.
_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _http_ok(url: str) -> Callable[[], bool]:
    def probe() -> bool:
        with _direct.open(url, timeout=2) as reply:
            return bool(reply.status == 200)

    return probe
