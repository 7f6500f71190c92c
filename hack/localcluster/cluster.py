"""``LocalCluster``: a real Kubernetes control plane as plain processes on 127.0.0.1.

Like controller-runtime's envtest, but with the controllers running too: etcd, kube-apiserver,
kube-controller-manager (so CronJobs create Jobs, namespaces get deleted, service accounts get
created), kube-scheduler and, with ``kwok=True``, a fake node on which pods run and complete;
with ``real_node=True`` a real node too (``localcluster.node``: containerd, the kubelet,
kube-proxy and CoreDNS), whose containers really run.

The context manager is ready when the API server answers ``/readyz``, the controller manager and
scheduler answer ``/healthz``, namespace ``default`` has its ``default`` ServiceAccount and the
nodes (if any) are Ready. It stops everything it started on the way out, however that happens.
"""

import contextlib
import os
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from localcluster import certs as pki
from localcluster import kwok as kwok_node
from localcluster import processes
from localcluster.api import ApiClient
from localcluster.binaries import Binaries, NodeImages, locate_binaries, locate_node_images
from localcluster.etcd import Etcd
from localcluster.kubeconfig import write_kubeconfig, write_webhook_client_config
from localcluster.node import NODE_NAME, RealNode
from localcluster.ports import LOOPBACK, free_port

# kwok's pods are never contacted, so every cluster without a real node may share one range; a
# real node's Services are in its own block (localcluster.node).
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
APISERVER_STOP_GRACE_SECONDS = 3.0
NODE_MONITOR_GRACE_SECONDS = 120
"""How long the node lifecycle controller goes without seeing a node's heartbeat (its Lease)
before it marks the node NotReady and its pods not ready (the default is 50 s). Tests stop the
API server for 20 s (``test_apiserver_restart``), and after it is back the controller manager's
watches reconnect with client-go's backoff (up to 30 s), so on two busy cores it saw no renewal
of the kwok node's Lease for 51 s across such an outage: the node went NotReady for a moment and
the pods on it stayed not ready (kwok, unlike a kubelet, never reports them ready again; see
``kwok-stages.yaml``). Two minutes covers the outage, the restart and the reconnection."""
DEFAULT_TIMEOUT = float(os.environ.get("PUNCTUAL_CLUSTER_START_TIMEOUT", "180"))

Progress = Callable[[str], None]


class KubectlError(subprocess.CalledProcessError):
    def __str__(self) -> str:
        return f"{super().__str__()}\n{self.stderr}".rstrip()


@dataclass(frozen=True)
class _Starting:
    """A started process, its readiness probe and what the probe checks, in words."""

    process: processes.ManagedProcess
    probe: Callable[[], bool]
    until: str


def _quiet(_message: str) -> None:
    pass


def _insecure_context() -> ssl.SSLContext:
    # The controller manager and the scheduler serve /healthz with a self-signed certificate they
    # make up at start; there is nothing to verify it against.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _healthz(port: int) -> Callable[[], bool]:
    context = _insecure_context()

    def probe() -> bool:
        url = f"https://{LOOPBACK}:{port}/healthz"
        with urllib.request.urlopen(url, timeout=2, context=context) as reply:
            return bool(reply.read().decode().strip() == "ok")

    return probe


