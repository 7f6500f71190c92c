"""Which replicas are alive: one ``coordination.k8s.io/v1`` Lease per replica, watched by all.

Each replica holds a Lease named after it in the operator's namespace (label
``punctual.dev/membership``: the scope it watches, ``group_of``), renews it every ``renew``
and watches the others' of the same scope. A member is live while its Lease was renewed
within its ``leaseDurationSeconds`` as seen on this replica's own monotonic clock (the time a
renewal was observed, not the ``renewTime`` written by the other's clock, as client-go's
leader election does: clocks of different nodes may disagree).
A replica that stops cleanly deletes its Lease first: the others see it gone at once.

This replica is always a member in its own eyes: a replica that cannot renew goes on
scheduling its share, and the slot lock keeps the slots it shares with the others exactly once.
"""

import asyncio
import contextlib
import hashlib
import logging
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from punctual.kube import watching
from punctual.scheduling import timeline

logger = logging.getLogger(__name__)

LABEL = "punctual.dev/membership"

DURATION = timedelta(seconds=15)
"""How long a Lease not renewed is still taken for live (client-go's leader election default):
a replica busy re-arming its share after the fleet changed, or behind a slow API server, misses
renewals for seconds, and one taken for gone moves thousands of jobs, which stalls every replica
again. A killed replica's jobs wait this long for a new owner, and their backups run their slots
meanwhile, so a long duration costs a backup's delay on those slots, never a slot."""
RENEW = timedelta(seconds=2)
"""How often a Lease is renewed, counted from the start of the previous renewal: a slow one does
not push the next one later."""
SWEEP = timedelta(milliseconds=250)
"""How often Leases are checked for expiry between watch events."""
LATE_SWEEP = 2 * SWEEP
"""A sweep woken this late finds this replica's loop stalled: it judges no Lease expired."""
REQUEST_TIMEOUT = 5.0
LEAVE_TIMEOUT = 1.0
"""How long a stop waits for its Lease's deletion: past it (the API server stalled), the Lease is
left to expire, and the others see this replica gone a Lease duration later, as after a crash;
the stop as a whole has 5 s."""


class ForbiddenError(Exception):
    """The API server refuses this replica the Leases it needs (RBAC): it cannot be a member."""


def group_of(namespaces: Sequence[str]) -> str:
    """The label value shared by the replicas watching ``namespaces`` (none: all): two
    installations with different scopes in one namespace must not count each other's replicas,
    which would own jobs they never see."""
    if not namespaces:
        return "all-namespaces"
    scope = ",".join(sorted(set(namespaces)))
    return "namespaces-" + hashlib.blake2b(scope.encode(), digest_size=8).hexdigest()


def lease_name(member: str) -> str:
    """A DNS-subdomain name for ``member``'s Lease (the member's name is in holderIdentity)."""
    cleaned = re.sub(r"[^a-z0-9.-]+", "-", member.lower()).strip("-.")
    return f"punctual-{cleaned}"[:253].rstrip("-.")


@dataclass(frozen=True, slots=True)
class _Seen:
    holder: str
    renewed: str
    """``spec.renewTime`` as written: a new value is a renewal."""
    observed: float
    """This replica's monotonic time when the renewal was first seen."""
    duration: float


