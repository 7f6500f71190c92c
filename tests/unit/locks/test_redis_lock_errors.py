"""How the Redis lock answers when Redis misbehaves, with a scripted client in place of Redis.

Failures a live server cannot be made to produce on cue: a reply lost after the write landed,
a read-only replica, errors whose text carries the password, claims no replica acknowledged.
"""

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import pytest
import redis.exceptions

from punctual.contracts import protocols, records
from punctual.locks import redis as redis_lock
from punctual.redis_io import lock_memory, pipelines, replication, slot_keys
from punctual.scheduling import slots

JOB = slots.JobRef(namespace="reports", name="nightly", uid="5f0c1d2e-0000-4000-8000-00000000abcd")
SLOT = datetime(2026, 1, 1, 2, 30, tzinfo=UTC)
CLAIM = records.Claim(
    job=JOB, slot=SLOT, slot_id=slots.slot_id(JOB, SLOT), holder="replica-a:1", ttl=timedelta(1)
)
PASSWORD = "hunter2-password"

Step = Callable[["ScriptedRedis", str, bytes], bool | int | None]


def lands_then_drops_the_reply(client: "ScriptedRedis", key: str, value: bytes) -> bool | None:
    client.keys.setdefault(key, value)
    raise redis.exceptions.ConnectionError("Connection reset by peer")


def set_nx(client: "ScriptedRedis", key: str, value: bytes) -> bool | None:
    if key in client.keys:
        return None
    client.keys[key] = value
    return True


def wins_a_slot_it_cannot_prove(client: "ScriptedRedis", key: str, value: bytes) -> int | None:
    """The script's answer for a slot due before the server started: the key is set, marked."""
    if key in client.keys:
        return None
    client.keys[key] = value + lock_memory.FORGOTTEN_MARK
    return lock_memory.FORGOTTEN


def forgets_then_drops_the_reply(client: "ScriptedRedis", key: str, value: bytes) -> None:
    wins_a_slot_it_cannot_prove(client, key, value)
    raise redis.exceptions.ConnectionError("Connection reset by peer")


def fails_with(error: Exception) -> Step:
    def step(client: "ScriptedRedis", key: str, value: bytes) -> bool | None:
        raise error

    return step


class ScriptedPool:
    """The pool's idle connections, closed on demand: counted."""

    def __init__(self) -> None:
        self.idle_closed = 0

    async def disconnect(self, *, inuse_connections: bool) -> None:
        assert not inuse_connections
        self.idle_closed += 1


class ScriptedRedis:
    """Answers each SET with the next scripted step; GET reads what the steps stored."""

    def __init__(
        self, *steps: Step, keys: dict[str, bytes] | None = None, acks: list[int] | None = None
    ) -> None:
        self.steps = list(steps)
        self.acks = list(acks or [])
        """What each ``WAIT`` answers, in order; once used up, as many as it asked for."""
        self.keys = dict(keys or {})
        self.sets: list[tuple[str, bytes, int]] = []
        self.round_trips: list[int] = []
        """Commands per pipeline, in order."""
        self.connection_pool = ScriptedPool()

    async def set(self, key: str, value: bytes, *, nx: bool, px: int) -> bool | int | None:
        assert nx
        self.sets.append((key, value, px))
        return self.steps.pop(0)(self, key, value)

    async def get(self, key: str) -> bytes | None:
        return self.keys.get(key)

    def pipeline(self, *, transaction: bool) -> "ScriptedPipeline":
        assert not transaction
        return ScriptedPipeline(self)

    async def aclose(self) -> None:
        pass