class LocalCluster(processes.Service):
    """A control plane in ``run_dir`` (a temporary folder, removed on exit, if not given).

    Process logs, the PKI and the admin kubeconfig are in ``run_dir``; the kubeconfig is
    ``self.kubeconfig``. With ``real_node=True`` the node loads the pause and workload images and
    then each OCI archive of ``images`` (``load_image`` loads more later); the API server then
    listens on the node's ``host_address`` rather than on 127.0.0.1, and a kwok node (if any) is
    tainted ``kwok.x-k8s.io/node=fake:NoSchedule`` so that only pods tolerating it land there.
    """

    def __init__(
        self,
        *,
        kwok: bool = True,
        real_node: bool = False,
        images: Sequence[Path] = (),
        run_dir: Path | None = None,
        binaries: Binaries | None = None,
        node_images: NodeImages | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        progress: Progress = _quiet,
    ) -> None:
        self.with_kwok = kwok
        self.with_real_node = real_node
        self._extra_images = list(images)
        self._node_images = node_images
        self._node: RealNode | None = None
        self._given_run_dir = run_dir
        self._binaries = binaries
        self.timeout = timeout
        self.progress = progress
        self.run_dir = Path()
        self.kubeconfig = Path()
        self.apiserver_port = 0
        self._etcd: Etcd | None = None
        self._certs: pki.ClusterCerts | None = None
        self._api: ApiClient | None = None
        self._extra_ports: list[int] = []
        # Stopped in waves, clients before the API server before etcd, so nobody spends its
        # grace period retrying a server that is already gone.
        self._clients: list[processes.ManagedProcess] = []
        self._apiserver: processes.ManagedProcess | None = None
        self._stopped = False

    @property
    def binaries(self) -> Binaries:
        if self._binaries is None:
            self._binaries = locate_binaries()
        return self._binaries

    @property
    def node(self) -> RealNode:
        """The real node (``real_node=True``): its addresses, ``load_image``, ``leftovers``."""
        if self._node is None:
            raise RuntimeError("this cluster has no real node (LocalCluster(real_node=True))")
        return self._node

    @property
    def listen_address(self) -> str:
        """Where the API server listens: pods reach it there (and via ``kubernetes``)."""
        return self._node.address.host_address if self._node is not None else LOOPBACK

    @property
    def server(self) -> str:
        return f"https://{self.listen_address}:{self.apiserver_port}"

    def load_image(self, archive: Path) -> None:
        """Loads an OCI archive into the real node: pods use its image with
        ``imagePullPolicy: IfNotPresent``, by the name the archive carries."""
        self.node.load_image(archive)

    @property
    def api(self) -> ApiClient:
        if self._api is None:
            raise RuntimeError("the cluster is not started")
        return self._api

    @property
    def env(self) -> dict[str, str]:
        """The environment of a child process that should talk to this cluster."""
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    @property
    def launched(self) -> list[processes.ManagedProcess]:
        started = [self._etcd.process if self._etcd else None, self._apiserver, *self._clients]
        node = self._node.launched if self._node is not None else []
        return [process for process in [*started, *node] if process is not None]

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self.launched]

    @property
    def ports(self) -> list[int]:
        etcd_ports = self._etcd.ports if self._etcd else []
        return [*etcd_ports, self.apiserver_port, *self._extra_ports]

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = 60,
    ) -> "subprocess.CompletedProcess[str]":
        """Runs the kubectl we built against this cluster; raises with its stderr if it fails."""
        result = subprocess.run(
            [str(self.binaries.kubectl), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            raise KubectlError(result.returncode, result.args, result.stdout, result.stderr)
        return result

    def start(self) -> None:
        processes.install_signal_handlers()
        started = time.monotonic()

        def step(message: str) -> None:
            self.progress(f"{message} ({time.monotonic() - started:.1f}s)")

        binaries = self.binaries
        if self._given_run_dir is None:
            self.run_dir = Path(tempfile.mkdtemp(prefix="punctual-cluster-"))
        else:
            self.run_dir = self._given_run_dir
            self.run_dir.mkdir(parents=True, exist_ok=True)
        serving_addresses: list[str] = []
        if self.with_real_node:
            node = self._node = RealNode(
                binaries=binaries,
                images=self._node_images or locate_node_images(progress=self.progress),
                directory=self.run_dir / "node",
                ca_cert=pki.ClusterCerts(self.run_dir / "pki").ca_cert,
                extra_images=self._extra_images,
                timeout=self.timeout,
                progress=self.progress,
            )
            addresses = node.prepare()
            serving_addresses = [addresses.host_address, addresses.kubernetes_service_address]
            step(f"the node's namespaces and link are up ({addresses.cidr})")
        certs = self._certs = pki.generate(
            self.run_dir / "pki", serving_addresses=serving_addresses
        )
        self.apiserver_port = free_port()
        self.kubeconfig = write_kubeconfig(self.run_dir / "kubeconfig", self.server, certs)

        self._etcd = Etcd(binaries, self.run_dir)
        self._etcd.start()
        step(f"etcd is healthy on {self._etcd.url}")

        self._apiserver = self._start_apiserver(binaries, certs, self._etcd.url)
        api = self._api = ApiClient(self.server, certs)
        self._wait_for_apiserver()
        step(f"kube-apiserver is ready on {self.server}")

        # Started together, awaited one after the other: their start-ups overlap.
        controller_manager = self._start_serving_client(
            "kube-controller-manager",
            [str(binaries.kube_controller_manager), *self._controller_manager_args(certs)],
        )
        starting = [
            controller_manager,
            self._start_serving_client(
                "kube-scheduler", [str(binaries.kube_scheduler), *self._scheduler_args()]
            ),
        ]
        if self.with_kwok:
            starting.append(self._start_kwok(binaries, api))
        for component in starting:
            processes.wait_until(component.process, component.probe, component.until, self.timeout)
            step(f"{component.process.name}: {component.until}")

        processes.wait_until(
            controller_manager.process,
            lambda: api.exists("/api/v1/namespaces/default/serviceaccounts/default"),
            "ServiceAccount default/default exists",
            self.timeout,
        )
        if self._node is not None:
            node_path = f"/api/v1/nodes/{NODE_NAME}"
            self._node.run(self.kubeconfig, lambda: kwok_node.node_is_ready(api.get(node_path)))
        step("the cluster is ready")

    def _wait_for_apiserver(self) -> None:
        assert self._apiserver is not None
        api = self.api
        processes.wait_until(
            self._apiserver,
            lambda: api.request_text("GET", "/readyz") == "ok",
            f"GET {self.server}/readyz answers ok",
            self.timeout,
        )

    # -- restarting the API server alone (failure tests) ---------------------------------------

    def stop_apiserver(self, grace: float = processes.DEFAULT_GRACE_SECONDS) -> None:
        """Stop kube-apiserver alone (SIGTERM, then SIGKILL after ``grace``): etcd, the
        controllers and every client stay up and see connections refused on its port."""
        if self._apiserver is None or self._stopped:
            raise RuntimeError("the cluster is not started")
        self._apiserver.stop(grace)

    def start_apiserver(self) -> None:
        """Start kube-apiserver again after ``stop_apiserver``: the same port, flags, PKI and
        etcd (so every object is still there); returns once ``/readyz`` answers ok."""
        if self._apiserver is None or self._etcd is None or self._certs is None or self._stopped:
            raise RuntimeError("the cluster is not started")
        if not self._apiserver.stopped:
            raise RuntimeError("kube-apiserver is running: stop_apiserver() first")
        # Its log goes on in the same file: one story per component.
        self._apiserver = self._start_apiserver(self.binaries, self._certs, self._etcd.url)
        self._wait_for_apiserver()

    @contextlib.contextmanager
    def apiserver_down(self) -> Iterator[None]:
        """``with cluster.apiserver_down(): ...``: the block runs while kube-apiserver is stopped;
        it is started again (and ready) on the way out, however the block ends."""
        self.stop_apiserver()
        try:
            yield
        finally:
            self.start_apiserver()

    def _start_apiserver(
        self, binaries: Binaries, certs: pki.ClusterCerts, etcd_url: str
    ) -> processes.ManagedProcess:
        cert_dir = self.run_dir / "kube-apiserver"
        cert_dir.mkdir(exist_ok=True)
        admission = write_webhook_client_config(cert_dir, certs)
        return processes.start(
            "kube-apiserver",
            [
                str(binaries.kube_apiserver),
                f"--bind-address={self.listen_address}",
                f"--advertise-address={self.listen_address}",
                f"--secure-port={self.apiserver_port}",
                f"--cert-dir={cert_dir}",
                f"--etcd-servers={etcd_url}",
                f"--client-ca-file={certs.ca_cert}",
                f"--tls-cert-file={certs.serving_cert}",
                f"--tls-private-key-file={certs.serving_key}",
                f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
                f"--service-account-key-file={certs.service_account_public_key}",
                f"--service-account-signing-key-file={certs.service_account_key}",
                "--authorization-mode=Node,RBAC",
                f"--service-cluster-ip-range={self.service_cidr}",
                "--allow-privileged=true",
                *self._apiserver_node_args(certs),
                # Published in kube-system/extension-apiserver-authentication: without it the
                # controller manager and the scheduler complain about a missing CA bundle. Only a
                # client certificate named front-proxy-client may assert identities by header.
                f"--requestheader-client-ca-file={certs.ca_cert}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                "--profiling=false",
                # A client certificate for admission webhooks that ask for one.
                f"--admission-control-config-file={admission}",
            ],
            self.run_dir,
        )

    @property
    def service_cidr(self) -> str:
        return (
            self._node.address.service_cidr if self._node is not None else SERVICE_CLUSTER_IP_RANGE
        )

    def _apiserver_node_args(self, certs: pki.ClusterCerts) -> list[str]:
        if self._node is None:
            # The API server may not advertise a loopback address in the `kubernetes` Endpoints
            # (it logs a validation error every 10 s); without a real node no in-cluster client
            # needs them.
            return ["--endpoint-reconciler-type=none"]
        return [
            # kubectl logs/exec: the kubelet trusts our CA's admin certificate.
            f"--kubelet-client-certificate={certs.admin_cert}",
            f"--kubelet-client-key={certs.admin_key}",
            "--kubelet-preferred-address-types=InternalIP",
            # Webhooks and aggregated APIs by their endpoints (pod addresses, routed to the
            # node) rather than by ClusterIP, which only the node's kube-proxy translates.
            "--enable-aggregator-routing=true",
        ]

    def _start_serving_client(self, name: str, argv: Sequence[str]) -> _Starting:
        """Starts the controller manager or the scheduler; returns it and its readiness probe."""
        port = free_port()
        self._extra_ports.append(port)
        cert_dir = self.run_dir / name
        cert_dir.mkdir(exist_ok=True)
        # A secure port of their own (the defaults would collide with a second cluster), and the
        # admin kubeconfig for delegated authentication and authorization, which they would
        # otherwise look for in an in-cluster configuration.
        process = self._start_client(
            name,
            [
                *argv,
                f"--bind-address={LOOPBACK}",
                f"--secure-port={port}",
                f"--cert-dir={cert_dir}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
            ],
        )
        return _Starting(
            process, _healthz(port), f"GET https://{LOOPBACK}:{port}/healthz answers ok"
        )

    def _start_kwok(self, binaries: Binaries, api: ApiClient) -> _Starting:
        api.post("/api/v1/nodes", kwok_node.fake_node(tainted=self.with_real_node))
        port = free_port()
        self._extra_ports.append(port)
        process = self._start_client(
            "kwok", [str(binaries.kwok), *kwok_node.kwok_args(self.kubeconfig, port)]
        )
        node_path = f"/api/v1/nodes/{kwok_node.FAKE_NODE_NAME}"
        return _Starting(
            process,
            lambda: kwok_node.node_is_ready(api.get(node_path)),
            f"node {kwok_node.FAKE_NODE_NAME} is Ready",
        )

    def _controller_manager_args(self, certs: pki.ClusterCerts) -> list[str]:
        return [
            f"--kubeconfig={self.kubeconfig}",
            "--controllers=*",
            "--leader-elect=false",
            "--use-service-account-credentials=false",
            f"--service-account-private-key-file={certs.service_account_key}",
            f"--root-ca-file={certs.ca_cert}",
            f"--cluster-signing-cert-file={certs.ca_cert}",
            f"--cluster-signing-key-file={certs.ca_key}",
            f"--service-cluster-ip-range={self.service_cidr}",
            "--profiling=false",
            f"--node-monitor-grace-period={NODE_MONITOR_GRACE_SECONDS}s",
        ]

    def _scheduler_args(self) -> list[str]:
        config = self.run_dir / "kube-scheduler.yaml"
        config.write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\n"
            "kind: KubeSchedulerConfiguration\n"
            "clientConnection:\n"
            f"  kubeconfig: {self.kubeconfig}\n"
            "leaderElection:\n"
            "  leaderElect: false\n"
        )
        return [f"--config={config}", "--profiling=false"]

    def _start_client(self, name: str, argv: Sequence[str]) -> processes.ManagedProcess:
        process = processes.start(name, argv, self.run_dir)
        self._clients.append(process)
        return process

    def stop(self) -> None:
        """Stops everything started; ``launched``, ``pids`` and ``ports`` stay for inspection."""
        if self._stopped:
            return
        self._stopped = True
        if self._node is not None:
            self._node.stop()
        processes.stop_processes(reversed(self._clients))
        if self._apiserver is not None:
            # Beside a real node the API server hangs after "Shutting down kubernetes service
            # endpoint reconciler" until killed; its data dies with the run anyway.
            self._apiserver.stop(APISERVER_STOP_GRACE_SECONDS)
        if self._etcd is not None:
            self._etcd.stop()
        if self._given_run_dir is None and self.run_dir != Path():
            shutil.rmtree(self.run_dir, ignore_errors=True)
