"""The kubeconfigs of a local cluster, self-contained, the certificates embedded: the admin's,
and the API server's own for calling admission webhooks."""

import base64
from pathlib import Path

import yaml

from localcluster.certs import ClusterCerts

CONTEXT = "punctual-local"


def _embedded(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode("ascii")


def write_kubeconfig(path: Path, server: str, certs: ClusterCerts) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CONTEXT,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": _embedded(certs.ca_cert),
                },
            }
        ],
        "users": [
            {
                "name": "admin",
                "user": {
                    "client-certificate-data": _embedded(certs.admin_cert),
                    "client-key-data": _embedded(certs.admin_key),
                },
            }
        ],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": "admin", "namespace": "default"},
            }
        ],
        "current-context": CONTEXT,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


def write_webhook_client_config(directory: Path, certs: ClusterCerts) -> Path:
    """The API server's admission configuration (``--admission-control-config-file``): it
    presents ``certs.webhook_client_cert`` to every admission webhook that asks for a client
    certificate (the kubeconfig's user ``*``: any webhook host). A webhook that does not ask
    sees no difference."""
    kubeconfig = directory / "webhook-client.kubeconfig"
    client = {
        "client-certificate-data": _embedded(certs.webhook_client_cert),
        "client-key-data": _embedded(certs.webhook_client_key),
    }
    kubeconfig.write_text(
        yaml.safe_dump(
            {"apiVersion": "v1", "kind": "Config", "users": [{"name": "*", "user": client}]},
            sort_keys=False,
        )
    )
    kubeconfig.chmod(0o600)
    webhooks = {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "WebhookAdmissionConfiguration",
        "kubeConfigFile": str(kubeconfig),
    }
    admission = directory / "admission.yaml"
    admission.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "apiserver.config.k8s.io/v1",
                "kind": "AdmissionConfiguration",
                "plugins": [
                    {"name": name, "configuration": webhooks}
                    for name in ("ValidatingAdmissionWebhook", "MutatingAdmissionWebhook")
                ],
            },
            sort_keys=False,
        )
    )
    return admission
