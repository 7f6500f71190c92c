"""Two operator replicas watching the module's namespace, for the modules that load this plugin
with ``pytest_plugins``:

- ``two_replicas``: on the ``kubernetes`` slot lock (the command's default);
- ``operators``: once per lock backend, for the modules that ask the operator for runs (run
  now, backfill): each of their tests runs once with ``kubernetes`` and once with ``redis``.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
from operator_harness import Operators

from localcluster import LocalCluster


@pytest.fixture(scope="module")
def two_replicas(
    cluster: LocalCluster,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Operators]:
    yield from _pair(cluster, module_namespace, tmp_path_factory, lock_backend="kubernetes")


@pytest.fixture(scope="module", params=["kubernetes", "redis"])
def operators(
    request: pytest.FixtureRequest,
    cluster: LocalCluster,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Operators]:
    yield from _pair(
        cluster,
        module_namespace,
        tmp_path_factory,
        lock_backend=request.param,
        redis_url=request.getfixturevalue("redis_server").url,
    )


def _pair(
    cluster: LocalCluster,
    namespace: str,
    tmp_path_factory: pytest.TempPathFactory,
    *,
    lock_backend: str,
    redis_url: str | None = None,
) -> Iterator[Operators]:
    with Operators(
        cluster,
        tmp_path_factory.mktemp("operators"),
        namespace=namespace,
        replicas=2,
        lock_backend=lock_backend,
        redis_url=redis_url,
    ) as started:
        yield started
