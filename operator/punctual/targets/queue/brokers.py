"""The tenants' brokers: a Redis named by a Secret in the job's namespace, checked like an HTTP
target's URL, connected with bounded pools and timeouts, and pushed to exactly once per slot.

**Exactly once per slot.** One Lua script, run atomically by the broker, claims the slot
(``SET punctual:enqueued:<slot id> <message id> NX PX <one day>``) and, only if that succeeded,
runs the push (``pushes.Push``: the framework's own writes). So a slot yields one message even
when two replicas both believed they held the slot's lock (the slot lock in the operator's lock
backend stays as it is; this is the broker's own guard), and a second call for the same slot
adds nothing. A framework whose writes depend on what the broker holds (BullMQ's) brings its
own Lua (``pushes.Script``), run after the claim in the same script (``CLAIM_THEN``). Every key
the push writes is checked for its type first: a key of another type fails the run before
anything is written. The claim key outlives the slot by a day
(``CLAIM_TTL_MS``); it is the only key the operator writes besides the framework's.

**Not a Redis Cluster.** The claim and the framework's keys cannot share a hash slot (the
frameworks name their keys without a hash tag), so only a standalone Redis (or a primary
endpoint) works. A Cluster node answers the script with ``CROSSSLOT``, ``MOVED``, ``ASK`` or
``CLUSTERDOWN``: the run fails with ``BrokerIsClusterError``, saying so, and nothing is written;
the executor makes it the job's ``Ready: False`` (``BrokerIsCluster``, ``targets.problems``).

**Outside input.** The URL is the tenant's: ``redis://`` or ``rediss://`` (TLS, verified against
the operator's CA bundle) only, with no query options (the driver would let them override the
bounds below, or read the operator's files as TLS keys), its host
admitted by the operator's allowlist (``--http-allowed-hosts``) and refused, like an HTTP
target's, when it is, or resolves to, a link-local, metadata or API server address
(``punctual.targets.addresses``). The name is resolved and its addresses checked before each
push; the driver then resolves it again to connect (a name that changes its answer in between is
the cluster DNS owner's business, as for the allowlist). A primary behind Sentinel is named as
the operator's own Redis is (``redis_io.connections``: ``redis+sentinel://`` or
``rediss+sentinel://``, the Sentinels' addresses and the service; ``?db=N`` its one query
option): each Sentinel's address is checked so before each push, and the primary they name
before each connection to it (a Sentinel is the tenant's too, and could name any address); the
Sentinels' replies are bounded like the broker's.

**Bounded.** One client per namespace and URL (a rotated Secret's new URL gets a new one), at
most ``MAX_CLIENTS`` of them (the least recently used is closed), each with a pool of at most
``POOL_SIZE`` connections and timeouts on waiting for a connection, connecting and each reply;
the whole push is bounded by ``PUSH_TIMEOUT`` as well. A broker that never answers fails its
own runs with a message saying so; it holds only its own pool's connections, never the event
loop or another tenant's pool. The script's reply is an integer: anything else fails the run.
Every reply is read within ``MAX_REPLY_BYTES`` (``redis_io.bounded_replies``): a broker
announcing a larger one fails the run, its connection dropped with the rest unread.
"""

import asyncio
import collections
import logging
import re
import socket
import urllib.parse

import redis.asyncio
import redis.commands.core
import redis.exceptions

from punctual.redis_io import connections
from punctual.targets import addresses
from punctual.targets.queue import pushes

logger = logging.getLogger(__name__)

CLAIM_PREFIX = "punctual:enqueued:"
CLAIM_TTL_MS = 24 * 60 * 60 * 1000
"""How long a slot's claim stays on the broker: far longer than any retry of the same slot."""
MAX_CLIENTS = 256
POOL_SIZE = 4
"""Connections per namespace and broker: one push at a time is the common case."""
CONNECT_TIMEOUT = 2.0
REPLY_TIMEOUT = 2.0
POOL_TIMEOUT = 2.0
PUSH_TIMEOUT = 8.0
"""Seconds for a whole push: name resolution, a connection from the pool, the script."""
MAX_REPLY_BYTES = 64 * 1024
"""The largest reply read from a broker: the push's are an integer, a script's SHA or an
error line."""
SENTINEL_QUERY = re.compile(r"db=[0-9]{1,5}")
"""The one query option of a Sentinel URL: the database (which a plain URL names by its path)."""
CLUSTER_ERRORS = (
    redis.exceptions.ClusterCrossSlotError,
    redis.exceptions.AskError,  # and MovedError
    redis.exceptions.ClusterDownError,
)

OTHER_TYPE = """
local function other_type(key, kind)
  local held = redis.call('TYPE', key)['ok']
  if held ~= kind and held ~= 'none' then
    return redis.error_reply('WRONGTYPE ' .. key .. ' holds a ' .. held .. ', not a ' .. kind
      .. ': nothing was written')
  end
end
"""
"""Lua: the error refusing ``key`` when it holds another type than ``kind``, or nothing."""

