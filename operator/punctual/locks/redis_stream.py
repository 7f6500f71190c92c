"""The queue target's slot lock: claiming a slot and appending its stream entry are ONE step.

One Lua script, run atomically by Redis, does ``SET punctual:slot:<slot-id> <holder> NX PX
<ttl>`` and, only if that succeeded, ``XADD <stream> [MAXLEN ~ n] * job ... payload ...``. So a
slot is never enqueued twice (the second claimer's SET fails, and it adds nothing), and never
claimed without its entry: should the XADD fail, the script deletes the key it just set and
the claim fails (closed). A stream key that holds another type is refused before anything is
written. The slot key is the same as the plain Redis lock's (``locks.redis.slot_key``).

The script goes by ``EVALSHA`` (redis-py's ``register_script`` loads it again after a Redis
restart). A claim that lost its reply is retried once, like the plain lock's: if the first
attempt set the key, the retry finds it holding our holder and the slot is ours (its entry
id unknown).

A claim made only to count missed slots (``Claim.run`` false) is a plain ``SET NX``: a missed
slot is never enqueued.

Entries carry the fields ``job`` (``<namespace>/<name>``), ``namespace``, ``slot`` (the slot
id), ``scheduledTime`` (RFC 3339, UTC: the slot plus the job's jitter), ``idempotencyKey``
(the slot id again, for consumers that deduplicate) and ``payload`` (JSON of
``spec.target.queue.payload``; ``{}`` when unset). On Redis Cluster the slot key and the stream
would live in different hash slots: only a standalone Redis (or a primary endpoint) works.
"""

import collections
import json
import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Self

import redis.asyncio
import redis.exceptions

from punctual.locks import redis as redis_lock
from punctual.runtime import seams
from punctual.scheduling import timeline

logger = logging.getLogger(__name__)

CLAIM_AND_ENQUEUE = """
-- KEYS[1] the slot key, KEYS[2] the stream
-- ARGV[1] holder, ARGV[2] TTL in ms, ARGV[3] MAXLEN or '', ARGV[4..] field, value, ...
local kind = redis.call('TYPE', KEYS[2])['ok']
if kind ~= 'stream' and kind ~= 'none' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[2] .. ' holds a ' .. kind .. ', not a stream')
end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return false
end
local added, id
if ARGV[3] == '' then
  added, id = pcall(redis.call, 'XADD', KEYS[2], '*', unpack(ARGV, 4))
else
  added, id = pcall(redis.call, 'XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', unpack(ARGV, 4))
end
if not added then
  redis.call('DEL', KEYS[1])
  local reason = type(id) == 'table' and id['err'] or tostring(id)
  return redis.error_reply('XADD failed, slot released: ' .. reason)
end
return id
"""

UNKNOWN_ENTRY = "(id unknown: the reply was lost)"
_ENTRY_MEMORY = 1024
"""Entry ids kept per job between the claim and the run that reports them."""


def entry_fields(claim: seams.Claim, *, payload: str) -> dict[str, str]:
    """The fields of the stream entry of ``claim``'s slot, in the order they are written."""
    scheduled = claim.scheduled_time or claim.slot
    return {
        "job": f"{claim.job.namespace}/{claim.job.name}",
        "namespace": claim.job.namespace,
        "slot": claim.slot_id,
        "scheduledTime": timeline.rfc3339(scheduled),
        "idempotencyKey": claim.slot_id,
        "payload": payload,
    }


