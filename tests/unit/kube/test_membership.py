"""Membership at a replica's start, over a fake Leases API: a Lease another replica left behind
counts only until its duration has passed since its last renewal, and a missing Lease Role is
an error that says what to grant, never a traceback of the API's answer; after a stall of the
replica, no Lease is taken for expired before the renewals received meanwhile are read."""

import asyncio
import contextlib
import dataclasses
import itertools
import time
import types
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from punctual.kube import membership

DURATION_SECONDS = 6


def lease(holder: str, *, renewed_ago: timedelta) -> dict[str, Any]:
    renewed = datetime.now(UTC) - renewed_ago
    return {
        "metadata": {"name": membership.lease_name(holder)},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": DURATION_SECONDS,
            "renewTime": renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        },
    }


class FakeLeases:
    """The API server's Leases: a listing of ``items``, or ``refusal`` for every request."""

    def __init__(self, items: Sequence[dict[str, Any]] = (), refusal: int | None = None) -> None:
        self.items = list(items)
        self.refusal = refusal

    def _refuse(self) -> None:
        if self.refusal is not None:
            raise ApiException(status=self.refusal, reason="Refused")

    async def list_namespaced_lease(self, namespace: str, **_: object) -> dict[str, Any]:
        self._refuse()
        return {"metadata": {"resourceVersion": "7"}, "items": self.items}

    async def create_namespaced_lease(self, namespace: str, body: Any, **_: object) -> Any:
        self._refuse()
        raise AssertionError("not expected to succeed here")


@pytest.fixture
async def api() -> AsyncIterator[client.ApiClient]:
    opened = client.ApiClient(client.Configuration(host="https://10.0.0.1:6443"))
    yield opened
    await opened.close()


def member_of(api: client.ApiClient, leases: FakeLeases) -> membership.Membership:
    replica = membership.Membership(
        api, namespace="punctual-system", member="r1", group=membership.group_of(())
    )
    replica._leases = leases
    return replica


class TestALeaseListedAtTheStart:
    @pytest.mark.parametrize(
        ("renewed_ago", "members"),
        [
            (timedelta(seconds=1), {"r1", "r2"}),
            (timedelta(seconds=DURATION_SECONDS + 1), {"r1"}),
            (timedelta(hours=1), {"r1"}),
        ],
        ids=["renewed-within-its-duration", "its-duration-passed", "left-long-ago"],
    )
    async def test_counts_only_until_its_duration_passed_since_its_renewal(
        self, api: client.ApiClient, renewed_ago: timedelta, members: set[str]
    ) -> None:
        replica = member_of(api, FakeLeases([lease("r2", renewed_ago=renewed_ago)]))

        await replica.discover()

        assert replica.members == members


class TestWithoutTheLeaseRole:
    async def test_discovering_says_what_to_grant(self, api: client.ApiClient) -> None:
        replica = member_of(api, FakeLeases(refusal=403))

        with pytest.raises(membership.ForbiddenError) as refused:
            await replica.discover()

        assert str(refused.value) == (
            "sharding needs get, list, watch, create, update and delete on leases "
            "(coordination.k8s.io) in namespace 'punctual-system' (--membership-namespace), "
            "and the API server refused them: grant them (the chart does), or run with "
            "--sharding off"
        )

    async def test_joining_says_it_too(self, api: client.ApiClient) -> None:
        replica = member_of(api, FakeLeases(refusal=403))

        with pytest.raises(membership.ForbiddenError, match="--sharding off"):
            await replica.join()

    async def test_other_refusals_are_the_api_servers_own(self, api: client.ApiClient) -> None:
        replica = member_of(api, FakeLeases(refusal=500))

        with pytest.raises(ApiException):
            await replica.discover()


def last_seen(replica: membership.Membership, *holders: str, at: float) -> None:
    """As if the replica last saw the Leases of ``holders`` renewed at loop time ``at``."""
    for holder in holders:
        name = membership.lease_name(holder)
        replica._seen[name] = dataclasses.replace(replica._seen[name], observed=at)


async def stall_until_the_sweep_wakes_late() -> None:
    """Block the event loop past LATE_SWEEP, as a replica re-arming thousands of jobs does,
    then let the sweep, due first, run."""
    time.sleep(membership.LATE_SWEEP.total_seconds() + 0.3)  # noqa: ASYNC251 - the stall
    await asyncio.sleep(0.01)


