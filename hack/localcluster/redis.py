"""``LocalRedis``: a disposable redis-server on a free loopback port.

Nothing is persisted (``--save ''``, no AOF, its working directory is the run directory), nothing
is evicted (``noeviction``, as the chart's bundled Redis) and it answers only on 127.0.0.1; an
optional password exercises the ``requirepass`` path of clients, and ``tls=True`` serves TLS
only (``rediss://``), with a throwaway CA whose certificate the URL names (``?ssl_ca_certs=``,
which redis-py passes to its TLS connection).

``stop_server()`` and ``start_server()`` (or ``with redis.down():``) take the server away and
bring it back on the same port, URL and certificates, for outage tests; the data is gone, as
after a restart of a Redis that persists nothing.
"""

import contextlib
import shutil
import socket
import ssl
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import quote

from localcluster import certs, processes
from localcluster.ports import LOOPBACK, free_port

READY_TIMEOUT = 30.0


def _command(*parts: str) -> bytes:
    encoded = [part.encode() for part in parts]
    return b"".join(
        [f"*{len(encoded)}\r\n".encode(), *(b"$%d\r\n%s\r\n" % (len(p), p) for p in encoded)]
    )


class LocalRedis(processes.Service):
    def __init__(
        self,
        *,
        password: str | None = None,
        run_dir: Path | None = None,
        executable: str | None = None,
        tls: bool = False,
        options: Sequence[str] = (),
    ) -> None:
        """``options``: more of redis-server's command-line options (``--replicaof``, ...)."""
        self.options = tuple(options)
        self.password = password
        self.tls = tls
        self._given_run_dir = run_dir
        self.run_dir = Path()
        self.executable = executable or shutil.which("redis-server") or "redis-server"
        self.port = free_port()
        self.process: processes.ManagedProcess | None = None

    @property
    def host(self) -> str:
        return LOOPBACK

    @property
    def url(self) -> str:
        auth = f":{quote(self.password, safe='')}@" if self.password else ""
        if self.tls:
            return (
                f"rediss://{auth}{LOOPBACK}:{self.port}/0?ssl_ca_certs={quote(str(self.ca_file))}"
            )
        return f"redis://{auth}{LOOPBACK}:{self.port}/0"

    @property
    def ca_file(self) -> Path:
        """The CA that signed the TLS server's certificate (with ``tls=True``)."""
        return self.run_dir / "pki" / "ca.crt"

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("redis-server is not started")
        return self.process.pid

    def ping(self) -> bool:
        """PING over a raw socket (with AUTH first when there is a password)."""
        with socket.create_connection((LOOPBACK, self.port), timeout=2) as plain:
            connection = (
                ssl.create_default_context(cafile=str(self.ca_file)).wrap_socket(
                    plain, server_hostname=LOOPBACK
                )
                if self.tls
                else plain
            )
            if self.password:
                connection.sendall(_command("AUTH", self.password))
                if not connection.recv(64).startswith(b"+OK"):
                    return False
            connection.sendall(_command("PING"))
            return connection.recv(64).startswith(b"+PONG")

    def start(self) -> None:
        processes.install_signal_handlers()
        if self._given_run_dir is None:
            self.run_dir = Path(tempfile.mkdtemp(prefix="punctual-redis-"))
        else:
            self.run_dir = self._given_run_dir
            self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.tls:
            certs.generate(self.run_dir / "pki")
        self._launch()

    def stop_server(self, grace: float = processes.DEFAULT_GRACE_SECONDS) -> None:
        """Stop redis-server alone, keeping its port, run directory and certificates: clients
        see connections refused until ``start_server()``."""
        if self.process is None:
            raise RuntimeError("redis-server is not started")
        self.process.stop(grace)

    def start_server(self, *, replica_of: int | None = None) -> None:
        """Start redis-server again after ``stop_server()``, on the same port with the same
        URL (password, TLS certificates); returns once it answers PING. It starts empty, and
        with ``replica_of`` a replica of the server on that port whatever ``options`` say."""
        if self.process is None:
            raise RuntimeError("redis-server was never started")
        if not self.process.stopped:
            raise RuntimeError("redis-server is running: stop_server() first")
        self._launch(replica_of=replica_of)

    @contextlib.contextmanager
    def down(self) -> Iterator[None]:
        """``with redis.down(): ...``: the block runs while redis-server is stopped; it is
        started again (answering PING) on the way out, however the block ends."""
        self.stop_server()
        try:
            yield
        finally:
            self.start_server()

    def _launch(self, *, replica_of: int | None = None) -> None:
        argv = [
            self.executable,
            "--port",
            str(self.port),
            "--bind",
            LOOPBACK,
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.run_dir),
            "--daemonize",
            "no",
            "--protected-mode",
            "yes",
            # The chart's policy: a full Redis refuses writes rather than evict a claim.
            "--maxmemory-policy",
            "noeviction",
        ]
        argv += self.options
        if replica_of is not None:
            argv += ["--replicaof", LOOPBACK, str(replica_of)]  # the last one given wins
        if self.password:
            argv += ["--requirepass", self.password]
        if self.tls:
            pki = certs.ClusterCerts(self.run_dir / "pki")
            argv[argv.index("--port") + 1] = "0"  # no plain-text port at all
            argv += [
                "--tls-port", str(self.port),
                "--tls-cert-file", str(pki.serving_cert),
                "--tls-key-file", str(pki.serving_key),
                "--tls-ca-cert-file", str(pki.ca_cert),
                "--tls-auth-clients", "no",
            ]  # fmt: skip
        self.process = processes.start("redis-server", argv, self.run_dir)
        processes.wait_until(self.process, self.ping, "PING answers PONG", READY_TIMEOUT)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
        if self._given_run_dir is None and self.run_dir != Path():
            shutil.rmtree(self.run_dir, ignore_errors=True)