class ScriptedPipeline:
    """Like redis-py's: commands queue, ``execute`` answers them in order; an error of the
    connection fails the whole round trip, an error reply takes its command's place."""

    def __init__(self, client: ScriptedRedis) -> None:
        self.client = client
        self.commands: list[Callable[[], Awaitable[bytes | bool | int | None]]] = []

    def evalsha(self, sha: str, numkeys: int, key: str, *arguments: object) -> None:
        """The claim script: its SET is the next scripted step; 1 won, 0 lost, or what the
        step answers in the script's own words (``lock_memory.FORGOTTEN``). ``arguments``:
        holder, TTL in ms, slot in ms, channel, notice."""
        value, px = arguments[0], arguments[1]
        assert isinstance(value, bytes)
        assert isinstance(px, int)

        async def script() -> int:
            won = await self.client.set(key, value, nx=True, px=px)
            return int(won) if isinstance(won, int) else int(won is not None)

        assert numkeys == 1
        self.commands.append(script)

    def get(self, key: str) -> None:
        self.commands.append(lambda: self.client.get(key))

    def wait(self, replicas: int, timeout: int) -> None:
        async def acknowledged() -> int:
            return self.client.acks.pop(0) if self.client.acks else replicas

        assert timeout > 0
        self.commands.append(acknowledged)

    async def execute(self, *, raise_on_error: bool) -> list[object]:
        assert not raise_on_error
        self.client.round_trips.append(len(self.commands))
        await asyncio.sleep(0)  # on the wire: claims made meanwhile wait for the next one
        replies: list[object] = []
        for command in self.commands:
            try:
                replies.append(await command())
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
                raise
            except redis.exceptions.RedisError as error:
                replies.append(error)
        return replies


def lock_on(
    client: ScriptedRedis, *, wait_for: int = 0, behind_sentinel: bool = False
) -> redis_lock.RedisLock:
    return redis_lock.RedisLock(
        client,  # type: ignore[arg-type]  # the subset of redis.asyncio.Redis the lock uses
        description="redis://:***@redis:6379/0",
        password=PASSWORD,
        acknowledgement=replication.Acknowledgement(replicas=wait_for),
        fails_over=behind_sentinel,
    )


class TestTheClaimSetsOneKeyWithTheTtl:
    async def test_set_nx_px_on_the_slot_key(self) -> None:
        client = ScriptedRedis(set_nx)

        assert await lock_on(client).claim(CLAIM)

        assert client.sets == [
            (f"punctual:slot:{CLAIM.slot_id}", b"replica-a:1", 86_400_000),
        ]


def claim_of(slot: datetime, holder: str = "replica-a:1") -> records.Claim:
    return records.Claim(
        job=JOB, slot=slot, slot_id=slots.slot_id(JOB, slot), holder=holder, ttl=timedelta(1)
    )


SLOTS = [SLOT + timedelta(seconds=n) for n in range(5)]


class TestClaimsMadeDuringARoundTripRideInTheNext:
    async def test_a_lone_claim_is_one_set(self) -> None:
        client = ScriptedRedis(set_nx)

        assert await lock_on(client).claim(CLAIM)
        assert client.round_trips == [1]

    async def test_claims_made_together_go_in_one_round_trip(self) -> None:
        client = ScriptedRedis(*[set_nx] * 5)
        lock = lock_on(client)

        won = await asyncio.gather(*(lock.claim(claim_of(slot)) for slot in SLOTS))

        assert won == [True] * 5
        assert client.round_trips == [5]

    async def test_claims_made_during_a_round_trip_wait_for_the_next(self) -> None:
        client = ScriptedRedis(*[set_nx] * 5)
        lock = lock_on(client)
        first = asyncio.ensure_future(lock.claim(claim_of(SLOTS[0])))
        await asyncio.sleep(0)  # its round trip is on the wire

        won = await asyncio.gather(first, *(lock.claim(claim_of(slot)) for slot in SLOTS[1:]))

        assert won == [True] * 5
        assert client.round_trips == [1, 4]

    async def test_each_claim_of_a_round_trip_gets_its_own_answer(self) -> None:
        client = ScriptedRedis(
            *[set_nx] * 3, keys={slot_keys.slot_key(claim_of(SLOTS[1]).slot_id): b"replica-b:9"}
        )
        lock = lock_on(client)

        won = await asyncio.gather(*(lock.claim(claim_of(slot)) for slot in SLOTS[:3]))

        assert won == [True, False, True]

    async def test_a_dropped_round_trip_is_retried_once_for_each_claim_in_it(self) -> None:
        client = ScriptedRedis(set_nx, lands_then_drops_the_reply, set_nx, set_nx)
        lock = lock_on(client)

        won = await asyncio.gather(*(lock.claim(claim_of(slot)) for slot in SLOTS[:2]))

        # Both keys landed before the drop: both slots are ours, found by a GET after each SET.
        assert won == [True, True]
        assert client.round_trips == [2, 4]

    async def test_a_cancelled_claim_leaves_the_others_answered(self) -> None:
        client = ScriptedRedis(*[set_nx] * 3)
        lock = lock_on(client)
        claims = [asyncio.ensure_future(lock.claim(claim_of(slot))) for slot in SLOTS[:3]]
        await asyncio.sleep(0)
        claims[1].cancel()

        first, cancelled, third = await asyncio.gather(*claims, return_exceptions=True)
        assert (first, type(cancelled), third) == (True, asyncio.CancelledError, True)

    async def test_claims_still_waiting_at_close_fail_closed(self) -> None:
        lock = lock_on(ScriptedRedis(*[set_nx] * 3))
        claims = [asyncio.ensure_future(lock.claim(claim_of(slot))) for slot in SLOTS[:3]]
        await asyncio.sleep(0)

        await lock.close()

        outcomes = await asyncio.gather(*claims, return_exceptions=True)
        assert all(isinstance(outcome, protocols.LockUnavailableError) for outcome in outcomes)


