"""Slot claims on one Redis, sent in pipelines: the machinery ``locks.redis`` (a plain claim)
and ``targets.queue.stream`` (a claim that enqueues) share.

One round trip is in flight at a time; a claim made while it is on the wire rides in the next
one. A lone claim costs one command as it would alone; at hundreds of claims a second (or a
burst on one instant) the driver's per-command costs (a pooled connection, a timeout, a task
switch each) are paid once per round trip, and the batch grows with the load instead of the
lateness. Claims a run waits on go out before claims made only to count a slot missed
(``Waiting``): a replica that fell behind claims thousands of given-up slots at once, and a
run's claim queued behind them would be answered too late for it to run, missed in turn.

Whatever goes wrong fails closed: a claim that cannot be answered raises
``LockUnavailableError`` and nobody runs the slot on this replica's word. A round trip that lost
its connection is sent once more for each of its claims, each with a ``GET`` of its key: if the
first attempt had landed, the key holds our holder and the slot is ours. Error messages carry
the redacted URL only, and the password is scrubbed from the driver's text.

Behind Sentinel, and with replicas acknowledging claims, a claim may be held in doubt rather
than answered: ``replication`` says when and why.
"""

import abc
import asyncio
import collections
import contextlib
import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import redis.asyncio
import redis.asyncio.client
import redis.exceptions

from punctual.contracts import protocols
from punctual.redis_io import replication

logger = logging.getLogger(__name__)

MAX_BATCH = 512
"""Claims per round trip at most: a burst of thousands goes out in a few pipelines."""
PROBE_KEY = "punctual:probe"
"""What ``ping`` writes, expiring a second later: a Redis that answers PING but refuses writes
(out of memory under ``noeviction``, a read-only replica after a failover) takes no claim
either, and must not be reported as answering."""
_PROBE_TTL_MS = 1000
RECHECK_AFTER = 0.5
"""Seconds between the checks of a claim in doubt: a Sentinel failover takes a few seconds."""

_Answer = TypeVar("_Answer")


@dataclass(slots=True, kw_only=True)
class Request(Generic[_Answer]):
    """One claim waiting for its round trip."""

    key: str
    """The slot key (``slot_keys.slot_key``)."""
    holder: bytes
    slot_id: str
    ttl_ms: int
    """How long the claim's key lives: how long a claim in doubt is checked again."""
    answer: "asyncio.Future[_Answer]"
    failure: redis.exceptions.RedisError | None = field(default=None)
    """Why the previous attempt got no answer; ``None`` on the first attempt."""
    reloaded: bool = field(default=False)
    """Sent again once after ``NOSCRIPT``: a second ``NOSCRIPT`` fails it closed."""
    doubt_until: float | None = field(default=None)
    """The event loop's time after which a claim in doubt fails closed; ``None``: not in
    doubt."""
    run: bool = field(default=True)
    """Whether a run waits on the answer (``records.Claim.run``); False: the claim only counts
    its slot missed, once across replicas."""


_Request = TypeVar("_Request", bound=Request[Any])


class Waiting(Generic[_Request]):
    """The claims waiting for a round trip, in two lines: those a run waits on, taken first,
    then those made only to count a slot missed. Within each line, first come first sent."""

    def __init__(self) -> None:
        self._to_run: collections.deque[_Request] = collections.deque()
        self._to_count: collections.deque[_Request] = collections.deque()

    def __len__(self) -> int:
        return len(self._to_run) + len(self._to_count)

    def _line(self, request: _Request) -> "collections.deque[_Request]":
        return self._to_run if request.run else self._to_count

    def append(self, request: _Request) -> None:
        self._line(request).append(request)

    def put_back(self, requests: list[_Request]) -> None:
        """``requests`` (in the order they went) go out first in their lines next time."""
        for request in reversed(requests):
            self._line(request).appendleft(request)

    def take(self, most: int) -> list[_Request]:
        """Up to ``most`` claims for the next round trip, those to run first."""
        batch: list[_Request] = []
        for line in (self._to_run, self._to_count):
            while line and len(batch) < most:
                batch.append(line.popleft())
        return batch

    def take_all(self) -> list[_Request]:
        return self.take(len(self))


