"""Where a namespace's keys live on the operator's Redis: ``punctual:ns:{<namespace>}:``.

A queue target's stream is ``punctual:ns:{<namespace>}:stream:<name>``: the namespace comes from
the object's metadata, never from its spec, and the name (``spec.target.queue.stream``) is only
ever appended to it. A namespace is a DNS label (no ``{``, ``}`` or ``:``), so the closing brace
ends it unambiguously: no name, whatever its characters, reaches a key of another namespace, and
no key of one namespace is a prefix of another's. Everything the operator keeps for itself
(``redis_io.slot_keys``, ``locks.redis_leases``, the health probe of ``redis_io.pipelines``)
starts otherwise, so a consumer's Redis ACL user limited to ``~punctual:ns:{<namespace>}:*``
reads its own streams and nothing of the operator's or of another namespace (see
docs/queue-messages.md). The braces are also a Redis Cluster hash tag: one namespace's keys
share a hash slot.
"""

import re

from punctual.api import queue_models

NAMESPACES_PREFIX = "punctual:ns:"
"""What every namespace's keys, and only they, start with."""

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_STREAM_NAME = re.compile(queue_models.STREAM_NAME_PATTERN)


def namespace_prefix(namespace: str) -> str:
    """What every key of ``namespace`` starts with; refuses a namespace that is not a DNS
    label (a Kubernetes namespace always is: anything else is a bug upstream)."""
    if not _DNS_LABEL.fullmatch(namespace):
        raise ValueError(f"refusing a namespace that is not a DNS label: {namespace!r}")
    return f"{NAMESPACES_PREFIX}{{{namespace}}}:"


def stream_key(*, namespace: str, stream: str) -> str:
    """The key of the stream named ``stream`` (``spec.target.queue.stream``) in ``namespace``;
    refuses a name the API would refuse (``queue_models.STREAM_NAME_PATTERN``)."""
    if len(stream) > queue_models.MAX_STREAM_NAME_LENGTH or not _STREAM_NAME.fullmatch(stream):
        raise ValueError(f"refusing a stream name the API refuses: {stream!r}")
    return f"{namespace_prefix(namespace)}stream:{stream}"