CLAIM_AND_PUSH = (
    OTHER_TYPE
    + """
-- KEYS[1] the slot's claim, KEYS[2..] the key of each command of the push, in order
-- ARGV[1] the claim's value, ARGV[2] its TTL in ms, then for each command: the type its key
-- must hold (if any), the command, the count of its arguments, the arguments
local commands = {}
local at = 3
for index = 2, #KEYS do
  local kind, name, count = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2])
  local refused = other_type(KEYS[index], kind)
  if refused then
    return refused
  end
  commands[#commands + 1] = {name, index, at + 3, at + 2 + count}
  at = at + 3 + count
end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 0
end
for _, command in ipairs(commands) do
  redis.call(command[1], KEYS[command[2]], unpack(ARGV, command[3], command[4]))
end
return 1
"""
)

CLAIM_THEN = (
    OTHER_TYPE
    + """
-- KEYS[1] the slot's claim, KEYS[2..] the framework's keys
-- ARGV[1] the claim's value, ARGV[2] its TTL in ms, ARGV[3] the count of the framework's keys,
-- then the type each must hold (if any), then the framework's arguments
local count = tonumber(ARGV[3])
for index = 1, count do
  local refused = other_type(KEYS[index + 1], ARGV[3 + index])
  if refused then
    return refused
  end
end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 0
end
local keys, args = {unpack(KEYS, 2)}, {unpack(ARGV, 4 + count)}
"""
)
"""Lua: the start of a push's own script (``pushes.Script``): its keys' types checked, the slot
claimed; its body follows, with ``keys`` and ``args``."""


class BrokerRefusedError(Exception):
    """The broker's URL is not one this operator connects to (scheme, allowlist, address)."""


class BrokerUnavailableError(Exception):
    """The broker did not take the push: unreachable, too slow, or an unexpected answer."""


class BrokerIsClusterError(BrokerUnavailableError):
    """The broker is a Redis Cluster node, where the claim and the push cannot be one script."""


def claim_key(slot_id: str) -> str:
    return f"{CLAIM_PREFIX}{slot_id}"


def script_arguments(push: pushes.Push) -> tuple[list[str], list[str | bytes | int]]:
    """The script's keys and its arguments after the claim's value and TTL."""
    keys: list[str] = []
    arguments: list[str | bytes | int] = []
    if push.script is not None:
        keys = [key for _, key in push.script.keys]
        kinds = [kind for kind, _ in push.script.keys]
        return keys, [len(keys), *kinds, *push.script.arguments]
    for command in push.commands:
        keys.append(command.key)
        arguments += [command.kind, command.name, len(command.arguments), *command.arguments]
    return keys, arguments


