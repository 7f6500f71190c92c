"""The harness can take one component away and bring it back alone, for failure tests:
redis-server on the same port and URL, kube-apiserver on the same port with the same etcd."""

import uuid
from pathlib import Path

import pytest
import redis

from localcluster import LocalCluster, LocalRedis, ports


def test_redis_comes_back_on_the_same_port_and_url_and_empty(tmp_path: Path) -> None:
    with LocalRedis(run_dir=tmp_path / "redis", password="pw") as server:
        url, port = server.url, server.port
        client = redis.Redis.from_url(url)
        try:
            client.set("before", "1")

            with server.down():
                assert not ports.is_listening(port)
                with pytest.raises(redis.exceptions.ConnectionError):
                    client.ping()

            assert (server.url, server.port) == (url, port)
            assert client.ping()
            assert client.get("before") is None  # nothing is persisted
        finally:
            client.close()
    assert not ports.is_listening(port)


def test_the_api_server_comes_back_on_its_port_with_every_object(cluster: LocalCluster) -> None:
    name = f"restart-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "configmap", name, "-n", "default", "--from-literal=kept=yes")
    port = cluster.apiserver_port

    with cluster.apiserver_down():
        assert not ports.is_listening(port)
        assert cluster.kubectl("get", "configmap", name, check=False).returncode != 0

    assert cluster.apiserver_port == port
    kept = cluster.kubectl("get", "configmap", name, "-n", "default", "-o", "jsonpath={.data.kept}")
    assert kept.stdout == "yes"
    cluster.kubectl("delete", "configmap", name, "-n", "default")
