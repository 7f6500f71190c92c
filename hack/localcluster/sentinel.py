"""``LocalSentinelRedis``: a Redis primary, two replicas and three Sentinels on 127.0.0.1, for
failover tests.

Every server is a ``LocalRedis`` (no persistence, ``noeviction``) on a port of its own, with
``min-replicas-to-write 1`` (``min-replicas-max-lag``: ``MAX_LAG`` seconds): a primary cut off
from its replicas refuses writes, as docs/replicas-and-locks.md recommends, whichever server is
primary at the time. The Sentinels watch the service ``SERVICE`` with a quorum of two and short
timeouts (``DOWN_AFTER_MS``, ``FAILOVER_TIMEOUT_MS``), so that a failover takes a few seconds.
``url`` is the operator's ``redis+sentinel://`` URL for them.

``primary()`` is the server the Sentinels name now; ``wait_for_failover(old)`` waits until they
agree on another one that answers as a primary and takes a write (with a replica online: one
left alone refuses writes, ``min-replicas-to-write``). The servers' processes are there for signals
(``os.kill(server.pid, SIGKILL)``, ``SIGSTOP``); ``stop()`` removes every process, stopped or
not.
"""

import shutil
import socket
import tempfile
import time
from pathlib import Path

from localcluster import processes
from localcluster.ports import LOOPBACK, free_port
from localcluster.redis import LocalRedis

SERVICE = "punctual"
DOWN_AFTER_MS = 1000
"""How long a server answers no Sentinel before it is taken for down."""
FAILOVER_TIMEOUT_MS = 3000
"""Sentinel's failover-timeout: how long a failover may take before another is tried."""
MAX_LAG = 2
"""A primary's replica counts for ``min-replicas-to-write`` while it acknowledged this recently
(seconds; replicas acknowledge every second)."""
READY_TIMEOUT = 30.0
REPLICAS = 2
SENTINELS = 3


def _encode(*parts: str) -> bytes:
    encoded = [part.encode() for part in parts]
    return b"".join(
        [f"*{len(encoded)}\r\n".encode(), *(b"$%d\r\n%s\r\n" % (len(p), p) for p in encoded)]
    )


def _reply(stream: "socket.SocketIO") -> object:
    """One RESP2 reply read from ``stream``: str, int, None, a list of those, or an
    ``RuntimeError`` for an error reply."""
    line = stream.readline().decode().rstrip("\r\n")
    kind, rest = line[:1], line[1:]
    if kind == "+":
        return rest
    if kind == "-":
        return RuntimeError(rest)
    if kind == ":":
        return int(rest)
    if kind == "$":
        if int(rest) < 0:
            return None
        data = stream.read(int(rest) + 2)
        return bytes(data[:-2]).decode()
    if kind == "*":
        return None if int(rest) < 0 else [_reply(stream) for _ in range(int(rest))]
    raise RuntimeError(f"not a RESP reply: {line!r}")


def command(port: int, *parts: str, timeout: float = 2.0) -> object:
    """``parts`` sent to the server or Sentinel at ``port``; its reply (see ``_reply``)."""
    with socket.create_connection((LOOPBACK, port), timeout=timeout) as connection:
        connection.sendall(_encode(*parts))
        with connection.makefile("rb") as stream:
            return _reply(stream)  # type: ignore[arg-type]


def info(port: int, section: str) -> dict[str, str]:
    """``INFO section`` of the server at ``port``, as its fields."""
    text = command(port, "INFO", section)
    if not isinstance(text, str):
        raise RuntimeError(f"INFO {section} answered {text!r}")
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line and line[0] != "#")


