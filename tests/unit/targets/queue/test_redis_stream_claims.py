"""How the queue target's claims travel: in pipelines, the script loaded ahead, failures closed.

A scripted client stands in for Redis (the script itself runs against a real redis-server in
tests/integration/test_redis_stream_lock.py): round trips, lost replies and a flushed script
cache on cue.
"""

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import pytest
import redis.exceptions

from punctual.contracts import protocols, records
from punctual.redis_io import connections, slot_keys
from punctual.scheduling import slots
from punctual.targets.queue import stream as queue_stream

JOB = slots.JobRef(namespace="reports", name="nightly", uid="5f0c1d2e-0000-4000-8000-00000000abcd")
SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
SLOTS = [SLOT + timedelta(minutes=n) for n in range(5)]
STREAM = "reports:jobs"


def claim_of(slot: datetime, *, holder: str = "replica-a:1", run: bool = True) -> records.Claim:
    return records.Claim(
        job=JOB,
        slot=slot,
        slot_id=slots.slot_id(JOB, slot),
        holder=holder,
        ttl=timedelta(minutes=2),
        scheduled_time=slot,
        purpose=records.ScheduledSlot() if run else records.CountedMissed(),
    )


class ScriptedRedis:
    """Keys, one stream and a script cache, answering pipelines of EVALSHA, SET and GET.

    ``drop`` lists round trips (by number, from 1) whose replies are lost after they landed.
    """

    def __init__(self, *, loaded: bool = True, drop: tuple[int, ...] = ()) -> None:
        self.keys: dict[str, bytes] = {}
        self.entries: list[tuple[bytes, list[str | int]]] = []
        self.idle_expiries: list[str | int] = []
        """The idle expiry in ms each append set on the stream."""
        self.loaded = loaded
        self.drop = drop
        self.round_trips: list[list[str]] = []
        """The commands of each pipeline, by name, in order."""
        self.connection_pool = self
        """Its own pool: a claim in doubt closes the idle connections (none here)."""
        self.script_loads = 0
        self._ids = itertools.count(1)

    async def disconnect(self, *, inuse_connections: bool) -> None:
        assert not inuse_connections

    def pipeline(self, *, transaction: bool) -> "ScriptedPipeline":
        assert not transaction
        return ScriptedPipeline(self)

    async def script_load(self, script: str) -> str:
        assert script == queue_stream.CLAIM_AND_ENQUEUE
        self.script_loads += 1
        self.loaded = True
        return "sha"

    async def aclose(self) -> None:
        pass

    def evalsha(self, key: str, arguments: list[str | int]) -> object:
        if not self.loaded:
            return redis.exceptions.NoScriptError("No matching script.")
        if key in self.keys:
            return None
        self.keys[key] = str(arguments[0]).encode()
        entry = f"1796002200000-{next(self._ids)}".encode()
        self.entries.append((entry, arguments[5:]))
        self.idle_expiries.append(arguments[4])
        return entry

    def set(self, key: str, holder: bytes) -> object:
        if key in self.keys:
            return None
        self.keys[key] = holder
        return True


class ScriptedPipeline:
    def __init__(self, client: ScriptedRedis) -> None:
        self.client = client
        self.commands: list[tuple[str, Callable[[], object]]] = []

    def evalsha(self, sha: str, numkeys: int, key: str, stream: str, *arguments: str | int) -> None:
        assert (numkeys, stream) == (2, STREAM)
        self.commands.append(("EVALSHA", lambda: self.client.evalsha(key, list(arguments))))

    def set(self, key: str, holder: bytes, *, nx: bool, px: int) -> None:
        assert nx
        assert px == 120_000
        self.commands.append(("SET", lambda: self.client.set(key, holder)))

    def get(self, key: str) -> None:
        self.commands.append(("GET", lambda: self.client.keys.get(key)))

    async def execute(self, *, raise_on_error: bool) -> list[object]:
        assert not raise_on_error
        self.client.round_trips.append([name for name, _ in self.commands])
        await asyncio.sleep(0)  # on the wire: claims made meanwhile wait for the next one
        replies = [command() for _, command in self.commands]
        if len(self.client.round_trips) in self.client.drop:
            raise redis.exceptions.ConnectionError("Connection reset by peer")
        return replies


