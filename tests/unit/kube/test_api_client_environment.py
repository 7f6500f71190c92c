"""The API client reads the proxy environment once, when it connects, not on every request."""

from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client

from punctual.kube import client as kube_client

API_SERVER = "https://10.0.0.1:6443"


@pytest.fixture
async def api(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[client.ApiClient]:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    opened = client.ApiClient(client.Configuration(host=API_SERVER))
    yield opened
    await opened.close()


class TestTheSessionStopsReadingTheEnvironment:
    async def test_requests_no_longer_consult_the_environment(self, api: client.ApiClient) -> None:
        assert api.rest_client.pool_manager.trust_env  # kubernetes-asyncio's own choice

        kube_client._read_environment_once(api)

        assert not api.rest_client.pool_manager.trust_env

    async def test_without_a_proxy_in_the_environment_requests_go_direct(
        self, api: client.ApiClient
    ) -> None:
        kube_client._read_environment_once(api)

        assert not api.rest_client.proxy


class TestTheProxyOfTheEnvironmentIsKept:
    async def test_https_proxy_is_taken_once_for_the_api_server(
        self, api: client.ApiClient, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")

        kube_client._read_environment_once(api)

        assert api.rest_client.proxy == "http://proxy.internal:3128"

    async def test_its_credentials_go_in_the_proxy_authorization_header(
        self, api: client.ApiClient, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("HTTPS_PROXY", "http://user:secret@proxy.internal:3128")

        kube_client._read_environment_once(api)

        assert api.rest_client.proxy == "http://proxy.internal:3128"
        assert api.rest_client.proxy_headers == {"Proxy-Authorization": "Basic dXNlcjpzZWNyZXQ="}

    async def test_an_api_server_named_in_no_proxy_goes_direct(
        self, api: client.ApiClient, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
        monkeypatch.setenv("NO_PROXY", "10.0.0.1")

        kube_client._read_environment_once(api)

        assert not api.rest_client.proxy

    async def test_the_kubeconfigs_proxy_url_comes_first(
        self, api: client.ApiClient, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
        api.rest_client.proxy = "http://kubeconfig-proxy:8080"

        kube_client._read_environment_once(api)

        assert api.rest_client.proxy == "http://kubeconfig-proxy:8080"
