"""A fast HTTP target for ``bench/scale.py``: records every call, answers 204, does nothing else.

A raw asyncio protocol (no framework), HTTP/1.1 keep-alive, run in a process of its own so that
its work never shares a core's time slice with the operator's event loop more than it must. The
arrival time of a request is read the moment its first bytes come off the socket, before any
parsing; each call is kept in memory as (arrival ns, ``X-Punctual-Scheduled-Time``,
``Idempotency-Key``) and only written out when asked:

- ``GET /__dump?path=FILE`` writes the calls recorded since the previous dump to FILE (CSV:
  ``arrival_ns,scheduled_time,idempotency_key``), forgets them, and answers the count;
- ``GET /__count`` answers how many calls are waiting to be dumped.

Usage: python bench/scale_receiver.py --port N [--ready-file FILE]
"""

import argparse
import asyncio
import contextlib
import signal
import time
import urllib.parse
from pathlib import Path

_HEADERS_END = b"\r\n\r\n"
_NO_CONTENT = b"HTTP/1.1 204 No Content\r\n\r\n"


class _Calls:
    def __init__(self) -> None:
        self.rows: list[tuple[int, bytes, bytes]] = []

    def dump(self, path: str) -> int:
        rows, self.rows = self.rows, []
        with Path(path).open("wb") as out:
            out.write(b"".join(b"%d,%s,%s\n" % row for row in rows))
        return len(rows)


class _Protocol(asyncio.Protocol):
    def __init__(self, calls: _Calls) -> None:
        self._calls = calls
        self._buffer = b""
        self._arrived = 0
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        if not self._buffer:
            self._arrived = time.time_ns()  # first thing: this is the figure measured
        self._buffer += data
        while True:
            end = self._buffer.find(_HEADERS_END)
            if end < 0:
                return
            head = self._buffer[:end]
            length = 0
            key = scheduled = b""
            lines = head.split(b"\r\n")
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                lowered = name.strip().lower()
                if lowered == b"idempotency-key":
                    key = value.strip()
                elif lowered == b"x-punctual-scheduled-time":
                    scheduled = value.strip()
                elif lowered == b"content-length":
                    length = int(value)
            total = end + len(_HEADERS_END) + length
            if len(self._buffer) < total:
                return
            self._buffer = self._buffer[total:]
            self._answer(lines[0], key, scheduled)
            if self._buffer:
                self._arrived = time.time_ns()  # pipelined: the next request is here now

    def _answer(self, request_line: bytes, key: bytes, scheduled: bytes) -> None:
        assert self._transport is not None
        target = request_line.split(b" ")[1].decode() if b" " in request_line else "/"
        if target.startswith("/__"):
            parts = urllib.parse.urlsplit(target)
            if parts.path == "/__dump":
                query = urllib.parse.parse_qs(parts.query)
                text = str(self._calls.dump(query["path"][0]))
            else:
                text = str(len(self._calls.rows))
            body = text.encode()
            self._transport.write(
                b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            return
        self._calls.rows.append((self._arrived, scheduled, key))
        self._transport.write(_NO_CONTENT)


async def _serve(port: int, ready_file: str | None) -> None:
    calls = _Calls()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _Protocol(calls), "127.0.0.1", port, backlog=4096, reuse_address=True
    )
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    if ready_file:
        Path(ready_file).write_text(str(port))  # noqa: ASYNC240 (once, before serving)
    async with server:
        await stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ready-file")
    arguments = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(arguments.port, arguments.ready_file))


if __name__ == "__main__":
    main()