class PipelinedClaims(abc.ABC, Generic[_Request]):
    """Queues claims and sends them in pipelines; subclasses say what each claim sends
    (``_add``) and what its replies mean (``_settle``)."""

    def __init__(
        self,
        client: "redis.asyncio.Redis",
        *,
        description: str,
        password: str | None,
        name: str,
        owns_client: bool = True,
        script: str = "",
        acknowledgement: replication.Acknowledgement = replication.NO_WAIT,
        fails_over: bool = False,
    ) -> None:
        """Send through ``client`` (owned from now on: ``close()`` closes it; with
        ``owns_client`` false, a client shared with other users, left open for the one who made
        it). ``description`` names the server in errors (a redacted URL); ``password`` is
        scrubbed from them; ``name`` is the sender task's. ``script``: the Lua script claims
        may go by (``EVALSHA`` of ``self._sha``), loaded again before claims that met
        ``NOSCRIPT`` go out again (``_script_missing``). ``acknowledgement``: the replicas a
        won claim waits for; ``fails_over``: the server is a primary behind Sentinel, whose
        failover a claim waits for (both in ``replication``'s docstring)."""
        self._script = script
        self._sha = hashlib.sha1(script.encode()).hexdigest()
        self._client = client
        self._owns_client = owns_client
        self._description = description
        self._password = password
        self._name = name
        self._queue: Waiting[_Request] = Waiting()
        self._sender: asyncio.Task[None] | None = None
        self._acknowledgement = acknowledgement
        self._fails_over = fails_over
        self._acknowledged = True
        """Whether the round trip being settled was acknowledged."""
        self._closed = False
        self._in_doubt: dict[int, tuple[asyncio.TimerHandle, _Request]] = {}
        """The claims in doubt waiting to be checked again, by ``id``."""
        self._reconnect = False
        """Whether the next round trip starts on a new connection (a claim was put in doubt)."""

    async def ping(self) -> None:
        """Raise ``LockUnavailableError`` unless Redis takes a write now, as a claim needs (the
        lock's health probe): a ``SET`` of ``PROBE_KEY``, not a ``PING``."""
        wanted = self._acknowledgement.replicas
        try:
            await self._client.set(PROBE_KEY, b"", px=_PROBE_TTL_MS)
            acknowledged = (
                await self._client.wait(wanted, self._acknowledgement.timeout_ms) if wanted else 0
            )
        except redis.exceptions.RedisError as error:
            raise self._unavailable(None, error) from None
        if acknowledged < wanted:
            raise self._unavailable(None, self._acknowledgement.shortfall(acknowledged))

    async def close(self) -> None:
        """Stop sending (claims still waiting fail closed), then close the client and every
        pooled connection if it is this sender's own."""
        self._closed = True
        await self._stop(self._sender)
        closed = redis.exceptions.ConnectionError("the lock is closed")
        for handle, _ in self._in_doubt.values():
            handle.cancel()
        self._refuse([request for _, request in self._in_doubt.values()], closed)
        self._in_doubt.clear()
        self._refuse(self._queue.take_all(), closed)
        if self._owns_client:
            await self._client.aclose()

    @staticmethod
    async def _stop(task: "asyncio.Task[None] | None") -> None:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _submit(self, request: _Request) -> Any:
        """Queue ``request`` for the next round trip and wait for its answer."""
        self._queue.append(request)
        self._wake_sender()
        return await request.answer

    def _wake_sender(self) -> None:
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send(), name=self._name)

    @abc.abstractmethod
    def _add(self, pipeline: redis.asyncio.client.Pipeline, request: _Request) -> None:
        """Queue the one command of ``request`` on ``pipeline``."""

    @abc.abstractmethod
    def _settle(self, request: _Request, reply: object, holder: object) -> bool:
        """Answer ``request`` from its command's reply (an exception for an error reply) and,
        on a second attempt, the holder its key shows; False to send it again (once). A claim
        won is answered through ``_won`` (or after ``_held``), which holds it in doubt when the
        round trip went unacknowledged."""

    def _won(self, request: _Request, answer: Any) -> None:
        """Answer a claim won, unless it is held in doubt (``_held``)."""
        if not self._held(request):
            self._answer(request, answer)

    def _held(self, request: _Request) -> bool:
        """Whether the round trip being settled went unacknowledged: then the claim it won is
        in doubt, to be checked again (``_doubt``), and is not answered now."""
        if self._acknowledged:
            return False
        self._doubt(request, self._acknowledgement.shortfall(None))
        return True

    def _doubt(self, request: _Request, error: redis.exceptions.RedisError) -> None:
        """Check ``request`` again in ``RECHECK_AFTER`` seconds, or fail it closed once its key
        has expired (``error`` says why)."""
        loop = asyncio.get_running_loop()
        if request.doubt_until is None:
            # From the reply on: the key was set before it, so it has expired by then.
            request.doubt_until = loop.time() + request.ttl_ms / 1000
            logger.info(
                "claim of %s in doubt: %s; checking it again",
                request.slot_id,
                self._scrub(str(error)),
            )
        if loop.time() >= request.doubt_until:
            self._fail(request, error)
            return
        request.failure = error
        request.reloaded = False
        self._reconnect = True
        handle = loop.call_later(RECHECK_AFTER, self._check_again, request)
        self._in_doubt[id(request)] = (handle, request)

    async def _drop_idle_connections(self) -> None:
        """Close the pool's idle connections, so that the next round trip opens one and, behind
        Sentinel, asks for the current primary: a connection to a deposed primary that came
        back (SIGCONT, a partition healed) answers ``NOREPLICAS``, or takes a claim no replica
        acknowledges, until Sentinel turns it into a replica, which it notices only at its next
        ``INFO`` (up to 10 s), while every claim in doubt checked on it stays in doubt."""
        self._reconnect = False
        try:
            await self._client.connection_pool.disconnect(inuse_connections=False)
        except (redis.exceptions.RedisError, OSError) as error:  # the round trip will say so
            logger.debug("closing idle connections failed: %s", self._scrub(str(error)))

    def _check_again(self, request: _Request) -> None:
        self._in_doubt.pop(id(request), None)
        if request.answer.done():  # its caller was cancelled
            return
        self._queue.append(request)
        self._wake_sender()

    async def _before_sending_again(self) -> None:
        """Called before claims ``_settle`` returned False for go out again: loads the script
        (a Redis restarted, or ``SCRIPT FLUSH``)."""
        await self._load_script()

    async def _load_script(self) -> None:
        if not self._script:
            return
        try:
            await self._client.script_load(self._script)
        except redis.exceptions.RedisError as error:  # the claims will say so, if it lasts
            logger.debug("loading the claim script failed: %s", self._scrub(str(error)))

    @staticmethod
    def _script_missing(request: _Request, reply: object) -> bool:
        """Whether ``reply`` is a first ``NOSCRIPT`` for ``request``: nothing ran, and
        ``_settle`` returns False to send it again once the script is loaded."""
        if isinstance(reply, redis.exceptions.NoScriptError) and not request.reloaded:
            request.reloaded = True
            return True
        return False

    async def _send(self) -> None:
        """Round trips until no claim waits (claims made meanwhile ride in the next one)."""
        while self._queue:
            batch = self._queue.take(MAX_BATCH)
            try:
                # A claim whose caller was cancelled needs no answer.
                await self._round_trip([r for r in batch if not r.answer.done()])
            except asyncio.CancelledError:  # closing: nobody is left to answer them
                self._refuse(batch, redis.exceptions.ConnectionError("the lock is closed"))
                raise
            except Exception as error:  # a bug: fail these claims closed, keep sending others
                logger.exception("a round trip of %d claims failed", len(batch))
                self._refuse(batch, redis.exceptions.RedisError(type(error).__name__))

    async def _round_trip(self, batch: list[_Request]) -> None:
        if not batch:
            return
        if self._reconnect:
            await self._drop_idle_connections()
        pipeline = self._client.pipeline(transaction=False)
        for request in batch:
            self._add(pipeline, request)
            if request.failure is not None:
                # The earlier attempt may have landed and lost only its reply: then the slot
                # is ours, and answering "lost" would leave it run by nobody.
                pipeline.get(request.key)
        wanted = self._acknowledgement.replicas
        if wanted:
            pipeline.wait(wanted, self._acknowledgement.timeout_ms)
        try:
            replies = iter(await pipeline.execute(raise_on_error=False))
        except redis.exceptions.AuthenticationError as error:
            self._refuse(batch, error)
            return
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as error:
            self._retry(batch, error)
            return
        except redis.exceptions.RedisError as error:
            self._refuse(batch, error)
            return
        settled = [
            (request, next(replies), next(replies) if request.failure is not None else None)
            for request in batch
        ]
        acknowledged = next(replies, None) if wanted else wanted
        self._acknowledged = isinstance(acknowledged, int) and acknowledged >= wanted
        again = []
        try:
            for request, reply, holder in settled:
                if not self._settle(request, reply, holder):
                    again.append(request)
        finally:
            self._acknowledged = True
        if again:
            await self._before_sending_again()
            self._queue.put_back(again)

    def _retry(self, batch: list[_Request], error: redis.exceptions.RedisError) -> None:
        """Once more, first in the next round trip; a second failure fails the claim closed,
        or behind Sentinel is a failover under way, checked again until it ends (``_refuse``)."""
        again = []
        for request in batch:
            if request.failure is not None:
                self._refuse([request], error)
                continue
            request.failure = error
            logger.debug("claim of %s failed once: %s", request.slot_id, self._scrub(str(error)))
            again.append(request)
        self._queue.put_back(again)

    @staticmethod
    def _answer(request: Request[_Answer], answer: _Answer) -> None:
        if not request.answer.done():
            request.answer.set_result(answer)

    def _refuse(self, batch: Iterable[_Request], error: redis.exceptions.RedisError) -> None:
        """Fail ``batch`` closed; a claim in doubt, or behind Sentinel one the failover of its
        server kept from an answer (``during_a_failover``), is checked again instead, unless
        closing."""
        held = self._fails_over and replication.during_a_failover(error)
        for request in batch:
            if (request.doubt_until is not None or held) and not self._closed:
                self._doubt(request, error)
            else:
                self._fail(request, error)

    def _fail(self, request: _Request, error: redis.exceptions.RedisError) -> None:
        if not request.answer.done():
            request.answer.set_exception(self._unavailable(request.slot_id, error))

    def _unavailable(
        self, slot_id: str | None, error: redis.exceptions.RedisError
    ) -> protocols.LockUnavailableError:
        # Raised from None at every raise site: the driver's exception (and whatever it holds)
        # stays out of tracebacks; the message says everything an operator needs.
        detail = self._scrub(str(error))
        what = f"{type(error).__name__}: {detail}" if detail else type(error).__name__
        subject = f"slot {slot_id} not claimed" if slot_id else "no answer"
        return protocols.LockUnavailableError(f"{self._description}: {subject}: {what}")

    def _scrub(self, text: str) -> str:
        return text.replace(self._password, "***") if self._password else text
