"""The kubernetes-asyncio client: from $KUBECONFIG (or ~/.kube/config), else in-cluster."""

import os
from pathlib import Path

from kubernetes_asyncio import client, config

KEEPALIVE_SECONDS = 75.0
"""How long an idle connection to the API server stays in the pool (aiohttp's default: 15 s).

A job target that fires every minute would otherwise open a new TLS connection for each Job,
at the very instant the Job is due: the handshakes were the largest share of the operator's CPU
time at a minute boundary. The API server closes idle connections after 90 s; closing ours
first keeps a request from landing on a connection the server is closing.
"""


async def connect() -> client.ApiClient:
    kubeconfig = _kubeconfig()
    if kubeconfig is not None:
        api = await config.new_client_from_config(config_file=kubeconfig)
    else:
        configuration = client.Configuration()
        config.load_incluster_config(client_configuration=configuration)
        api = client.ApiClient(configuration=configuration)
    _keep_connections(api)
    return api


def _keep_connections(api: client.ApiClient) -> None:
    # kubernetes-asyncio does not expose the connector's keep-alive; set it where aiohttp keeps
    # it, and leave the default should either library change shape.
    connector = getattr(getattr(api.rest_client, "pool_manager", None), "connector", None)
    if connector is not None and hasattr(connector, "_keepalive_timeout"):
        connector._keepalive_timeout = KEEPALIVE_SECONDS


def _kubeconfig() -> str | None:
    path = Path(os.environ.get("KUBECONFIG", Path.home() / ".kube" / "config"))
    return str(path) if path.exists() else None
