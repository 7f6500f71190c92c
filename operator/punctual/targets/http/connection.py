"""One connection of the HTTP target's client: a socket to one origin, one call at a time, its
answers parsed by llhttp and read as far as their head.

- Answers are parsed by llhttp (``httptools``, the parser of uvicorn and Node.js), strict: no
  leniency is switched on, so the client never accepts an answer llhttp would refuse. What
  llhttp leaves to its caller is done here: a cap on the head (``HEAD_LIMIT``, interim answers
  included), the end of a HEAD answer at its head (llhttp cannot know the request's method),
  and bytes nobody asked for (a second answer to one request, anything while idle), which end
  the connection.
- A call ends at the end of the first read that completes the head: a body that is already
  there and malformed fails the call; the rest of the body is drained in the background so that
  the connection can serve the next call, for at most ``DRAIN_LIMIT`` bytes after the head
  (framing, trailers and chunk extensions included) and ``DRAIN_TIMEOUT`` seconds (never past
  the run's own deadline); past either, or for a body whose end only the server's closing
  tells, the connection is closed instead.

Which connection serves which call, and when it is opened, reused or closed, is the pool's
(``punctual.targets.http.connections``).
"""

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn, cast

import httptools

DRAIN_LIMIT = 1 << 20
"""Bytes read after an answer's head so the connection can be reused; past this it is closed."""
DRAIN_TIMEOUT = 2.0
"""Seconds an answer's body may take to end after its head; past this the connection is closed."""
HEAD_LIMIT = 64 * 1024
"""Bytes of status lines and headers at most, interim answers included: past it, an error."""
INVALID = "invalid HTTP answer"
"""How every protocol error's message starts: it ends up in the run's message, in the status."""

_VERSIONS = frozenset({"1.0", "1.1"})


