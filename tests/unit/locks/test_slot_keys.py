"""Redis keys are built only from validated names: a slot id made by ``slots.slot_id`` from any
valid Kubernetes namespace, name and uid is printable and free of whitespace, and the Redis lock
refuses (before any command) an id that could not have come from there."""

import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punctual.contracts import records
from punctual.locks import redis as redis_lock
from punctual.redis_io import slot_keys
from punctual.scheduling import slots

DNS_LABEL = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z", fullmatch=True)
"""A namespace: an RFC 1123 label."""
DNS_SUBDOMAIN = (
    st.lists(DNS_LABEL, min_size=1, max_size=4).map(".".join).filter(lambda name: len(name) <= 253)
)
"""A ScheduledJob's name: an RFC 1123 subdomain."""
INSTANTS = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
)
SLOT_ID = re.compile(r"\A[a-z0-9.-]+/[a-z0-9.-]+/[0-9a-f-]{36}/[0-9]+\Z")
ODD_IDS = [
    "",
    "ns/name/uid/1 2",
    "ns/name/uid/1\n",
    "ns/na\rme/uid/1",
    "ns/name\t/uid/1",
    "ns/name/uid/1\x00",
    "ns/name/uid/\x7f1",
    "ns/name/uid/1\x1b[2J",
    "ns/\u2028name/uid/1",
]


@settings(max_examples=300, deadline=None)
@given(namespace=DNS_LABEL, name=DNS_SUBDOMAIN, uid=st.uuids(), at=INSTANTS)
def test_a_slot_id_of_valid_names_is_a_plain_printable_key(
    namespace: str, name: str, uid: uuid.UUID, at: datetime
) -> None:
    slot_id = slots.slot_id(slots.JobRef(namespace=namespace, name=name, uid=str(uid)), at)

    assert SLOT_ID.fullmatch(slot_id), slot_id
    assert slot_id.isprintable()
    assert slot_keys.slot_key(slot_id) == f"punctual:slot:{slot_id}"


@pytest.mark.parametrize("odd", ODD_IDS)
def test_a_key_with_whitespace_or_control_characters_is_refused(odd: str) -> None:
    with pytest.raises(ValueError, match="refusing a slot id"):
        slot_keys.slot_key(odd)


class _NeverCalled:
    """A Redis client that fails the test if the lock sends it anything."""

    async def set(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("an odd slot id reached Redis")

    async def get(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("an odd slot id reached Redis")


@pytest.mark.parametrize("odd", ODD_IDS[1:])
async def test_the_lock_refuses_an_odd_slot_id_before_sending_anything(odd: str) -> None:
    job = slots.JobRef(namespace="ns", name="name", uid=str(uuid.uuid4()))
    claim = records.Claim(
        job=job,
        slot=datetime(2026, 1, 1, tzinfo=UTC),
        slot_id=odd,
        holder="replica-a:1",
        ttl=timedelta(minutes=1),
    )
    lock = redis_lock.RedisLock(_NeverCalled())  # type: ignore[arg-type]

    with pytest.raises(ValueError, match="refusing a slot id"):
        await lock.claim(claim)