def payload_json(payload: Mapping[str, Any] | None) -> str:
    """Compact, key-sorted JSON: the same bytes on every replica."""
    return json.dumps(payload or {}, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


class StreamClaims:
    """The operator's Redis for queue targets: one client and script, one lock per job."""

    def __init__(self, connection: redis_lock.Connection) -> None:
        self._client = connection.client
        self._description = connection.description
        self._password = connection.password
        self._script = self._client.register_script(CLAIM_AND_ENQUEUE)

    @classmethod
    def from_url(cls, url: str) -> Self:
        """Raises ``ValueError`` for a URL that is not redis:// or rediss:// (see locks.redis)."""
        return cls(redis_lock.connect(url))

    def __repr__(self) -> str:
        return f"StreamClaims({self._description})"

    def lock_for(
        self, *, stream: str, payload: Mapping[str, Any] | None, max_len: int | None
    ) -> "StreamLock":
        return StreamLock(self, stream=stream, payload=payload_json(payload), max_len=max_len)

    async def ping(self) -> None:
        try:
            await self._client.ping()
        except redis.exceptions.RedisError as error:
            raise self._unavailable(None, error) from None

    async def close(self) -> None:
        await self._client.aclose()

    async def claim(
        self, claim: seams.Claim, *, stream: str, fields: Mapping[str, str], max_len: int | None
    ) -> str | None:
        """The new entry's id when ``claim`` won (``UNKNOWN_ENTRY`` if its reply was lost);
        ``None`` when another holder has the slot. Raises ``LockUnavailableError``."""
        key = redis_lock.slot_key(claim.slot_id)
        holder = claim.holder
        ttl_ms = max(1, -(-claim.ttl // timedelta(milliseconds=1)))
        arguments: list[str | int] = [holder, ttl_ms, "" if max_len is None else max_len]
        for name, value in fields.items():
            arguments += [name, value]
        failure: redis.exceptions.RedisError | None = None
        for attempt in range(redis_lock.ATTEMPTS):
            try:
                if claim.run:
                    entry = await self._script(keys=[key, stream], args=arguments)
                else:
                    entry = await self._client.set(key, holder, nx=True, px=ttl_ms) or None
                if entry is not None:
                    return entry.decode() if isinstance(entry, bytes) else str(entry)
                if failure is None:
                    return None
                # The first attempt may have run and lost only its reply: then the slot, and
                # its entry, are ours.
                if await self._client.get(key) == holder.encode():
                    return UNKNOWN_ENTRY
                return None
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as error:
                if isinstance(error, redis.exceptions.AuthenticationError):
                    raise self._unavailable(claim.slot_id, error) from None
                failure = error
                logger.debug(
                    "claim of %s failed on attempt %d: %s",
                    claim.slot_id,
                    attempt + 1,
                    self._scrub(str(error)),
                )
            except redis.exceptions.RedisError as error:
                raise self._unavailable(claim.slot_id, error) from None
        assert failure is not None
        raise self._unavailable(claim.slot_id, failure) from None

    def _unavailable(
        self, slot_id: str | None, error: redis.exceptions.RedisError
    ) -> seams.LockUnavailableError:
        detail = self._scrub(str(error))
        what = f"{type(error).__name__}: {detail}" if detail else type(error).__name__
        subject = f"slot {slot_id} not claimed" if slot_id else "no answer"
        return seams.LockUnavailableError(f"{self._description}: {subject}: {what}")

    def _scrub(self, text: str) -> str:
        return text.replace(self._password, "***") if self._password else text


class StreamLock:
    """``seams.SlotLock`` of one queue-target job: a won claim has appended the slot's entry.

    The entry id waits here for the run that reports it (``take_entry``).
    """

    def __init__(
        self, claims: StreamClaims, *, stream: str, payload: str, max_len: int | None
    ) -> None:
        self._claims = claims
        self.stream = stream
        self._payload = payload
        self._max_len = max_len
        self._entries: collections.OrderedDict[str, str] = collections.OrderedDict()

    def __repr__(self) -> str:
        return f"StreamLock({self.stream!r} on {self._claims!r})"

    async def claim(self, claim: seams.Claim) -> bool:
        entry = await self._claims.claim(
            claim,
            stream=self.stream,
            fields=entry_fields(claim, payload=self._payload),
            max_len=self._max_len,
        )
        if entry is None:
            return False
        if claim.run:
            self._entries[claim.slot_id] = entry
            while len(self._entries) > _ENTRY_MEMORY:
                self._entries.popitem(last=False)
        return True

    def take_entry(self, slot_id: str) -> str | None:
        """The id of the entry the claim of ``slot_id`` appended, once."""
        return self._entries.pop(slot_id, None)