class LocalSentinelRedis(processes.Service):
    def __init__(self, *, run_dir: Path | None = None) -> None:
        self._given_run_dir = run_dir
        self.run_dir = Path()
        self.executable = shutil.which("redis-sentinel") or "redis-sentinel"
        self.servers: list[LocalRedis] = []
        self.sentinel_ports = [free_port() for _ in range(SENTINELS)]
        self.sentinels: list[processes.ManagedProcess] = []

    @property
    def url(self) -> str:
        hosts = ",".join(f"{LOOPBACK}:{port}" for port in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{SERVICE}"

    @property
    def pids(self) -> list[int]:
        return [server.pid for server in self.servers] + [s.pid for s in self.sentinels]

    @property
    def ports(self) -> list[int]:
        return [server.port for server in self.servers] + self.sentinel_ports

    def start(self) -> None:
        processes.install_signal_handlers()
        if self._given_run_dir is None:
            self.run_dir = Path(tempfile.mkdtemp(prefix="punctual-sentinel-"))
        else:
            self.run_dir = self._given_run_dir
            self.run_dir.mkdir(parents=True, exist_ok=True)
        safety = ["--min-replicas-to-write", "1", "--min-replicas-max-lag", str(MAX_LAG)]
        primary = LocalRedis(run_dir=self.run_dir / "server-0", options=safety)
        self.servers.append(primary)
        primary.start()
        for index in range(1, 1 + REPLICAS):
            replica = LocalRedis(
                run_dir=self.run_dir / f"server-{index}",
                options=[*safety, "--replicaof", LOOPBACK, str(primary.port)],
            )
            self.servers.append(replica)
            replica.start()
        processes.wait_until(
            primary.process,  # type: ignore[arg-type]
            lambda: self.online_replicas(primary) == REPLICAS,
            f"{REPLICAS} replicas are online",
            READY_TIMEOUT,
        )
        for index, port in enumerate(self.sentinel_ports):
            config = self.run_dir / f"sentinel-{index}.conf"
            config.write_text(
                f"port {port}\nbind {LOOPBACK}\ndaemonize no\ndir {self.run_dir}\n"
                f"sentinel monitor {SERVICE} {LOOPBACK} {primary.port} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}\n"
                f"sentinel parallel-syncs {SERVICE} {REPLICAS}\n"
            )
            self.sentinels.append(
                processes.start(f"sentinel-{index}", [self.executable, str(config)], self.run_dir)
            )
        for sentinel, port in zip(self.sentinels, self.sentinel_ports, strict=True):
            processes.wait_until(
                sentinel,
                lambda port=port: self._sentinel_sees_all(port),  # type: ignore[misc]
                "it sees the replicas and the other Sentinels",
                READY_TIMEOUT,
            )

    def primary(self) -> LocalRedis:
        """The server the first Sentinel that answers names as the primary."""
        for port in self.sentinel_ports:
            try:
                address = command(port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
            except OSError:
                continue
            if isinstance(address, list):
                return self.server_at(int(address[1]))
        raise RuntimeError("no Sentinel names a primary")

    def server_at(self, port: int) -> LocalRedis:
        return next(server for server in self.servers if server.port == port)

    def wait_for_failover(self, old: LocalRedis, timeout: float = READY_TIMEOUT) -> LocalRedis:
        """The new primary, once every Sentinel names a server other than ``old`` and that
        server answers as a primary taking writes (its replica connected)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                named = {
                    str(command(port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE))
                    for port in self.sentinel_ports
                }
                if len(named) == 1:
                    new = self.primary()
                    if (
                        new is not old
                        and info(new.port, "replication")["role"] == "master"
                        and command(new.port, "SET", "punctual:harness", "") == "OK"
                    ):
                        return new
            except (OSError, RuntimeError, KeyError):
                pass
            time.sleep(0.1)
        raise RuntimeError(f"no failover away from port {old.port} in {timeout:.0f} s")

    def restart_as_replica(self, server: LocalRedis) -> None:
        """Start ``server`` (killed, or stopped) again, empty, as a replica of the primary the
        Sentinels name now, as a restarted member of the chart's Sentinel-managed Redis does
        (charts/punctual/files/redis-sentinel.sh asks them first). Started as the primary it
        was, it would wait for a Sentinel to convert it, which Sentinel does only once the
        server has reported that role across a few of its INFO periods (10 s each for a
        replica) and never while it is in TILT mode, which a loaded machine's late timer ticks
        bring on for 30 s at a time."""
        if server.process is not None and not server.process.stopped:
            server.stop_server()
        server.start_server(replica_of=self.primary().port)

    @staticmethod
    def online_replicas(server: LocalRedis) -> int:
        """The replicas ``server`` (a primary) streams to now."""
        replication = info(server.port, "replication")
        return sum(
            1
            for key, value in replication.items()
            if key.startswith("slave") and key[5:].isdigit() and "state=online" in value
        )

    @staticmethod
    def _sentinel_sees_all(port: int) -> bool:
        fields = command(port, "SENTINEL", "MASTER", SERVICE)
        if not isinstance(fields, list):
            return False
        state = dict(zip(fields[::2], fields[1::2], strict=True))
        return state.get("num-slaves") == str(REPLICAS) and state.get("num-other-sentinels") == str(
            SENTINELS - 1
        )

    def stop(self) -> None:
        processes.stop_processes(self.sentinels)
        for server in self.servers:
            server.stop()
        if self._given_run_dir is None and self.run_dir != Path():
            shutil.rmtree(self.run_dir, ignore_errors=True)
