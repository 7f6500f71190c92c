"""Slot ids and the per-job jitter offset: the same on every replica, derived, never drawn."""

import statistics
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import ClassVar
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punctual.scheduling import slots

JOB = slots.JobRef(
    namespace="reports", name="nightly-report", uid="3f6c2a9e-8d1b-4c7a-9e0f-2b5d7c1a4e88"
)
UID_NAMESPACE = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")


class TestASlotIdNamesOneNominalInstantOfOneObject:
    @pytest.mark.parametrize(
        ("at", "expected_millis"),
        [
            pytest.param(datetime(2026, 12, 1, 1, 30, tzinfo=UTC), 1_796_088_600_000, id="utc"),
            pytest.param(
                datetime(2026, 12, 1, 2, 30, tzinfo=ZoneInfo("Europe/Copenhagen")),
                1_796_088_600_000,
                id="the-same-instant-in-another-zone",
            ),
            pytest.param(
                datetime(2026, 1, 1, 0, 0, 0, 250_000, tzinfo=UTC),
                1_767_225_600_250,
                id="milliseconds",
            ),
            pytest.param(
                datetime(2026, 1, 1, 0, 0, 0, 999_999, tzinfo=UTC),
                1_767_225_600_999,
                id="sub-millisecond-truncated",
            ),
            pytest.param(datetime(1970, 1, 1, tzinfo=UTC), 0, id="the-epoch"),
        ],
    )
    def test_it_is_namespace_name_uid_and_unix_millis(
        self, at: datetime, expected_millis: int
    ) -> None:
        assert slots.slot_id(JOB, at) == (
            f"reports/nightly-report/3f6c2a9e-8d1b-4c7a-9e0f-2b5d7c1a4e88/{expected_millis}"
        )

    def test_a_recreated_namesake_has_other_slot_ids(self) -> None:
        at = datetime(2026, 12, 1, 1, 30, tzinfo=UTC)
        namesake = slots.JobRef(namespace=JOB.namespace, name=JOB.name, uid="another-uid")
        assert slots.slot_id(namesake, at) != slots.slot_id(JOB, at)

    def test_two_occurrences_of_a_repeated_local_time_have_different_ids(self) -> None:
        first = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
        second = datetime(2026, 10, 25, 1, 30, tzinfo=UTC)
        assert slots.slot_id(JOB, first).endswith("/1792888200000")
        assert slots.slot_id(JOB, second).endswith("/1792891800000")


