"""The webhook's serving certificate issued by a real cert-manager, end to end on the real node.

cert-manager's controllers and CA injector (``hack/cert-manager``: built from its Go module) run
as processes against the local control plane, on its real CRDs (``hack/build-chart-crds.sh``).
The chart is installed with ``webhook.certManager.enabled`` as release ``batch-scheduling`` in
namespace ``platform-batch-scheduling-prod``: its Service's name within the namespace,
``batch-scheduling-punctual-webhook.platform-batch-scheduling-prod.svc``, is 68 bytes, past the
64 cert-manager allows a common name, so a Certificate that set it would never be issued and the
operator's pods would wait for the missing Secret forever. Here the install completes (every
Deployment Available, its pods having mounted the Secret), the Certificate is Ready, cainjector
has put its CA into the ValidatingWebhookConfiguration, and the API server calls the webhook
through its Service over TLS with that certificate: an invalid ScheduledJob is refused with the
operator's message, a valid one admitted.
"""

import base64
import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from chart_harness import eventually, install_crds, third_party_crds
from cryptography import x509
from operator_harness import scheduled_job

from localcluster import LocalCluster, processes
from localcluster.binaries import locate_cert_manager
from localcluster.helm_release import LOCAL_VALUES, HelmRelease, local_image_archives, merged

pytestmark = [pytest.mark.e2e, pytest.mark.real_node]

RELEASE = "batch-scheduling"
NAMESPACE = "platform-batch-scheduling-prod"
FULLNAME = f"{RELEASE}-punctual"
SERVICE = f"{FULLNAME}-webhook"
SERVICE_DNS_NAME = f"{SERVICE}.{NAMESPACE}.svc"
SECRET = f"{FULLNAME}-webhook-tls"
VALUES = merged(LOCAL_VALUES, {"webhook": {"enabled": True, "certManager": {"enabled": True}}})
ISSUED_TIMEOUT = 120.0
HTTP = {"http": {"url": "http://127.0.0.1:9/never-called"}}
"""A valid target that is never called: the job runs every hour."""


@pytest.fixture(scope="module")
def cert_manager(real_node_cluster: LocalCluster) -> Iterator[None]:
    """cert-manager's CRDs installed, its controllers and CA injector running."""
    install_crds(
        real_node_cluster,
        [crd for crd in third_party_crds() if crd["spec"]["group"].endswith("cert-manager.io")],
    )
    program = str(locate_cert_manager())
    kubeconfig = str(real_node_cluster.kubeconfig)
    started = [
        processes.start(
            f"cert-manager-{part}",
            [program, part, "--kubeconfig", kubeconfig],
            real_node_cluster.run_dir,
        )
        for part in ("controller", "cainjector")
    ]
    yield
    processes.stop_processes(started)


@pytest.fixture(scope="module")
def release(
    real_node_cluster: LocalCluster, cert_manager: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HelmRelease]:
    for archive in local_image_archives():
        real_node_cluster.load_image(archive)
    installed = HelmRelease(
        real_node_cluster, tmp_path_factory.mktemp("helm"), name=RELEASE, namespace=NAMESPACE
    )
    installed.install(VALUES)
    yield installed
    installed.uninstall()


def get(cluster: LocalCluster, *what: str) -> dict[str, Any]:
    found = cluster.kubectl("get", *what, f"--namespace={NAMESPACE}", "-o", "json")
    return dict(json.loads(found.stdout))


def test_the_service_name_is_past_what_a_common_name_may_hold() -> None:
    assert len(SERVICE_DNS_NAME.encode()) == 68


def ready_certificate(cluster: LocalCluster) -> dict[str, Any] | None:
    """The chart's Certificate, once its Ready condition is True."""
    certificate = get(cluster, "certificate", SERVICE)
    conditions = certificate.get("status", {}).get("conditions", [])
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
    return certificate if ready else None


@pytest.fixture(scope="module")
def ca_bundles(real_node_cluster: LocalCluster, release: HelmRelease) -> list[str]:
    """The caBundle of each webhook of the chart's configuration, once cainjector filled them."""

    def injected() -> list[str] | None:
        configuration = real_node_cluster.kubectl(
            "get", "validatingwebhookconfiguration", FULLNAME, "-o", "json"
        )
        hooks = json.loads(configuration.stdout)["webhooks"]
        bundles = [hook["clientConfig"].get("caBundle", "") for hook in hooks]
        return bundles if all(bundles) else None

    return eventually(injected, timeout=ISSUED_TIMEOUT, what="a caBundle from cainjector")


def test_the_certificate_is_ready_and_its_secret_holds_it_for_the_services_names(
    real_node_cluster: LocalCluster, release: HelmRelease
) -> None:
    certificate = eventually(
        lambda: ready_certificate(real_node_cluster),
        timeout=ISSUED_TIMEOUT,
        what=f"a Ready Certificate {SERVICE}",
    )
    secret = get(real_node_cluster, "secret", SECRET)
    issued = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    names = issued.extensions.get_extension_for_class(x509.SubjectAlternativeName).value

    assert certificate["spec"]["secretName"] == SECRET
    assert names.get_values_for_type(x509.DNSName) == [
        SERVICE,
        f"{SERVICE}.{NAMESPACE}",
        SERVICE_DNS_NAME,
    ]
    assert issued.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME) == []
    assert secret["metadata"]["annotations"]["cert-manager.io/certificate-name"] == SERVICE


def test_cainjector_gave_the_webhook_configuration_the_certificates_ca(
    real_node_cluster: LocalCluster, ca_bundles: list[str]
) -> None:
    ca = get(real_node_cluster, "secret", SECRET)["data"]["ca.crt"]

    assert set(ca_bundles) == {ca}


@pytest.mark.usefixtures("ca_bundles")
def test_the_api_server_calls_the_webhook_over_tls_with_that_certificate(
    real_node_cluster: LocalCluster,
) -> None:
    def applied(name: str, spec: dict[str, Any]) -> "subprocess.CompletedProcess[str]":
        job = scheduled_job(NAMESPACE, name, spec)
        return real_node_cluster.kubectl("apply", "-f", "-", input=json.dumps(job), check=False)

    refused = applied("invalid", {"schedule": "61 * * * *", "target": HTTP})
    admitted = applied("valid", {"schedule": "0 * * * *", "target": HTTP})

    assert refused.returncode != 0
    assert "denied the request: spec.schedule: minute" in refused.stderr, refused.stderr
    assert admitted.returncode == 0, admitted.stderr