class Membership:
    """This replica's Lease and its view of the others'; ``on_change`` hears each new set."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        namespace: str,
        member: str,
        group: str,
        on_change: Callable[[frozenset[str]], None] | None = None,
        duration: timedelta = DURATION,
        renew: timedelta = RENEW,
    ) -> None:
        self._leases = client.CoordinationV1Api(api)
        self._serialize = api.sanitize_for_serialization
        self.namespace = namespace
        self.member = member
        self._selector = f"{LABEL}={group}"
        self._group = group
        self.on_change = on_change
        self._name = lease_name(member)
        self._duration = duration
        self._renew = renew
        self._seen: dict[str, _Seen] = {}
        self._members = frozenset({member})
        self._left = False
        self._version: str | None = None
        """The resourceVersion of this replica's Lease, as last written."""

    @property
    def members(self) -> frozenset[str]:
        """The live members, this replica among them."""
        return self._members

    async def discover(self) -> None:
        """List the others' Leases: before the first job is armed, so that it is armed with
        this replica's share, not as if it were alone. Raises ``ForbiddenError``."""
        with self._permitted():
            await self._relist()

    async def join(self) -> None:
        """Hold this replica's Lease: once its share is armed, since the others drop their
        jobs that move to it as soon as they see it. Raises ``ForbiddenError``."""
        with self._permitted():
            await self._hold()

    @contextlib.contextmanager
    def _permitted(self) -> Iterator[None]:
        """At start, a 403 is a missing Role, which no retry mends: say what to grant."""
        try:
            yield
        except ApiException as error:
            if error.status != 403:
                raise
            raise ForbiddenError(
                f"sharding needs get, list, watch, create, update and delete on leases "
                f"(coordination.k8s.io) in namespace {self.namespace!r} "
                f"(--membership-namespace), and the API server refused them: grant them (the "
                f"chart does), or run with --sharding off"
            ) from None

    async def run(self) -> None:
        """Renew, watch and sweep until cancelled."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self._renewing(), name="membership lease renewal")
            group.create_task(watching.follow(self._watched()), name="membership watch")
            group.create_task(self._sweeping(), name="membership expiry")

    async def leave(self) -> None:
        """Delete this replica's Lease, so its jobs move at once (idempotent)."""
        if self._left:
            return
        self._left = True
        try:
            async with asyncio.timeout(LEAVE_TIMEOUT):
                await self._leases.delete_namespaced_lease(
                    self._name, self.namespace, _request_timeout=LEAVE_TIMEOUT
                )
        except ApiException as error:
            if error.status != 404:
                logger.warning("could not release the Lease %s: %s", self._name, error.reason)
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            logger.warning("could not release the Lease %s: %s", self._name, error)

    # -- this replica's Lease --

    def _spec(self) -> dict[str, Any]:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return {
            "holderIdentity": self.member,
            "leaseDurationSeconds": max(1, round(self._duration.total_seconds())),
            "renewTime": now,
        }

    def _body(self) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self._name, "labels": {LABEL: self._group}}
        if self._version is not None:
            metadata["resourceVersion"] = self._version
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": self._spec(),
        }

    async def _hold(self) -> None:
        self._version = None
        try:
            created = await self._leases.create_namespaced_lease(
                self.namespace, self._body(), _request_timeout=REQUEST_TIMEOUT
            )
        except ApiException as error:
            if error.status != 409:  # ours from an earlier run of this replica: renew it
                raise
            await self._renew_once()
        else:
            self._version = created.metadata.resource_version

    async def _renew_once(self) -> None:
        """Replace the Lease under its resourceVersion (updates of a Lease must name one); a
        conflict (someone else wrote it) or none known yet: read it, and replace once more."""
        for _ in range(2):
            try:
                if self._version is None:
                    current = await self._leases.read_namespaced_lease(
                        self._name, self.namespace, _request_timeout=REQUEST_TIMEOUT
                    )
                    self._version = current.metadata.resource_version
                replaced = await self._leases.replace_namespaced_lease(
                    self._name, self.namespace, self._body(), _request_timeout=REQUEST_TIMEOUT
                )
            except ApiException as error:
                if error.status == 404:
                    await self._hold()  # deleted under us (by hand, or a namespace clean-up)
                    return
                if error.status != 409:
                    raise
                self._version = None
                continue
            self._version = replaced.metadata.resource_version
            return

    async def _renewing(self) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time()
        while not self._left:
            due = max(due + self._renew.total_seconds(), loop.time())
            await asyncio.sleep(due - loop.time())
            try:
                await self._renew_once()
            except (ApiException, aiohttp.ClientError, OSError, TimeoutError) as error:
                logger.warning("could not renew the Lease %s: %s", self._name, error)

    # -- the others' --

    async def _relist(self) -> str:
        answer = await self._leases.list_namespaced_lease(
            self.namespace, label_selector=self._selector, _request_timeout=15
        )
        listed = self._serialize(answer)
        now = asyncio.get_running_loop().time()
        wall = datetime.now(UTC)
        bodies = {item["metadata"]["name"]: item for item in listed.get("items") or []}
        for name in [name for name in self._seen if name not in bodies]:
            del self._seen[name]
        for name, body in bodies.items():
            self._observe(name, body, now=now, wall=wall)
        self._recompute(now)
        return str((listed.get("metadata") or {}).get("resourceVersion") or "")

    def _observe(
        self, name: str, body: Mapping[str, Any], *, now: float, wall: datetime | None = None
    ) -> None:
        spec = body.get("spec") or {}
        holder = spec.get("holderIdentity")
        renewed = str(spec.get("renewTime") or "")
        duration = spec.get("leaseDurationSeconds")
        if not isinstance(holder, str) or not holder or not isinstance(duration, int):
            self._seen.pop(name, None)
            return
        known = self._seen.get(name)
        if known is not None and known.renewed == renewed and known.holder == holder:
            return
        observed = now
        if known is None and wall is not None and renewed:
            # First sight at a listing: a Lease not renewed for long is not taken for live.
            with contextlib.suppress(ValueError):
                age = (wall - timeline.parse_rfc3339(renewed)).total_seconds()
                observed = now - min(max(age, 0.0), float(duration) + 1.0)
        self._seen[name] = _Seen(holder, renewed, observed, float(duration))

    def _recompute(self, now: float, *, expire: bool = True) -> None:
        """The members: every holder of a Lease observed within its duration; without
        ``expire``, the members already known stay (a Lease deleted is gone at once)."""
        live = {seen.holder for seen in self._seen.values() if seen.observed + seen.duration > now}
        if not expire:
            live |= self._members & {seen.holder for seen in self._seen.values()}
        members = frozenset(live | {self.member})
        if members != self._members:
            logger.info("members: %s", ", ".join(sorted(members)))
            self._members = members
            if self.on_change is not None:
                self.on_change(members)

    def _watched(self) -> watching.Watched:
        return watching.Watched(
            what=f"Leases in {self.namespace}",
            relist=self._relist,
            function=self._leases.list_namespaced_lease,
            arguments=(self.namespace,),
            label_selector=self._selector,
            on_event=self._on_event,
        )

    def _on_event(self, kind: str, body: Mapping[str, Any]) -> None:
        name = (body.get("metadata") or {}).get("name")
        if not isinstance(name, str):
            return
        if kind == "DELETED":
            self._seen.pop(name, None)
        else:
            self._observe(name, body, now=asyncio.get_running_loop().time())
        # An event adds a member or removes a deleted Lease's, never expires one: after a stall
        # of this replica, the first events read may come before the others' renewals that
        # arrived meanwhile.
        self._recompute(asyncio.get_running_loop().time(), expire=False)

    async def _sweeping(self) -> None:
        """Expire the Leases not renewed within their duration, SWEEP apart. A sweep that wakes
        late judges nothing: this replica's event loop stalled (re-arming thousands of jobs
        after a change of the fleet takes seconds), and the renewals the others sent meanwhile
        wait unread in the watch; taken for expired, the others' jobs would move here and back,
        each move another stall, the fleet flapping. The next sweep judges, late or not: on a
        loop that stays behind, a replica gone is still found gone one sweep later."""
        loop = asyncio.get_running_loop()
        skipped = False
        while True:
            asked = loop.time()
            await asyncio.sleep(SWEEP.total_seconds())
            woke = loop.time()
            skipped = not skipped and woke - asked >= LATE_SWEEP.total_seconds()
            if not skipped:
                self._recompute(woke)