class TestASlotIdTellsItsJobAndSlotBack:
    @settings(max_examples=200, deadline=None)
    @given(
        st.from_regex(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", fullmatch=True),
        st.from_regex(r"[a-z0-9]([-.a-z0-9]{0,61}[a-z0-9])?", fullmatch=True),
        st.uuids().map(str),
        st.datetimes(
            min_value=datetime(1970, 1, 1),  # hypothesis wants naive bounds
            max_value=datetime(9000, 1, 1),
            timezones=st.just(UTC),
        ),
    )
    def test_for_every_id_slot_id_writes(
        self, namespace: str, name: str, uid: str, at: datetime
    ) -> None:
        job = slots.JobRef(namespace=namespace, name=name, uid=uid)
        whole = at.replace(microsecond=at.microsecond // 1000 * 1000)

        assert slots.parse_slot_id(slots.slot_id(job, at)) == (job, whole)

    @pytest.mark.parametrize(
        "text",
        [
            pytest.param("ns/name/uid", id="three-parts"),
            pytest.param("ns/name/uid/1/2", id="five-parts"),
            pytest.param("ns//uid/1", id="no-name"),
            pytest.param("ns/name/uid/ 12", id="space-in-millis"),
            pytest.param("ns/name/uid/1_000", id="underscore-in-millis"),
            pytest.param("ns/name/uid/99999999999999999", id="beyond-any-date"),
            pytest.param("ns/name/uid/\u0661", id="a-non-ascii-digit"),
        ],
    )
    def test_anything_else_is_refused(self, text: str) -> None:
        with pytest.raises(ValueError, match="not a slot id"):
            slots.parse_slot_id(text)


class TestARunNowIdTellsItsJobAndToken:
    def test_the_token_and_the_job_come_back(self) -> None:
        text = slots.run_now_slot_id(JOB, "deploy-42")

        assert (slots.run_now_token(text), slots.job_of(text)) == ("deploy-42", JOB)

    @pytest.mark.parametrize(
        "text",
        [
            pytest.param("reports/nightly-report/uid/1796088600000", id="a-slot-of-the-schedule"),
            pytest.param("reports/nightly-report/uid/run-now-", id="no-token"),
            pytest.param("reports//uid/run-now-abc", id="no-name"),
            pytest.param("reports/nightly-report/uid/x/run-now-abc", id="five-parts"),
        ],
    )
    def test_anything_else_names_no_token(self, text: str) -> None:
        assert slots.run_now_token(text) is None

    def test_a_slot_of_the_schedule_names_its_job_too(self) -> None:
        at = datetime(2026, 12, 1, 1, 30, tzinfo=UTC)

        assert slots.job_of(slots.slot_id(JOB, at)) == JOB

    def test_what_is_neither_is_refused(self) -> None:
        with pytest.raises(ValueError, match="not a slot id"):
            slots.job_of("reports/nightly-report/uid/yesterday")


uids = st.one_of(st.uuids().map(str), st.text(min_size=1, max_size=40))
positive_millis = st.integers(min_value=1, max_value=7 * 24 * 3600 * 1000).map(
    lambda ms: timedelta(milliseconds=ms)
)


class TestTheJitterOffsetStaysBelowTheJitterAndThePeriod:
    @settings(max_examples=200, deadline=None)
    @given(uids, positive_millis, positive_millis)
    def test_it_is_a_whole_millisecond_in_zero_to_the_smaller_bound(
        self, uid: str, jitter: timedelta, period: timedelta
    ) -> None:
        offset = slots.jitter_offset(uid, jitter=jitter, period=period)
        assert timedelta(0) <= offset < min(jitter, period)
        assert offset % timedelta(milliseconds=1) == timedelta(0)

    @pytest.mark.parametrize(
        ("jitter", "period"),
        [
            pytest.param(timedelta(0), timedelta(hours=1), id="no-jitter"),
            pytest.param(timedelta(microseconds=999), timedelta(hours=1), id="under-a-millisecond"),
            pytest.param(timedelta(seconds=30), timedelta(0), id="no-period"),
        ],
    )
    def test_a_bound_under_one_millisecond_means_no_offset(
        self, jitter: timedelta, period: timedelta
    ) -> None:
        assert slots.jitter_offset(JOB.uid, jitter=jitter, period=period) == timedelta(0)

    @pytest.mark.parametrize(
        ("uid", "jitter", "period", "offset"),
        [
            pytest.param(JOB.uid, timedelta(seconds=30), timedelta(hours=1),
                         timedelta(milliseconds=3_088), id="one-uid-under-the-jitter"),
            pytest.param(JOB.uid, timedelta(hours=2), timedelta(minutes=1),
                         timedelta(milliseconds=33_088), id="one-uid-capped-by-the-period"),
            pytest.param("b1946ac9-2492-4d6e-a3f1-8c0d7e5f9a21", timedelta(seconds=30),
                         timedelta(hours=1), timedelta(milliseconds=24_803), id="another-uid"),
        ],
    )  # fmt: skip
    def test_it_is_the_same_on_every_replica_and_every_release(
        self, uid: str, jitter: timedelta, period: timedelta, offset: timedelta
    ) -> None:
        """Pinned values: a change of the derivation would move every job during an upgrade,
        while replicas of two versions disagree about the offsets."""
        assert slots.jitter_offset(uid, jitter=jitter, period=period) == offset


class TestTheJitterSpreadsJobsEvenly:
    JITTER = timedelta(seconds=30)
    UIDS: ClassVar[list[str]] = [
        str(uuid.uuid5(UID_NAMESPACE, f"job-{index}")) for index in range(2000)
    ]

    def _offsets(self) -> list[float]:
        return [
            slots.jitter_offset(uid, jitter=self.JITTER, period=timedelta(hours=1)).total_seconds()
            for uid in self.UIDS
        ]

    def test_it_is_stable_per_uid(self) -> None:
        assert self._offsets() == self._offsets()

    def test_different_uids_get_different_offsets(self) -> None:
        # 2000 draws from 30000 milliseconds: about 65 coincidences are expected.
        assert len(set(self._offsets())) > 1850

    def test_the_offsets_fill_the_jitter_uniformly(self) -> None:
        offsets = self._offsets()
        per_tenth = Counter(int(offset // 3) for offset in offsets)
        assert sorted(per_tenth) == list(range(10))
        assert all(140 <= count <= 260 for count in per_tenth.values()), per_tenth
        assert statistics.fmean(offsets) == pytest.approx(15, abs=1)