class TestAfterAStallOfThisReplica:
    """A replica's event loop stalls for seconds re-arming thousands of jobs after the fleet
    changed: the others' renewals that came meanwhile wait unread in the watch. Taking their
    Leases for expired then moved their jobs here and back, each move another stall: the
    fleet flapped."""

    @staticmethod
    def watched(api: client.ApiClient) -> tuple[membership.Membership, list[frozenset[str]]]:
        replica = member_of(api, FakeLeases())
        changes: list[frozenset[str]] = []
        replica.on_change = changes.append
        replica._on_event("ADDED", lease("r2", renewed_ago=timedelta()))
        replica._on_event("ADDED", lease("r3", renewed_ago=timedelta()))
        changes.clear()
        return replica, changes

    async def test_an_event_read_first_never_expires_a_member_whose_renewal_is_still_unread(
        self, api: client.ApiClient
    ) -> None:
        replica, changes = self.watched(api)
        loop = asyncio.get_running_loop()
        last_seen(replica, "r2", "r3", at=loop.time() - DURATION_SECONDS - 1)  # stalled since

        replica._on_event("MODIFIED", lease("r3", renewed_ago=timedelta()))
        replica._on_event("MODIFIED", lease("r2", renewed_ago=timedelta()))

        assert changes == []
        assert replica.members == {"r1", "r2", "r3"}

    async def test_a_sweep_woken_late_judges_nothing_and_the_next_does(
        self, api: client.ApiClient
    ) -> None:
        replica, changes = self.watched(api)
        loop = asyncio.get_running_loop()
        sweeping = asyncio.create_task(replica._sweeping())
        await asyncio.sleep(0)  # the sweep is asleep
        last_seen(replica, "r2", "r3", at=loop.time() - DURATION_SECONDS + 0.1)  # expire soon
        await stall_until_the_sweep_wakes_late()  # then the renewals are read
        replica._on_event("MODIFIED", lease("r2", renewed_ago=timedelta()))
        replica._on_event("MODIFIED", lease("r3", renewed_ago=timedelta()))
        assert changes == []

        last_seen(replica, "r3", at=loop.time() - DURATION_SECONDS)  # r3 renews no more
        await asyncio.sleep(membership.SWEEP.total_seconds() * 3)
        sweeping.cancel()

        assert changes == [frozenset({"r1", "r2"})]

    async def test_on_a_loop_that_stays_behind_a_replica_gone_is_still_found_gone(
        self, api: client.ApiClient
    ) -> None:
        replica, changes = self.watched(api)
        loop = asyncio.get_running_loop()
        sweeping = asyncio.create_task(replica._sweeping())
        await asyncio.sleep(0)
        last_seen(replica, "r3", at=loop.time() - DURATION_SECONDS)  # r3 renews no more
        for _ in range(2):  # two sweeps in a row woken late
            await stall_until_the_sweep_wakes_late()
        sweeping.cancel()

        assert changes == [frozenset({"r1", "r2"})]


class RenewalsTaking:
    """The API server's Leases, each replacement answered ``took`` seconds after it was sent;
    the loop time each was sent at."""

    def __init__(self, took: float) -> None:
        self.took = took
        self.sent: list[float] = []

    async def replace_namespaced_lease(
        self, name: str, namespace: str, body: Any, **_: object
    ) -> Any:
        self.sent.append(asyncio.get_running_loop().time())
        await asyncio.sleep(self.took)
        return types.SimpleNamespace(metadata=types.SimpleNamespace(resource_version="8"))


@pytest.mark.looptime(start=time.monotonic, noop_cycles=1)
class TestRenewals:
    """A renewal that the API server answers slowly must not push the next one later: the
    others take a Lease for gone by when they last saw it renewed."""

    @pytest.mark.parametrize(
        "took",
        [
            pytest.param(0.0, id="answered-at-once"),
            pytest.param(1.5, id="answered-slowly-within-renew"),
            pytest.param(3.0, id="answered-slower-than-renew-the-next-at-once"),
        ],
    )
    async def test_start_a_renew_apart_or_at_once_after_a_slower_one(
        self, api: client.ApiClient, took: float
    ) -> None:
        apart = max(took, membership.RENEW.total_seconds())
        replica = member_of(api, FakeLeases())
        leases = RenewalsTaking(took)
        replica._leases = leases
        replica._version = "7"
        renewing = asyncio.create_task(replica._renewing())
        await asyncio.sleep(10 * apart + 0.5)
        renewing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await renewing

        gaps = {round(later - earlier, 3) for earlier, later in itertools.pairwise(leases.sent)}
        assert gaps == {apart}
