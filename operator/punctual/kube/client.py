"""The kubernetes-asyncio client: from $KUBECONFIG (or ~/.kube/config), else in-cluster."""

import os
from pathlib import Path

from kubernetes_asyncio import client, config


async def connect() -> client.ApiClient:
    kubeconfig = _kubeconfig()
    if kubeconfig is not None:
        return await config.new_client_from_config(config_file=kubeconfig)
    configuration = client.Configuration()
    config.load_incluster_config(client_configuration=configuration)
    return client.ApiClient(configuration=configuration)


def _kubeconfig() -> str | None:
    path = Path(os.environ.get("KUBECONFIG", Path.home() / ".kube" / "config"))
    return str(path) if path.exists() else None
