"""``punctual trigger``: a fresh token each time, that the operator takes (a label-like value),
and the run of that token read from status, wherever status keeps it."""

from datetime import UTC, datetime

from punctual.api import annotations
from punctual.cli import trigger
from punctual.targets.job import manifests

NOW = datetime(2026, 12, 1, 13, 17, 0, tzinfo=UTC)


class TestFreshTokens:
    def test_each_is_new_and_one_the_operator_takes(self) -> None:
        first, second = trigger.fresh_token(NOW), trigger.fresh_token(NOW)

        assert first != second
        assert first.startswith("20261201t131700-")
        assert annotations.token_problem(annotations.RUN_NOW, first) is None


class TestResults:
    def test_it_finds_the_run_of_its_token_in_last_run_or_recent_runs(self) -> None:
        mine = {"runNowToken": "t1", "result": "Failed", "message": "HTTP 500"}
        other = {"runNowToken": "t0", "result": "Succeeded"}
        body = {"status": {"lastRun": other, "recentRuns": [other, mine]}}

        assert trigger.result_of(body, "t1") == mine
        assert trigger.result_of(body, "t2") is None
        assert trigger.result_of({"status": {"lastRun": "junk"}}, "t1") is None

    def test_a_run_the_operator_cancelled_is_its_result(self) -> None:
        """Replaced by a newer slot, or cut by an operator stop: it did not succeed."""
        mine = {"runNowToken": "t1", "result": "Cancelled", "message": "cancelled: replaced"}
        body = {"status": {"recentRuns": [mine]}}

        assert trigger.result_of(body, "t1") == mine

    def test_a_job_whose_ready_is_false_is_not_scheduled(self) -> None:
        ready = {"type": "Ready", "status": "False", "reason": "InvalidSpec", "message": "bad"}
        assert trigger.not_scheduled({"status": {"conditions": [ready]}}) == "InvalidSpec: bad"
        assert trigger.not_scheduled({"status": {}}) is None


class TestJobNames:
    def test_a_run_asked_for_by_hand_gets_a_name_from_its_token_within_63_characters(
        self,
    ) -> None:
        name = manifests.batch_job_name("x" * 80, NOW, token="t" * 63)

        assert len(name) <= 63
        assert name == manifests.batch_job_name("x" * 80, NOW, token="t" * 63)
        assert name != manifests.batch_job_name("x" * 80, NOW, token="t" * 62)
        assert name != manifests.batch_job_name("x" * 80, NOW)
