"""``status.lastRunNowToken``: the token of the newest run asked for by hand that was decided
here, started or skipped, so that neither setting it again nor a restart runs it (again)."""

from datetime import UTC, datetime, timedelta

import pytest

from punctual.contracts import records
from status_api_double import JOB, FakeStatusApi, scheduled_job, store_on

SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
SKIPPED = records.RunResult.SKIPPED_OVERLAP
AT_LIMIT = records.RunResult.SKIPPED_IN_FLIGHT_LIMIT
SUCCEEDED = records.RunResult.SUCCEEDED


def started(token: str | None) -> records.ActiveRun:
    return records.ActiveRun(
        slot=SLOT, scheduled_time=SLOT, started_at=SLOT, replica="r1", token=token
    )


def finished(
    token: str | None, result: records.RunResult, *, ran: bool = True
) -> records.RunRecord:
    return records.RunRecord(
        slot=SLOT,
        scheduled_time=SLOT,
        result=result,
        started_at=SLOT if ran else None,
        finished_at=SLOT + timedelta(seconds=1) if ran else None,
        message="",
        replica="r1",
        token=token,
    )


class TestTheTokenRemembered:
    @pytest.mark.parametrize(
        ("happened", "token"),
        [
            pytest.param([started("a")], "a", id="a-run-started"),
            pytest.param([finished("a", SKIPPED, ran=False)], "a",
                         id="a-run-skipped-under-forbid"),
            pytest.param([finished("a", AT_LIMIT, ran=False)], "a",
                         id="a-run-skipped-at-the-limit-of-runs-in-flight"),
            pytest.param([started("b"), finished("a", SUCCEEDED)], "b",
                         id="an-older-run-ending-leaves-the-newer-token"),
            pytest.param([started("a"), finished("b", SKIPPED, ran=False)], "b",
                         id="a-newer-token-skipped"),
            pytest.param([started(None), finished(None, SKIPPED, ran=False)], None,
                         id="the-schedules-runs-have-none"),
        ],
    )  # fmt: skip
    async def test_after_a_write(
        self, happened: list[records.ActiveRun | records.RunRecord], token: str | None
    ) -> None:
        api = FakeStatusApi(scheduled_job())
        store = store_on(api, wall=lambda: SLOT, clock=lambda: 0.0)
        for event in happened:
            if isinstance(event, records.ActiveRun):
                store.run_started(JOB, event)
            else:
                store.run_finished(JOB, event)
        await store._flush(due_only=False)

        assert api.status.get("lastRunNowToken") == token
