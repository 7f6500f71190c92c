"""Replies of a Redis the operator does not trust (a tenant's broker), read within a budget.

redis-py reads whatever a server announces: a bulk string's length or an array's count comes
from the server, and the driver reads that much into memory. ``BoundedReplyParser`` checks each
header before reading what it announces and refuses a reply that would take more than its
budget in all (each array element counted as ``ELEMENT_BYTES``, about what Python keeps per
element), a line longer than the stream reader's limit, and a number that is none (or too long
to convert): the read fails with ``InvalidResponse``, and the driver drops the connection
with the rest of the reply unread. The timeouts still bound how long a reply may take; this
bounds how much of it is kept.

The parser is redis-py's pure Python one (for RESP3, which also reads RESP2 replies): the C
parser (hiredis) has no such limit.
"""

from typing import Any

import redis.exceptions
from redis._parsers import _AsyncRESP3Parser

ELEMENT_BYTES = 64
STRINGS = frozenset(b"$!=")
"""The RESP type bytes whose header is a length in bytes: bulk strings, bulk errors, verbatim
strings."""
AGGREGATES = {ord("*"): 1, ord("~"): 1, ord(">"): 1, ord("%"): 2}
"""The RESP type bytes whose header is a count: arrays, sets and pushes of elements, maps of
pairs (two elements each)."""


def bounded_parser(max_reply_bytes: int) -> type[_AsyncRESP3Parser]:
    """The parser class of connections whose replies may take ``max_reply_bytes`` at most."""

    class BoundedReplyParser(_AsyncRESP3Parser):
        __slots__ = ("_budget",)

        def __init__(self, socket_read_size: int) -> None:
            super().__init__(socket_read_size)  # type: ignore[no-untyped-call]
            self._budget = max_reply_bytes

        async def read_response(
            self, disable_decoding: bool = False, push_request: bool = False
        ) -> Any:
            self._budget = max_reply_bytes
            try:
                return await super().read_response(
                    disable_decoding=disable_decoding, push_request=push_request
                )
            except ValueError as error:  # a number that is none, or too long to convert
                raise redis.exceptions.InvalidResponse(
                    f"a malformed reply: {str(error)[:128]}"
                ) from None

        async def _readline(self) -> bytes:
            try:
                line = await super()._readline()
            except ValueError:  # the stream reader's limit on a line
                raise redis.exceptions.InvalidResponse(
                    "a reply line longer than the reader's limit: not a Redis reply"
                ) from None
            self._budget -= len(line)
            kind = line[0] if line else 0
            if kind in STRINGS or kind in AGGREGATES:
                try:
                    size = max(int(line[1:]), 0)  # -1: nil
                except ValueError:
                    raise redis.exceptions.InvalidResponse(
                        f"a malformed reply header {line[:32]!r}"
                    ) from None
                self._budget -= size if kind in STRINGS else size * AGGREGATES[kind] * ELEMENT_BYTES
            if self._budget < 0:
                raise redis.exceptions.InvalidResponse(
                    f"a reply larger than {max_reply_bytes} bytes: not an answer this "
                    "operator reads"
                )
            return line

    return BoundedReplyParser
