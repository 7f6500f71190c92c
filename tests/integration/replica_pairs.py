"""Two operator replicas per lock backend, for the modules that ask the operator for runs (run
now, backfill): each test runs once with the ``kubernetes`` lock and once with ``redis``.
Modules load it with ``pytest_plugins``."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from operator_harness import Operators

from localcluster import LocalCluster


@pytest.fixture(scope="module", params=["kubernetes", "redis"])
def operators(
    request: pytest.FixtureRequest,
    cluster: LocalCluster,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Operators]:
    with Operators(
        cluster,
        tmp_path_factory.mktemp("operators"),
        namespace=module_namespace,
        replicas=2,
        lock_backend=request.param,
        redis_url=request.getfixturevalue("redis_server").url,
    ) as started:
        yield started