class Brokers:
    """The operator's clients of tenants' brokers, per namespace and URL."""

    def __init__(self, *, guard: addresses.AddressGuard) -> None:
        self._guard = guard
        self._clients: collections.OrderedDict[
            tuple[str, str], tuple[connections.Connection, redis.commands.core.AsyncScript]
        ] = collections.OrderedDict()

    def __repr__(self) -> str:
        return f"Brokers({len(self._clients)} clients)"

    async def push(self, *, namespace: str, url: str, slot_id: str, push: pushes.Push) -> bool:
        """Claim ``slot_id`` on the broker at ``url`` and push ``push``: True when this call
        pushed it, False when the slot's message was pushed before.

        Raises ``BrokerRefusedError`` or ``BrokerUnavailableError`` (``BrokerIsClusterError``);
        their messages carry the redacted URL only.
        """
        description = connections.redact_url(url)
        try:
            async with asyncio.timeout(PUSH_TIMEOUT):
                await self._check(url, description)
                client, script = await self._client(namespace, url)
                if push.script is not None:
                    script = client.register_script(CLAIM_THEN + push.script.body)
                keys, arguments = script_arguments(push)
                reply = await script(
                    keys=[claim_key(slot_id), *keys],
                    args=[push.message_id, CLAIM_TTL_MS, *arguments],
                )
        except TimeoutError:
            raise BrokerUnavailableError(
                f"broker {description}: no answer within {PUSH_TIMEOUT:g}s; nothing is known to "
                "have been pushed"
            ) from None
        except redis.exceptions.TimeoutError:
            raise BrokerUnavailableError(
                f"broker {description}: no answer within {REPLY_TIMEOUT:g}s"
            ) from None
        except CLUSTER_ERRORS as error:
            raise BrokerIsClusterError(
                f"broker {description} is a Redis Cluster node ({type(error).__name__}): the "
                "slot's claim and the framework's keys cannot share a hash slot, so nothing was "
                "pushed; name a standalone Redis or a primary endpoint"
            ) from None
        except redis.exceptions.RedisError as error:
            message = str(error)
            if password := urllib.parse.urlsplit(url).password:
                message = message.replace(urllib.parse.unquote(password), "***")
            raise BrokerUnavailableError(
                f"broker {description}: {type(error).__name__}: {message}"[:1024]
            ) from None
        if reply == 1:
            return True
        if reply == 0:
            return False
        raise BrokerUnavailableError(
            f"broker {description}: an unexpected reply to the push ({type(reply).__name__}): "
            "not a Redis that ran the script"
        )

    async def _check(self, url: str, description: str) -> None:
        """Refuse ``url`` unless its scheme, form and every address it names (a server, or the
        Sentinels) are ones this operator connects to."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme in connections.SENTINEL_SCHEMES:
            try:
                address = connections.sentinel_address(url)
            except ValueError as error:
                raise BrokerRefusedError(f"broker {description}: {error}") from None
            assert address is not None  # a Sentinel scheme
            if parts.query and not SENTINEL_QUERY.fullmatch(parts.query):
                raise BrokerRefusedError(
                    f"broker {description}: no query options but ?db=N: redis[s]+sentinel://"
                    "[user:password@]host[:port][,host[:port]...]/service[?db=N] only"
                )
            for sentinel_host, sentinel_port in address.sentinels:
                await self._admit(sentinel_host, sentinel_port, description, what="the Sentinel ")
            return
        if parts.scheme not in connections.SCHEMES:
            raise BrokerRefusedError(
                f"broker {description}: the URL must start with redis://, rediss://, "
                "redis+sentinel:// or rediss+sentinel://"
            )
        try:
            host, port = parts.hostname, parts.port or addresses.DEFAULT_PORTS[parts.scheme]
        except ValueError:
            raise BrokerRefusedError(f"broker {description}: not a usable URL") from None
        if not host:
            raise BrokerRefusedError(f"broker {description}: the URL names no host")
        if parts.query or parts.fragment:
            # The driver would take its options from the query (timeouts, pool size, files of
            # the operator's as TLS keys), overriding the bounds here.
            raise BrokerRefusedError(
                f"broker {description}: no query options: redis[s]://[user:password@]host"
                "[:port][/db] only"
            )
        await self._admit(host, port, description)

    async def _admit(self, host: str, port: int, description: str, *, what: str = "") -> None:
        """Refuse ``host`` at ``port`` (the URL's, a Sentinel's, ``what`` says which, or the
        primary the Sentinels name) unless the allowlist admits it and none of its addresses
        is refused."""
        allowed = self._guard.allowed
        netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if allowed is not None and not allowed.admits(f"redis://{netloc}"):
            subject = f"{what}{netloc} is " if what else ""
            raise BrokerRefusedError(
                f"broker {description}: {subject}not a host this operator may reach "
                f"(--http-allowed-hosts {allowed})"
            )
        loop = asyncio.get_running_loop()
        try:
            found = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as error:
            raise BrokerUnavailableError(
                f"broker {description}: cannot resolve {what}{host}: {error}"
            ) from None
        for *_, address in found:
            refusal = self._guard.refusal(str(address[0]), port)
            if refusal is not None:
                raise BrokerRefusedError(
                    f"broker {description}: {what}{host} is {refusal}: this operator reaches it "
                    "only if --http-allowed-hosts names it"
                )

    async def _client(
        self, namespace: str, url: str
    ) -> tuple["redis.asyncio.Redis", redis.commands.core.AsyncScript]:
        """The client of ``namespace``'s broker at ``url`` and its ``CLAIM_AND_PUSH``, made on
        first use; beyond ``MAX_CLIENTS``, the least recently used client is closed."""
        key = (namespace, url)
        found = self._clients.get(key)
        if found is not None:
            self._clients.move_to_end(key)
            return found[0].client, found[1]
        description = connections.redact_url(url)

        async def admit_primary(host: str, port: int) -> None:
            await self._admit(host, port, description, what="the primary its Sentinels name, ")

        try:
            connection = connections.connect(
                url,
                max_connections=POOL_SIZE,
                pool_timeout=POOL_TIMEOUT,
                socket_timeout=REPLY_TIMEOUT,
                connect_timeout=CONNECT_TIMEOUT,
                max_reply_bytes=MAX_REPLY_BYTES,
                admit_primary=admit_primary,
            )
        except ValueError as error:
            raise BrokerRefusedError(str(error)) from None
        script = connection.client.register_script(CLAIM_AND_PUSH)
        self._clients[key] = (connection, script)
        while len(self._clients) > MAX_CLIENTS:
            _, (evicted, _) = self._clients.popitem(last=False)
            await evicted.client.aclose()
        return connection.client, script

    async def close(self) -> None:
        clients, self._clients = list(self._clients.values()), collections.OrderedDict()
        for connection, _ in clients:
            await connection.client.aclose()
