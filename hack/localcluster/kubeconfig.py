"""The admin kubeconfig of a local cluster: self-contained, the certificates embedded."""

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
