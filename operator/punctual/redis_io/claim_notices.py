"""What a job's owner tells its backup on Redis: "I won the claim of this slot", by pub/sub.

Each replica listens on one channel of its own, ``punctual:claims:<scope>:<member>``: the scope
is the installation's (the membership Leases' namespace and group, ``kube.membership``), so two
installations sharing a Redis never hear each other. A notice is ``<uid> <unix-ms>``: the job's
uid and its slot, in ASCII. Whatever else comes on the channel is outside input: refused here,
whole, by its shape and its length, before anything reads into it.
"""

import re
from datetime import timedelta

from punctual.contracts import records
from punctual.scheduling import timeline

CHANNEL_PREFIX = "punctual:claims:"
MAX_NOTICE = 96
"""Bytes a notice can take at most: a uid of up to 64 characters, a space, 14 digits (slots up
to the year 5138; a datetime ends at 9999)."""

_NOTICE = re.compile(rb"([0-9A-Za-z-]{1,64}) ([0-9]{1,14})")


def scope(*, namespace: str, group: str) -> str:
    """The scope of an installation's channels: its membership Leases' namespace and group
    (neither holds a colon: a Kubernetes name, a label value)."""
    return f"{namespace}/{group}"


def channel(scope: str, member: str) -> str:
    """The channel ``member`` of the installation ``scope`` listens on."""
    return f"{CHANNEL_PREFIX}{scope}:{member}"


def encode(notice: records.ClaimNotice) -> bytes:
    return f"{notice.uid} {timeline.unix_millis(notice.slot)}".encode()


def parse(data: object) -> records.ClaimNotice | None:
    """The notice ``data`` holds; None when it is not exactly one."""
    if not isinstance(data, bytes) or len(data) > MAX_NOTICE:
        return None
    found = _NOTICE.fullmatch(data)
    if found is None:
        return None
    slot = timeline.EPOCH + timedelta(milliseconds=int(found[2]))
    return records.ClaimNotice(uid=found[1].decode(), slot=slot)
