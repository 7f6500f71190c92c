"""A push onto a tenant's broker, as plain records: the Redis commands a framework's own client
would send to enqueue one message, and the message's id, derived from the slot.

The formats (``celery_messages``, ``rq_jobs``, ``arq_jobs``, ``dramatiq_messages``,
``taskiq_messages``, ``sidekiq_jobs``, ``bullmq_jobs``) build a ``Push``; the broker
(``brokers``) sends it in one script together with the slot's claim, so no format does I/O. A
framework whose own writes depend on what the broker holds (BullMQ's) brings them as a
``Script``, run after the claim in the same script.
"""

import json
import uuid
from dataclasses import dataclass

MESSAGE_IDS = uuid.UUID("6f0c8a4e-2b7d-5c3e-9a41-70756e637475")
"""The UUID namespace of message ids: fixed, so every replica derives the same id of a slot."""


def message_id(slot_id: str) -> str:
    """The framework's task or job id of ``slot_id``'s message: a UUID (version 5) of the slot
    id, the same on every replica and every attempt, so consumers can deduplicate on it."""
    return str(uuid.uuid5(MESSAGE_IDS, slot_id))


def json_text(value: object) -> str:
    """``value`` as the compact JSON the frameworks' own serializers write (no spaces)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Command:
    """One write of a push: ``name key *arguments`` on a key that holds ``kind`` (or nothing)."""

    kind: str
    """The Redis type the key must hold if it exists (``list``, ``hash``, ``set``, ``zset``,
    ``string``, ``stream``): a key of another type fails the push before anything is
    written."""
    name: str
    key: str
    arguments: tuple[str | bytes | int, ...]


@dataclass(frozen=True, slots=True)
class Script:
    """A framework's own Lua, run after the slot's claim in the same script: ``keys`` (each
    with the type it must hold, checked before anything is written) are its ``keys[1..]``, its
    ``arguments`` its ``args[1..]``; it returns 1 when it pushed, 0 when the framework found the
    message there already."""

    body: str
    keys: tuple[tuple[str, str], ...]
    """(type, key) pairs, in the order ``body`` reads them."""
    arguments: tuple[str | bytes | int, ...]


@dataclass(frozen=True, slots=True)
class Push:
    message_id: str
    commands: tuple[Command, ...]
    """The writes, in order; none when ``script`` writes."""
    description: str
    """What was enqueued and where, for the run's message (``celery task <id> on list
    <key>``)."""
    script: Script | None = None
