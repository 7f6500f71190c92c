"""Claim notices on Redis: their channels, scoped to the installation, and their one shape,
``<uid> <unix-ms>``; whatever else comes on a channel is refused whole (outside input)."""

from datetime import UTC, datetime

import pytest

from punctual.contracts import records
from punctual.kube import membership
from punctual.redis_io import claim_notices

SLOT = datetime(2026, 12, 1, 16, 0, 0, 250_000, tzinfo=UTC)
UID = "5f0c1d2e-0000-4000-8000-00000000abcd"


class TestANoticeIsTheJobsUidAndItsSlot:
    def test_it_reads_back_what_was_written(self) -> None:
        notice = records.ClaimNotice(uid=UID, slot=SLOT)

        assert claim_notices.encode(notice) == f"{UID} 1796140800250".encode()
        assert claim_notices.parse(claim_notices.encode(notice)) == notice


class TestAnythingElseIsRefused:
    @pytest.mark.parametrize(
        "data",
        [
            b"",
            b" ",
            UID.encode(),  # no slot
            f"{UID} ".encode(),
            f"{UID}  1796140800250".encode(),  # two spaces
            f"{UID} 1796140800250 ".encode(),
            f"{UID} 1796140800250\n".encode(),
            f"{UID} -1796140800250".encode(),
            f"{UID} 17961408002.50".encode(),
            f"{UID} 179614080025000".encode(),  # 15 digits: more than a slot has
            f"{UID} ０１２".encode(),  # digits, but not ASCII ones
            f"{UID}\x00 1796140800250".encode(),
            f"ns/name/{UID} 1796140800250".encode(),  # a slot id is no uid
            b"a" * 65 + b" 1796140800250",  # a uid longer than any
            b"a" * 10_000,
            "é 1796140800250".encode(),
            b"\xff\xfe 1",
        ],
    )
    def test_bytes_that_are_not_exactly_one_notice(self, data: bytes) -> None:
        assert claim_notices.parse(data) is None

    @pytest.mark.parametrize("data", [None, 1796140800250, "uid 1", ["uid", "1"], {"a": 1}])
    def test_a_reply_that_is_not_bytes(self, data: object) -> None:
        assert claim_notices.parse(data) is None

    def test_the_longest_uid_and_slot_are_taken(self) -> None:
        data = b"a" * 64 + b" " + b"9" * 14

        assert len(data) <= claim_notices.MAX_NOTICE
        assert claim_notices.parse(data) is not None


class TestChannelsAreTheInstallationsOwn:
    def test_each_member_has_one(self) -> None:
        scope = claim_notices.scope(namespace="punctual", group="all-namespaces")

        assert claim_notices.channel(scope, "r1") == "punctual:claims:punctual/all-namespaces:r1"

    @pytest.mark.parametrize(
        ("one", "other"),
        [
            (("punctual", ("team-a",)), ("punctual", ("team-b",))),  # scopes in one namespace
            (("ops-a", ()), ("ops-b", ())),  # two installations of every namespace
        ],
    )
    def test_two_installations_never_share_a_channel(
        self, one: tuple[str, tuple[str, ...]], other: tuple[str, tuple[str, ...]]
    ) -> None:
        channels = {
            claim_notices.channel(
                claim_notices.scope(namespace=namespace, group=membership.group_of(watched)),
                "punctual-0",
            )
            for namespace, watched in (one, other)
        }

        assert len(channels) == 2