def counting_claim_of(slot: datetime) -> records.Claim:
    """A claim made only to count ``slot`` missed: nothing runs on it."""
    return dataclasses.replace(claim_of(slot), purpose=records.CountedMissed())


BEHIND = [SLOT - timedelta(seconds=n) for n in range(3 * pipelines.MAX_BATCH, 0, -1)]
"""A replica that fell behind: three round trips' worth of slots given up, to count."""


class TestAClaimToRunGoesBeforeClaimsThatOnlyCount:
    async def test_it_rides_in_the_next_round_trip_ahead_of_a_backlog(self) -> None:
        client = ScriptedRedis(*[set_nx] * (len(BEHIND) + 1))
        lock = lock_on(client)
        counting = [asyncio.ensure_future(lock.claim(counting_claim_of(slot))) for slot in BEHIND]
        await asyncio.sleep(0)  # the backlog's first round trip is on the wire
        to_run = asyncio.ensure_future(lock.claim(CLAIM))

        assert await to_run
        assert client.round_trips[:2] == [pipelines.MAX_BATCH, pipelines.MAX_BATCH]
        assert client.sets[pipelines.MAX_BATCH][0] == slot_keys.slot_key(CLAIM.slot_id)
        assert all(await asyncio.gather(*counting))

    async def test_claims_that_only_count_keep_their_order(self) -> None:
        client = ScriptedRedis(*[set_nx] * (len(BEHIND) + 1))
        lock = lock_on(client)

        await asyncio.gather(
            *(lock.claim(counting_claim_of(slot)) for slot in BEHIND), lock.claim(CLAIM)
        )

        counted = [key for key, _, _ in client.sets[1:]]
        assert counted == [slot_keys.slot_key(slots.slot_id(JOB, slot)) for slot in BEHIND]


class TestALostReplyIsRecoveredOnce:
    async def test_a_slot_set_before_the_connection_dropped_is_ours(self) -> None:
        client = ScriptedRedis(lands_then_drops_the_reply, set_nx)

        assert await lock_on(client).claim(CLAIM)
        assert len(client.sets) == 2

    async def test_a_slot_another_replica_holds_stays_lost_after_a_retry(self) -> None:
        key = slot_keys.slot_key(CLAIM.slot_id)
        client = ScriptedRedis(
            fails_with(redis.exceptions.ConnectionError("reset")),
            set_nx,
            keys={key: b"replica-b:9"},
        )

        assert not await lock_on(client).claim(CLAIM)

    async def test_an_existing_key_is_a_loss_without_a_second_round_trip(self) -> None:
        client = ScriptedRedis(set_nx, keys={slot_keys.slot_key(CLAIM.slot_id): b"replica-a:1"})

        # Holders are unique per claim, so an existing key is another claim's, whoever's it is.
        assert not await lock_on(client).claim(CLAIM)