class ProtocolError(Exception):
    """The server's answer is not HTTP/1.x this client accepts."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"{INVALID}: {reason}")


class ConnectionClosedError(ConnectionError):
    """The server closed the connection before its answer was complete."""


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    reason: str


class Connection(asyncio.Protocol):
    """One socket to one origin, one call at a time, its answers parsed by llhttp.

    The parser's callbacks only record what they see; ``data_received`` decides after each read,
    so that nothing a server sends can raise out of it or keep it looping.
    """

    def __init__(
        self,
        *,
        on_idle: Callable[["Connection"], None],
        on_closed: Callable[["Connection"], None],
    ) -> None:
        self._on_idle = on_idle
        self._on_closed = on_closed
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._answer: asyncio.Future[Answer] | None = None
        self._busy = False
        self._head_request = False
        self._deadline = 0.0
        self._reason = b""
        self._head: Answer | None = None
        self._complete = False
        self._keep_alive = False
        self._error: ProtocolError | None = None
        self._head_bytes = 0
        self._body_bytes = 0
        self._drain_timer: asyncio.TimerHandle | None = None
        self._on_free: Callable[[], None] | None = None
        self.received = False
        """Whether any byte of the current call's answer came in."""
        self.closed = False
        self.idle_since = 0.0

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's is not an asyncio.Transport subclass: no isinstance).
        self._transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._answer is not None and not self._answer.done():
            error = ConnectionClosedError("the server closed the connection without an answer")
            if exc is not None:
                error = ConnectionClosedError(f"connection lost: {exc}")
            self._answer.set_exception(error)
        self._end_call()
        self._on_closed(self)

    def data_received(self, data: bytes) -> None:
        if not self._busy:
            self.close()  # bytes nobody asked for: whatever follows cannot be trusted
            return
        self.received = True
        head_done = self._head is not None
        if head_done:
            self._body_bytes += len(data)
        else:
            self._head_bytes += len(data)
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as error:
            self._fail(self._error or ProtocolError(_llhttp_reason(error)))
            return
        if self._head is None:
            if self._head_bytes > HEAD_LIMIT:
                self._fail(ProtocolError(f"a head longer than {HEAD_LIMIT} bytes"))
            return
        if not head_done:
            self._answered()
        if self._complete:
            self._finish()
        elif self._body_bytes > DRAIN_LIMIT or not self._parser.should_keep_alive():
            self.close()  # nothing worth reading any more: the answer is in
        elif not head_done:
            loop = asyncio.get_running_loop()
            drain_until = min(loop.time() + DRAIN_TIMEOUT, self._deadline)
            self._drain_timer = loop.call_at(drain_until, self.close)

    # -- llhttp's callbacks ----------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self._complete:
            self._refuse("a second answer to one request")

    def on_status(self, status: bytes) -> None:
        self._reason += status

    def on_headers_complete(self) -> None:
        version = self._parser.get_http_version()
        if version not in _VERSIONS:  # llhttp reads "HTTP/2.0 200" as a version it knows
            self._refuse(f"HTTP/{version} is not HTTP/1.x")
        status = self._parser.get_status_code()
        if status == 101:
            self._refuse("101 Switching Protocols, yet no upgrade was asked for")
        if status < 200:
            self._reason = b""  # an interim answer (100 Continue): the final one follows
            return
        self._head = Answer(status, self._reason.decode("latin-1"))
        if self._head_request:  # no body, whatever the head says: the message ends here
            self._complete, self._keep_alive = True, self._parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        if self._head_request:
            self._refuse("a body in the answer to a HEAD request")

    def on_message_complete(self) -> None:
        if self._head is not None and not self._complete:
            # Read here: llhttp resets its keep-alive flag right after this callback.
            self._complete, self._keep_alive = True, self._parser.should_keep_alive()

    def _refuse(self, reason: str) -> NoReturn:
        # Raised into llhttp, which stops parsing; data_received reports this error, not
        # llhttp's generic "callback error".
        self._error = ProtocolError(reason)
        raise self._error

    # -- calls -----------------------------------------------------------------------------

    def send(
        self,
        payload: bytes,
        *,
        head_request: bool,
        deadline: float,
        on_free: Callable[[], None],
    ) -> "asyncio.Future[Answer]":
        """Send a request; its answer's head. ``on_free`` is called once, when the connection is
        done with the call: idle again, or closed."""
        assert self._transport is not None
        self._answer = asyncio.get_running_loop().create_future()
        self._busy, self._head_request, self._deadline = True, head_request, deadline
        self._on_free = on_free
        self.received = False
        self._transport.write(payload)
        return self._answer

    def abandon(self, answer: "asyncio.Future[Answer]") -> None:
        """The caller of ``answer`` gave up on it (its run's timeout): close the connection if it
        is still on that call, whose state is unknown. A connection done with that call is left
        alone: it may be idle or carrying another call by then, and closing it would abort that
        call, which would then be sent again (the target would see it twice)."""
        if self._answer is answer:
            self.close()

    def close(self) -> None:
        """Close at once (a connection this client gives up on has nothing worth flushing)."""
        if not self.closed:
            self.closed = True
            if self._transport is not None:
                self._transport.abort()

    def _answered(self) -> None:
        assert self._head is not None
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(self._head)

    def _fail(self, error: ProtocolError) -> None:
        if self._complete:
            self._answered()  # its own answer was whole: what came after it ends the connection
        elif self._answer is not None and not self._answer.done():
            self._answer.set_exception(error)
        self.close()

    def _finish(self) -> None:
        if self._keep_alive and not self.closed:
            if self._head_request:  # llhttp is still waiting for the body the head announced
                self._parser = httptools.HttpResponseParser(self)
            self._end_call()
            self._on_idle(self)
        else:
            self.close()

    def _end_call(self) -> None:
        """Forget the call; give its place back."""
        if self._drain_timer is not None:
            self._drain_timer.cancel()
            self._drain_timer = None
        self._answer, self._busy, self._head, self._complete = None, False, None, False
        self._reason, self._error, self._head_bytes, self._body_bytes = b"", None, 0, 0
        on_free, self._on_free = self._on_free, None
        if on_free is not None:
            on_free()


def _llhttp_reason(error: Exception) -> str:
    # llhttp's messages are short and fixed ("Invalid character in chunk size"): no server bytes.
    return str(error).strip() or type(error).__name__
