"""Fixtures for tests against the real local control plane and a real Redis.

Everything under ``tests/integration`` is marked ``cluster`` here, so ``pytest -m 'not cluster'``
runs without it. The cluster and Redis are started once per session (``hack/localcluster``); each
test that needs Kubernetes objects gets a namespace of its own, deleted afterwards. The process
logs of the session stay in pytest's temporary folder (``pytest --basetemp=DIR`` to choose it).
"""

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster import LocalCluster, LocalRedis, ports, processes

INTEGRATION_DIR = Path(__file__).parent
NAMESPACE_READY_TIMEOUT = 60.0


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # tryfirst: the marker must be on the items before `-m` deselects by marker.
    for item in items:
        if INTEGRATION_DIR in item.path.parents:
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(kwok=True, run_dir=tmp_path_factory.mktemp("cluster")) as local:
        yield local
    # Checked here rather than in a test: only now has the session's cluster been stopped.
    assert processes.alive(local.pids) == []
    assert ports.listening(local.ports) == []


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedis]:
    with LocalRedis(run_dir=tmp_path_factory.mktemp("redis")) as server:
        yield server
    assert processes.alive([server.pid]) == []
    assert ports.listening([server.port]) == []


@pytest.fixture(scope="module")
def own_redis(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[LocalRedis]:
    """A Redis of the module's own, for tests that stop, restart or empty it: never the
    session's, which every other test shares."""
    module = request.module.__name__.rsplit(".", 1)[-1]
    with LocalRedis(run_dir=tmp_path_factory.mktemp(f"redis-{module}")) as server:
        yield server


def _namespace_name(test_name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")
    return f"t-{slug[:45].strip('-')}-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def real_node_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A cluster with a real node (no kwok), shared by the tests of one module: containers run."""
    with LocalCluster(
        kwok=False, real_node=True, run_dir=tmp_path_factory.mktemp("real-node")
    ) as local:
        yield local
    assert processes.alive(local.pids) == []
    assert local.node.leftovers() == []


def _fresh_namespace(cluster: LocalCluster, test_name: str) -> Iterator[str]:
    """A fresh namespace, ready for pods (its ``default`` ServiceAccount exists)."""
    name = _namespace_name(test_name)
    cluster.api.post(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    deadline = time.monotonic() + NAMESPACE_READY_TIMEOUT
    while not cluster.api.exists(f"/api/v1/namespaces/{name}/serviceaccounts/default"):
        assert time.monotonic() < deadline, f"namespace {name} got no default ServiceAccount"
        time.sleep(0.2)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def namespace(cluster: LocalCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace of the session's (kwok) cluster."""
    yield from _fresh_namespace(cluster, request.node.name)


@pytest.fixture
def node_namespace(
    real_node_cluster: LocalCluster, request: pytest.FixtureRequest
) -> Iterator[str]:
    """A fresh namespace of the module's real-node cluster."""
    yield from _fresh_namespace(real_node_cluster, request.node.name)
