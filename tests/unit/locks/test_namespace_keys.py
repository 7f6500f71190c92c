"""A queue target's stream is a key of its own namespace's, whatever its name: the namespace's
prefix comes from the object's metadata, the name is only appended, and no namespace's keys
meet another's or the operator's own (slot keys, run leases, claim notices)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from punctual.api import queue_models
from punctual.locks import redis_leases
from punctual.redis_io import claim_notices, namespace_keys, pipelines, slot_keys

DNS_LABEL = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z", fullmatch=True)
"""A namespace: an RFC 1123 label."""
STREAM_NAMES = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._:-]{0,127}\Z", fullmatch=True)
OPERATOR_PREFIXES = [
    slot_keys.KEY_PREFIX,
    redis_leases.RUN_PREFIX,
    redis_leases.RUNS_KEY,
    claim_notices.CHANNEL_PREFIX,
    pipelines.PROBE_KEY,
]


class TestAStreamKey:
    @pytest.mark.parametrize(
        ("namespace", "stream", "key"),
        [
            ("reports", "jobs", "punctual:ns:{reports}:stream:jobs"),
            ("reports", "reports:jobs", "punctual:ns:{reports}:stream:reports:jobs"),
            ("team-b", "punctual:runs", "punctual:ns:{team-b}:stream:punctual:runs"),
            ("a", "punctual:slot:b", "punctual:ns:{a}:stream:punctual:slot:b"),
            ("0", "0", "punctual:ns:{0}:stream:0"),
        ],
    )
    def test_is_the_namespaces_prefix_then_the_name(
        self, namespace: str, stream: str, key: str
    ) -> None:
        assert namespace_keys.stream_key(namespace=namespace, stream=stream) == key

    @given(namespace=DNS_LABEL, stream=STREAM_NAMES)
    def test_always_starts_with_its_own_namespaces_prefix(
        self, namespace: str, stream: str
    ) -> None:
        key = namespace_keys.stream_key(namespace=namespace, stream=stream)

        assert key.startswith(namespace_keys.namespace_prefix(namespace))

    @given(
        first=st.tuples(DNS_LABEL, STREAM_NAMES),
        second=st.tuples(DNS_LABEL, STREAM_NAMES),
    )
    def test_never_lies_in_another_namespaces_space(
        self, first: tuple[str, str], second: tuple[str, str]
    ) -> None:
        (namespace, stream), (other, _) = first, second
        key = namespace_keys.stream_key(namespace=namespace, stream=stream)

        assert key.startswith(namespace_keys.namespace_prefix(other)) == (namespace == other)

    @pytest.mark.parametrize(
        "namespace",
        ["", "Reports", "team}b", "team:b", "team{b", "a*", "x" * 64, "team b", "team-"],
    )
    def test_refuses_a_namespace_that_is_not_a_dns_label(self, namespace: str) -> None:
        with pytest.raises(ValueError, match="not a DNS label"):
            namespace_keys.stream_key(namespace=namespace, stream="jobs")

    @pytest.mark.parametrize(
        "stream",
        ["", "}:x", "a b", "a\n", "a*", ":a", "s" * (queue_models.MAX_STREAM_NAME_LENGTH + 1)],
    )
    def test_refuses_a_name_the_api_refuses(self, stream: str) -> None:
        with pytest.raises(ValueError, match="stream name"):
            namespace_keys.stream_key(namespace="reports", stream=stream)


class TestTheOperatorsOwnKeys:
    @pytest.mark.parametrize("prefix", OPERATOR_PREFIXES)
    def test_lie_outside_every_namespaces_space(self, prefix: str) -> None:
        assert not prefix.startswith(namespace_keys.NAMESPACES_PREFIX)
        assert not namespace_keys.NAMESPACES_PREFIX.startswith(prefix)