class TestWhatCannotBeAnsweredFailsClosed:
    """On a standalone server, which no failover brings back: a server down is reported at
    once."""

    async def test_two_connection_errors_make_the_lock_unavailable(self) -> None:
        client = ScriptedRedis(
            fails_with(redis.exceptions.ConnectionError("refused")),
            fails_with(redis.exceptions.TimeoutError("Timeout reading from socket")),
        )

        with pytest.raises(protocols.LockUnavailableError, match="TimeoutError: Timeout reading"):
            await lock_on(client).claim(CLAIM)

    @pytest.mark.parametrize(
        "error",
        [
            redis.exceptions.ReadOnlyError("You can't write against a read only replica."),
            redis.exceptions.ResponseError("OOM command not allowed"),
            redis.exceptions.AuthenticationError("invalid username-password pair"),
        ],
    )
    async def test_a_refusal_is_not_retried(self, error: redis.exceptions.RedisError) -> None:
        client = ScriptedRedis(fails_with(error), set_nx)

        with pytest.raises(protocols.LockUnavailableError, match=type(error).__name__):
            await lock_on(client).claim(CLAIM)
        assert len(client.sets) == 1

    async def test_the_error_names_the_server_and_the_slot(self) -> None:
        client = ScriptedRedis(*[fails_with(redis.exceptions.ConnectionError("refused"))] * 2)

        with pytest.raises(protocols.LockUnavailableError) as raised:
            await lock_on(client).claim(CLAIM)

        assert str(raised.value) == (
            f"redis://:***@redis:6379/0: slot {CLAIM.slot_id} not claimed: ConnectionError: refused"
        )

    async def test_the_password_is_scrubbed_from_driver_messages(self) -> None:
        leaky = redis.exceptions.ResponseError(f"WRONGPASS for {PASSWORD}")

        with pytest.raises(protocols.LockUnavailableError) as raised:
            await lock_on(ScriptedRedis(fails_with(leaky))).claim(CLAIM)

        assert PASSWORD not in str(raised.value)
        # Nor does the driver's exception (and whatever it holds) travel along with it.
        assert raised.value.__cause__ is None
        assert raised.value.__context__ is None or raised.value.__suppress_context__

    async def test_a_slot_id_with_a_newline_is_refused_before_redis_is_asked(self) -> None:
        client = ScriptedRedis()
        bad = records.Claim(
            job=JOB, slot=SLOT, slot_id="a/b/uid/1\nDEL x", holder="replica-a:1", ttl=timedelta(1)
        )

        with pytest.raises(ValueError, match="refusing a slot id"):
            await lock_on(client).claim(bad)
        assert client.sets == []


class TestASlotTheServerCannotProveUnclaimedIsNotRun:
    async def test_its_claim_says_the_lock_forgot(self) -> None:
        client = ScriptedRedis(wins_a_slot_it_cannot_prove)

        with pytest.raises(protocols.LockForgotError, match="before the server started"):
            await lock_on(client).claim(CLAIM)

    async def test_a_lost_reply_of_such_a_claim_is_not_read_as_won(self) -> None:
        client = ScriptedRedis(forgets_then_drops_the_reply, set_nx)

        with pytest.raises(protocols.LockForgotError):
            await lock_on(client).claim(CLAIM)

    async def test_another_holders_forgotten_slot_is_lost(self) -> None:
        key = slot_keys.slot_key(CLAIM.slot_id)
        client = ScriptedRedis(set_nx, keys={key: b"replica-b:9" + lock_memory.FORGOTTEN_MARK})

        assert not await lock_on(client).claim(CLAIM)


REFUSED = fails_with(redis.exceptions.ConnectionError("Connection refused"))
NO_PRIMARY = fails_with(redis.exceptions.ConnectionError("No master found for 'punctual'"))


