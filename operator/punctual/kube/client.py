"""The kubernetes-asyncio client: from $KUBECONFIG (or ~/.kube/config), else in-cluster; and
the namespace kubectl would act in, from the same source."""

import json
import logging
import os
from pathlib import Path
from typing import Any, TypeAlias

import aiohttp
import aiohttp.helpers
import yaml
import yarl
from kubernetes_asyncio import client, config

logger = logging.getLogger(__name__)

ApiClient: TypeAlias = client.ApiClient
"""The API client, for the modules that pass one along without calling the client library."""

KEEPALIVE_SECONDS = 75.0
"""How long an idle connection to the API server stays in the pool (aiohttp's default: 15 s).

A job target that fires every minute would otherwise open a new TLS connection for each Job,
at the very instant the Job is due: the handshakes were the largest share of the operator's CPU
time at a minute boundary. The API server closes idle connections after 90 s; closing ours
first keeps a request from landing on a connection the server is closing.
"""

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
"""Where Kubernetes tells a pod its own namespace (mounted with the service account token)."""


class UnreadableKubeconfigError(Exception):
    """The kubeconfig exists but cannot be read: bad YAML, or a current context it lacks."""


async def connect() -> client.ApiClient:
    kubeconfig = _kubeconfig()
    if kubeconfig is not None:
        api = await config.new_client_from_config(config_file=kubeconfig)
    else:
        configuration = client.Configuration()
        config.load_incluster_config(client_configuration=configuration)
        api = client.ApiClient(configuration=configuration)
    _keep_connections(api)
    _read_environment_once(api)
    return api


def _keep_connections(api: client.ApiClient) -> None:
    # kubernetes-asyncio does not expose the connector's keep-alive; set it where aiohttp keeps
    # it, and leave the default should either library change shape.
    connector = getattr(getattr(api.rest_client, "pool_manager", None), "connector", None)
    if connector is not None and hasattr(connector, "_keepalive_timeout"):
        connector._keepalive_timeout = KEEPALIVE_SECONDS


def _read_environment_once(api: client.ApiClient) -> None:
    """Take the proxy for the API server from the environment now, not on every request.

    kubernetes-asyncio's session trusts the environment (``trust_env=True``), so aiohttp looks
    up ``HTTPS_PROXY``/``NO_PROXY`` and reads ``~/.netrc`` again for every request, each time
    in a thread of the default executor (two hand-offs per request): CPU and two trips through
    the thread pool for each Job created and each status written, all of it at the instant a
    burst of slots fires. The environment does not change while we run:
    resolved once here (the kubeconfig's ``proxy-url`` still comes first), the session stops
    looking. ``~/.netrc`` is no longer read: credentials come from the kubeconfig or the
    service account, as for kubectl.
    """
    rest = api.rest_client
    session = getattr(rest, "pool_manager", None)
    if not isinstance(session, aiohttp.ClientSession) or not hasattr(session, "_trust_env"):
        return  # another shape of either library: leave it as it is
    if not rest.proxy:
        try:
            proxy, auth = aiohttp.helpers.get_env_proxy_for_url(yarl.URL(api.configuration.host))
        except LookupError:  # no proxy for the API server (none set, or NO_PROXY names it)
            pass
        else:
            rest.proxy = str(proxy)
            if auth is not None:
                headers = dict(rest.proxy_headers or {})
                rest.proxy_headers = {**headers, "Proxy-Authorization": auth.encode()}
            logger.info("API server requests go through the proxy %s", proxy)
    session._trust_env = False


async def post_json(api: client.ApiClient, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
    """POST ``body``, JSON serialised already, to ``path`` of the API server: ``(HTTP status,
    JSON body of the answer)``.

    What the generated client does for a request, minus its per-call model handling and
    serialisation: a body built and serialised before it is needed (a Job, ahead of its slot)
    is sent as it is. The same session, TLS, credentials (refreshed as the generated client
    refreshes them), headers and proxy. Raises ``aiohttp.ClientError``, ``OSError`` or
    ``TimeoutError`` when there is no answer.
    """
    headers: dict[str, str] = {
        **api.default_headers,
        "Accept": "application/json",
        "Content-Type": "application/json",
    }
    if api.cookie:
        headers["Cookie"] = api.cookie
    await api.update_params_for_auth(headers, [], ["BearerToken"])
    rest = api.rest_client
    options: dict[str, Any] = {}
    if rest.proxy:
        options["proxy"] = rest.proxy
    if rest.proxy_headers:
        options["proxy_headers"] = rest.proxy_headers
    if rest.server_hostname:
        options["server_hostname"] = rest.server_hostname
    session: aiohttp.ClientSession = rest.pool_manager
    async with session.post(
        api.configuration.host + path,
        data=body,
        headers=headers,
        timeout=aiohttp.ClientTimeout(),  # as the generated client: the caller bounds the wait
        **options,
    ) as response:
        text = await response.text()
    try:
        answer = json.loads(text) if text else {}
    except ValueError:
        answer = {}
    return response.status, answer if isinstance(answer, dict) else {}


def current_namespace() -> str:
    """The namespace a command acts in when it is given none, chosen as kubectl chooses it.

    With a kubeconfig, its current context's namespace (``default`` when the context names
    none); without one, inside a pod, ``$POD_NAMESPACE`` or the service account's namespace
    file (client-go's order), else ``default``. Users run ``kubens reports`` once and expect
    every command of the cluster, ours too, to act in ``reports`` from then on.
    """
    kubeconfig = _kubeconfig()
    if kubeconfig is not None:
        try:
            _, context = config.list_kube_config_contexts(config_file=kubeconfig)
        except (config.ConfigException, yaml.YAMLError) as error:
            raise UnreadableKubeconfigError(f"kubeconfig {kubeconfig}: {error}") from None
        fields = (context or {}).get("context")
        namespace = fields.get("namespace") if isinstance(fields, dict) else None
        return namespace if isinstance(namespace, str) and namespace else "default"
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip() or "default"
    except OSError:
        return "default"


def _kubeconfig() -> str | None:
    """$KUBECONFIG (a list of files, merged as kubectl merges them) when one of its files
    exists, else ~/.kube/config when it exists."""
    listed = os.environ.get("KUBECONFIG", "")
    if any(Path(path).expanduser().exists() for path in listed.split(os.pathsep) if path):
        return listed
    path = Path.home() / ".kube" / "config"
    return str(path) if not listed and path.exists() else None