@pytest.fixture
async def client() -> ScriptedRedis:
    return ScriptedRedis()


@pytest.fixture
async def claims(client: ScriptedRedis) -> AsyncIterator[queue_stream.StreamClaims]:
    opened = queue_stream.StreamClaims(
        connections.Connection(client, "redis://redis:6379/0", None)  # type: ignore[arg-type]
    )
    yield opened
    await opened.close()


def lock_on(claims: queue_stream.StreamClaims) -> queue_stream.StreamLock:
    return claims.lock_for(stream=STREAM, payload={"kind": "nightly"}, max_len=1000)


class TestClaimsDueTogetherGoInOneRoundTrip:
    async def test_a_lone_claim_is_one_script_call(
        self, client: ScriptedRedis, claims: queue_stream.StreamClaims
    ) -> None:
        assert await lock_on(claims).claim(claim_of(SLOT))

        assert client.round_trips == [["EVALSHA"]]
        assert len(client.entries) == 1

    async def test_each_append_sets_the_streams_idle_expiry_in_the_same_script(
        self, client: ScriptedRedis, claims: queue_stream.StreamClaims
    ) -> None:
        assert await lock_on(claims).claim(claim_of(SLOT))

        assert client.round_trips == [["EVALSHA"]]
        assert client.idle_expiries == [7 * 24 * 3_600_000]

    async def test_claims_made_together_are_claimed_and_enqueued_in_one_round_trip(
        self, client: ScriptedRedis, claims: queue_stream.StreamClaims
    ) -> None:
        lock = lock_on(claims)

        won = await asyncio.gather(*(lock.claim(claim_of(slot)) for slot in SLOTS))

        assert won == [True] * 5
        assert client.round_trips == [["EVALSHA"] * 5]
        assert len(client.entries) == 5

    async def test_claims_made_during_a_round_trip_ride_in_the_next(
        self, client: ScriptedRedis, claims: queue_stream.StreamClaims
    ) -> None:
        lock = lock_on(claims)
        first = asyncio.ensure_future(lock.claim(claim_of(SLOTS[0])))
        await asyncio.sleep(0)  # its round trip is on the wire

        won = await asyncio.gather(first, *(lock.claim(claim_of(slot)) for slot in SLOTS[1:]))

        assert won == [True] * 5
        assert client.round_trips == [["EVALSHA"], ["EVALSHA"] * 4]

    async def test_each_claim_of_a_round_trip_gets_its_own_answer_and_entry(
        self, client: ScriptedRedis, claims: queue_stream.StreamClaims
    ) -> None:
        client.keys[slot_keys.slot_key(claim_of(SLOTS[1]).slot_id)] = b"replica-b:9"
        lock = lock_on(claims)
        first, second, third = (claim_of(slot) for slot in SLOTS[:3])

        won = await asyncio.gather(lock.claim(first), lock.claim(second), lock.claim(third))

        assert won == [True, False, True]
        assert lock.take_entry(first.slot_id) == "1796002200000-1"
        assert lock.take_entry(second.slot_id) is None
        assert lock.take_entry(third.slot_id) == "1796002200000-2"

    async def test_a_slot_claimed_only_to_count_it_missed_is_a_plain_set_after_the_claims_to_run(
        self, client: ScriptedRedis, claims: queue_stream.StreamClaims
    ) -> None:
        lock = lock_on(claims)

        won = await asyncio.gather(
            lock.claim(claim_of(SLOTS[0], run=False)), lock.claim(claim_of(SLOTS[1]))
        )

        assert won == [True, True]
        assert client.round_trips == [["EVALSHA", "SET"]]
        assert len(client.entries) == 1


