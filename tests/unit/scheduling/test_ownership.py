"""``ownership``: rendezvous hashing gives each job an owner and a backup among live members."""

import itertools
from collections import Counter

import pytest

from punctual.scheduling import ownership
from punctual.scheduling.ownership import Role

MEMBERS = ("r1", "r2", "r3")
WEIGHT_R1_UID0 = 0xAC102DDEEDD3DFBD
UIDS = [f"uid-{index}" for index in range(3000)]


def shares_of(members: tuple[str, ...]) -> dict[str, ownership.Shares | None]:
    return {uid: ownership.shares(uid, members) for uid in UIDS}


class TestEveryReplicaComputesTheSameShares:
    @pytest.mark.parametrize("order", list(itertools.permutations(MEMBERS)))
    def test_the_order_members_are_listed_in_does_not_matter(self, order: tuple[str, ...]) -> None:
        assert shares_of(order) == shares_of(MEMBERS)

    def test_weights_are_stable_across_processes(self) -> None:
        # Not Python's salted hash: a fixed value any replica computes, whatever PYTHONHASHSEED.
        assert ownership.weight("r1", "uid-0") == WEIGHT_R1_UID0


class TestEachJobHasOneOwnerAndOneOtherBackup:
    @pytest.mark.parametrize(
        ("members", "owners", "backups"),
        [
            pytest.param((), 0, 0, id="no-member-no-share"),
            pytest.param(("r1",), 1, 0, id="one-member-owns-all-no-backup"),
            pytest.param(("r1", "r2"), 1, 1, id="two-members"),
            pytest.param(MEMBERS, 1, 1, id="three-members"),
        ],
    )  # fmt: skip
    def test_roles_per_job(self, members: tuple[str, ...], owners: int, backups: int) -> None:
        for uid in UIDS[:200]:
            roles = Counter(ownership.role(uid, members, member) for member in members)
            assert (roles[Role.OWNER], roles[Role.BACKUP]) == (owners, backups)

    def test_a_non_member_has_no_role(self) -> None:
        assert {ownership.role(uid, MEMBERS, "r9") for uid in UIDS} == {Role.NONE}

    def test_no_member_means_no_shares(self) -> None:
        assert ownership.shares("uid-0", []) is None


class TestJobsSpreadEvenly:
    @pytest.mark.parametrize("count", [2, 3, 5])
    def test_each_member_owns_about_its_share(self, count: int) -> None:
        members = tuple(f"replica-{index}" for index in range(count))
        owners = Counter(share.owner for share in shares_of(members).values() if share)
        expected = len(UIDS) / count
        assert all(abs(owners[member] - expected) < 0.15 * expected for member in members)


class TestAMembershipChangeMovesOnlyTheJobsItMust:
    def test_a_member_leaving_moves_only_its_jobs_and_its_backups(self) -> None:
        before, after = shares_of(MEMBERS), shares_of(("r1", "r3"))
        for uid in UIDS:
            old, new = before[uid], after[uid]
            assert old is not None
            assert new is not None
            if "r2" not in (old.owner, old.backup):
                assert new == old
            elif old.owner == "r2":
                assert new.owner == old.backup  # the backup takes over: it was armed already
            else:
                assert new.owner == old.owner

    def test_a_member_joining_takes_only_the_jobs_it_now_holds(self) -> None:
        before, after = shares_of(("r1", "r3")), shares_of(MEMBERS)
        moved = 0
        for uid in UIDS:
            old, new = before[uid], after[uid]
            assert old is not None
            assert new is not None
            if "r2" not in (new.owner, new.backup):
                assert new == old
            else:
                moved += 1
                assert old.owner in (new.owner, new.backup)  # the owner is still armed
        assert moved < 0.75 * len(UIDS)


class TestTiesGoToTheSmallerName:
    def test_equal_weights(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(ownership, "weight", lambda _member, _key: 7)
        assert ownership.shares("uid", ["b", "c", "a"]) == ownership.Shares(owner="a", backup="b")
