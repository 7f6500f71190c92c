"""Fixtures of the operator acceptance tests; test modules load them with
``pytest_plugins = ["operator_fixtures"]`` (a plugin, so the CRD fixture runs once per session
whichever modules use it).
"""

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from operator_harness import API, Receiver, new_namespace

from localcluster import LocalCluster, manifests, processes
from localcluster.api import ApiError
from localcluster.sentinel import LocalSentinelRedis

CRD_SERVED_TIMEOUT = 60.0


@pytest.fixture(scope="session")
def scheduled_job_crd(cluster: LocalCluster) -> list[Path]:
    """The CRDs from ``crds/`` (ScheduledJob, Calendar), applied once per session, Established
    and served.

    Established is not quite enough: for a moment after it, the API server answers LIST and
    WATCH with 429 "storage is (re)initializing", which an operator started then logs as an
    error (and retries). Waiting for a LIST of each to succeed keeps that out of the operators'
    logs (an operator watches both).
    """
    files = manifests.install_crds(cluster)
    deadline = time.monotonic() + CRD_SERVED_TIMEOUT
    for plural in ("scheduledjobs", "calendars"):
        while True:
            try:
                cluster.api.get(f"{API}/{plural}")  # as kopf lists: no limit
            except ApiError:
                assert time.monotonic() < deadline, f"{plural} are not served"
                time.sleep(0.2)
                continue
            break
    return files


@pytest.fixture(scope="module")
def module_namespace(cluster: LocalCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace shared by the tests of one module (they share its operator replicas)."""
    with new_namespace(cluster, request.module.__name__.removeprefix("test_")) as name:
        yield name


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with Receiver() as started:
        yield started


@pytest.fixture(scope="module")
def sentinel_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSentinelRedis]:
    """A primary, two replicas and three Sentinels (``LocalSentinelRedis``), gone afterwards."""
    with LocalSentinelRedis(run_dir=tmp_path_factory.mktemp("sentinel")) as local:
        yield local
    assert processes.alive(local.pids) == []