class TestTheScriptIsThereBeforeTheFirstSlot:
    async def test_wiring_a_queue_job_loads_the_script(
        self, client: ScriptedRedis, claims: queue_stream.StreamClaims
    ) -> None:
        client.loaded = False

        lock_on(claims)
        lock_on(claims)
        await asyncio.sleep(0)

        assert client.loaded
        assert client.script_loads == 1  # once, however many jobs are wired

    async def test_a_flushed_script_cache_costs_one_load_and_one_more_round_trip(
        self, client: ScriptedRedis, claims: queue_stream.StreamClaims
    ) -> None:
        lock = lock_on(claims)
        await asyncio.sleep(0)
        client.loaded = False  # SCRIPT FLUSH, or a restarted Redis

        won = await asyncio.gather(*(lock.claim(claim_of(slot)) for slot in SLOTS[:2]))

        assert won == [True, True]
        assert client.round_trips == [["EVALSHA"] * 2] * 2
        assert client.script_loads == 2

    async def test_a_script_that_will_not_stay_loaded_fails_closed(
        self,
        client: ScriptedRedis,
        claims: queue_stream.StreamClaims,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        async def loads_nothing(script: str) -> str:
            return "sha"

        monkeypatch.setattr(client, "script_load", loads_nothing)
        client.loaded = False

        with pytest.raises(protocols.LockUnavailableError, match="NoScriptError"):
            await lock_on(claims).claim(claim_of(SLOT))
        assert len(client.round_trips) == 2


class TestALostReplyIsRecoveredOnce:
    async def test_a_claim_whose_reply_was_lost_after_it_landed_is_ours(
        self, client: ScriptedRedis, claims: queue_stream.StreamClaims
    ) -> None:
        client.drop = (1,)
        lock = lock_on(claims)
        claim = claim_of(SLOT)

        assert await lock.claim(claim)

        assert client.round_trips == [["EVALSHA"], ["EVALSHA", "GET"]]
        assert len(client.entries) == 1  # enqueued once
        assert lock.take_entry(claim.slot_id) == queue_stream.UNKNOWN_ENTRY

    async def test_a_slot_another_replica_holds_stays_lost_after_the_retry(
        self, client: ScriptedRedis, claims: queue_stream.StreamClaims
    ) -> None:
        client.keys[slot_keys.slot_key(claim_of(SLOT).slot_id)] = b"replica-b:9"
        client.drop = (1,)

        assert not await lock_on(claims).claim(claim_of(SLOT))

    async def test_two_lost_round_trips_make_the_claim_fail_closed(
        self, client: ScriptedRedis, claims: queue_stream.StreamClaims
    ) -> None:
        client.drop = (1, 2)
        client.keys[slot_keys.slot_key(claim_of(SLOT).slot_id)] = b"replica-b:9"

        with pytest.raises(protocols.LockUnavailableError, match="ConnectionError"):
            await lock_on(claims).claim(claim_of(SLOT))

    @pytest.mark.looptime
    async def test_behind_sentinel_they_are_a_failover_checked_again_until_it_answers(
        self, client: ScriptedRedis
    ) -> None:
        client.drop = (1, 2)
        client.keys[slot_keys.slot_key(claim_of(SLOT).slot_id)] = b"replica-b:9"
        claims = queue_stream.StreamClaims(
            connections.Connection(
                client,  # type: ignore[arg-type]
                "redis+sentinel://sentinel:26379/punctual",
                None,
                fails_over=True,
            )
        )
        try:
            assert not await lock_on(claims).claim(claim_of(SLOT))
        finally:
            await claims.close()
        assert len(client.round_trips) == 3
        assert client.entries == []


async def test_claims_still_waiting_at_close_fail_closed(
    client: ScriptedRedis, claims: queue_stream.StreamClaims
) -> None:
    lock = lock_on(claims)
    waiting = [asyncio.ensure_future(lock.claim(claim_of(slot))) for slot in SLOTS[:3]]
    await asyncio.sleep(0)

    await claims.close()

    outcomes = await asyncio.gather(*waiting, return_exceptions=True)
    assert all(isinstance(outcome, protocols.LockUnavailableError) for outcome in outcomes)