@pytest.mark.looptime(start=time.monotonic)
class TestBehindSentinelAClaimTheFailoverKeptFromAnAnswerIsCheckedAgain:
    """Without ``WAIT`` too: the server gone, no primary named, or a server that is no primary
    yet; the claim is checked again until the new primary answers it."""

    @pytest.mark.parametrize(
        "refusal",
        [
            redis.exceptions.ReadOnlyError("You can't write against a read only replica."),
            redis.exceptions.ResponseError("NOREPLICAS Not enough good replicas to write."),
            redis.exceptions.MasterDownError("Link with MASTER is down"),
            redis.exceptions.BusyLoadingError("Redis is loading the dataset in memory"),
        ],
    )
    async def test_a_server_that_is_no_primary_yet(
        self, refusal: redis.exceptions.RedisError
    ) -> None:
        client = ScriptedRedis(fails_with(refusal), set_nx)

        assert await lock_on(client, behind_sentinel=True).claim(CLAIM)
        assert len(client.sets) == 2

    async def test_a_failover_of_several_round_trips_ends_in_the_claim_won(self) -> None:
        client = ScriptedRedis(REFUSED, REFUSED, NO_PRIMARY, NO_PRIMARY, set_nx)
        loop = asyncio.get_running_loop()
        start = loop.time()

        assert await lock_on(client, behind_sentinel=True).claim(CLAIM)
        # Sent once more at once, then every RECHECK_AFTER: the answer comes with the primary.
        assert loop.time() - start == pytest.approx(3 * pipelines.RECHECK_AFTER)

    async def test_a_slot_another_replica_claimed_meanwhile_is_lost(self) -> None:
        client = ScriptedRedis(REFUSED, REFUSED, claimed_by_another_after_the_failover)

        assert not await lock_on(client, behind_sentinel=True).claim(CLAIM)

    async def test_a_claim_whose_reply_was_lost_twice_after_it_landed_is_ours(self) -> None:
        client = ScriptedRedis(
            lands_then_drops_the_reply, fails_with(redis.exceptions.TimeoutError("timeout")), set_nx
        )

        assert await lock_on(client, behind_sentinel=True).claim(CLAIM)

    async def test_each_check_goes_out_on_a_new_connection(self) -> None:
        # Behind Sentinel a new connection asks for the current primary: an old one may still
        # reach a deposed primary that came back, answering NOREPLICAS until it is demoted.
        norepl = fails_with(redis.exceptions.ResponseError("NOREPLICAS Not enough replicas"))
        client = ScriptedRedis(norepl, norepl, set_nx)

        assert await lock_on(client, behind_sentinel=True).claim(CLAIM)
        assert client.connection_pool.idle_closed == 2

    async def test_a_claim_answered_at_once_keeps_its_connection(self) -> None:
        client = ScriptedRedis(set_nx)

        assert await lock_on(client, behind_sentinel=True).claim(CLAIM)
        assert client.connection_pool.idle_closed == 0

    async def test_claims_of_a_round_trip_are_checked_again_together(self) -> None:
        # A refused connection fails a whole round trip: the first one and its retry.
        client = ScriptedRedis(REFUSED, REFUSED, *[set_nx] * 3)
        lock = lock_on(client, behind_sentinel=True)

        won = await asyncio.gather(*(lock.claim(claim_of(slot)) for slot in SLOTS[:3]))

        assert won == [True] * 3
        # Each check carries the GET of the claim's key.
        assert client.round_trips == [3, 6, 6]

    async def test_connection_errors_for_as_long_as_the_key_lives_make_the_lock_unavailable(
        self,
    ) -> None:
        client = ScriptedRedis(
            fails_with(redis.exceptions.ConnectionError("refused")),
            *[fails_with(redis.exceptions.TimeoutError("Timeout reading from socket"))] * 100,
        )
        loop = asyncio.get_running_loop()
        start = loop.time()

        with pytest.raises(protocols.LockUnavailableError, match="TimeoutError: Timeout reading"):
            await lock_on(client, behind_sentinel=True).claim(SHORT_LIVED)
        assert 2 <= loop.time() - start < 2 + 2 * pipelines.RECHECK_AFTER

    async def test_wrong_credentials_are_not_waited_for(self) -> None:
        wrongpass = redis.exceptions.AuthenticationError("invalid username-password pair")
        client = ScriptedRedis(fails_with(wrongpass), set_nx)

        with pytest.raises(protocols.LockUnavailableError, match="AuthenticationError"):
            await lock_on(client, behind_sentinel=True).claim(CLAIM)
        assert len(client.sets) == 1


SHORT_LIVED = records.Claim(
    job=JOB, slot=SLOT, slot_id=CLAIM.slot_id, holder="replica-a:1", ttl=timedelta(seconds=2)
)
"""A claim whose key lives 2 s: as long as it is checked again through a failover."""


def lost_in_the_failover(client: ScriptedRedis, key: str, value: bytes) -> bool | None:
    """The new primary never had the key: the claim sets it again."""
    client.keys.pop(key, None)
    return set_nx(client, key, value)


def claimed_by_another_after_the_failover(
    client: ScriptedRedis, key: str, value: bytes
) -> bool | None:
    client.keys[key] = b"replica-b:9"
    return set_nx(client, key, value)


@pytest.mark.looptime(start=time.monotonic)
class TestAClaimCountsOnceReplicasHaveIt:
    async def test_one_wait_ends_each_round_trip_of_claims(self) -> None:
        client = ScriptedRedis(*[set_nx] * 5)
        lock = lock_on(client, wait_for=1)

        won = await asyncio.gather(*(lock.claim(claim_of(slot)) for slot in SLOTS))

        assert won == [True] * 5
        assert client.round_trips == [6]

    async def test_without_replicas_to_wait_for_there_is_no_wait(self) -> None:
        client = ScriptedRedis(set_nx, acks=[0])

        assert await lock_on(client).claim(CLAIM)
        assert client.round_trips == [1]

    async def test_an_unacknowledged_win_is_checked_again_and_is_ours_if_the_key_survived(
        self,
    ) -> None:
        client = ScriptedRedis(set_nx, set_nx, acks=[0, 1])

        assert await lock_on(client, wait_for=1).claim(CLAIM)
        # The claim and its WAIT, then the claim again with a GET of its key and a WAIT.
        assert client.round_trips == [2, 3]

    async def test_a_key_the_failover_lost_is_claimed_again(self) -> None:
        client = ScriptedRedis(set_nx, lost_in_the_failover, acks=[0, 1])

        assert await lock_on(client, wait_for=1).claim(CLAIM)

    async def test_a_slot_another_replica_claimed_after_the_failover_is_lost(self) -> None:
        client = ScriptedRedis(set_nx, claimed_by_another_after_the_failover, acks=[0])

        assert not await lock_on(client, wait_for=1).claim(CLAIM)

    async def test_a_loss_needs_no_acknowledgement(self) -> None:
        key = slot_keys.slot_key(CLAIM.slot_id)
        client = ScriptedRedis(set_nx, keys={key: b"replica-b:9"}, acks=[0])

        assert not await lock_on(client, wait_for=1).claim(CLAIM)
        assert client.round_trips == [2]

    async def test_a_failover_that_takes_several_round_trips_keeps_the_claim_in_doubt(
        self,
    ) -> None:
        client = ScriptedRedis(
            set_nx,
            fails_with(redis.exceptions.ConnectionError("refused")),
            fails_with(redis.exceptions.ConnectionError("No master found for 'punctual'")),
            fails_with(redis.exceptions.TimeoutError("Timeout reading from socket")),
            lost_in_the_failover,
            acks=[0, 1],
        )

        assert await lock_on(client, wait_for=1).claim(CLAIM)
        assert len(client.sets) == 5

    @pytest.mark.parametrize(
        "error",
        [
            redis.exceptions.ReadOnlyError("You can't write against a read only replica."),
            redis.exceptions.ResponseError("NOREPLICAS Not enough good replicas to write."),
        ],
    )
    async def test_a_refusal_of_a_claim_in_doubt_is_checked_again(
        self, error: redis.exceptions.RedisError
    ) -> None:
        def refused_by_a_server_without_the_key(
            client: ScriptedRedis, key: str, value: bytes
        ) -> None:
            client.keys.pop(key, None)
            raise error

        client = ScriptedRedis(set_nx, refused_by_a_server_without_the_key, set_nx, acks=[0, 1])

        assert await lock_on(client, wait_for=1).claim(CLAIM)
        assert len(client.sets) == 3

    async def test_a_claim_in_doubt_for_as_long_as_its_key_lives_fails_closed(self) -> None:
        claim = records.Claim(
            job=JOB,
            slot=SLOT,
            slot_id=CLAIM.slot_id,
            holder="replica-a:1",
            ttl=timedelta(seconds=2),
        )
        client = ScriptedRedis(*[set_nx] * 100, acks=[0] * 100)
        loop = asyncio.get_running_loop()
        start = loop.time()

        with pytest.raises(protocols.LockUnavailableError, match="fewer than 1 replicas"):
            await lock_on(client, wait_for=1).claim(claim)
        assert 2 <= loop.time() - start < 2 + 2 * pipelines.RECHECK_AFTER

    async def test_a_forgotten_slot_unacknowledged_is_checked_again_too(self) -> None:
        client = ScriptedRedis(wins_a_slot_it_cannot_prove, set_nx, acks=[0, 1])

        with pytest.raises(protocols.LockForgotError):
            await lock_on(client, wait_for=1).claim(CLAIM)
        assert client.round_trips == [2, 3]

    async def test_claims_in_doubt_at_close_fail_closed(self) -> None:
        lock = lock_on(ScriptedRedis(*[set_nx] * 3, acks=[0] * 3), wait_for=1)
        claim = asyncio.ensure_future(lock.claim(CLAIM))
        await asyncio.sleep(pipelines.RECHECK_AFTER / 2)  # held in doubt meanwhile

        await lock.close()

        with pytest.raises(protocols.LockUnavailableError):
            await claim
