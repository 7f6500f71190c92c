"""A ``punctual.dev/run-now`` token is outside input: like a label value (1 to 63 characters,
alphanumeric at both ends, ``-``, ``_``, ``.`` between), anything else refused with a message
naming the annotation, and cut short in it."""

from datetime import timedelta

import pytest

from punctual.api import annotations


class TestTokens:
    @pytest.mark.parametrize(
        "token", ["a", "20261201t131700-3fa9c01b", "Release_1.2-rc", "x" * 63, "0"]
    )
    def test_it_takes_label_like_values(self, token: str) -> None:
        assert annotations.token_problem(annotations.RUN_NOW, token) is None

    @pytest.mark.parametrize(
        "token", ["", "x" * 64, "-a", "a-", "a b", "a/b", "ä", "a\n", "a;rm -rf", "${x}"]
    )
    def test_it_refuses_anything_else_naming_the_annotation(self, token: str) -> None:
        problem = annotations.token_problem(annotations.RUN_NOW, token)
        assert problem is not None
        assert problem.startswith("metadata.annotations[punctual.dev/run-now]: ")

    def test_a_long_value_is_cut_short_in_the_message(self) -> None:
        problem = annotations.token_problem(annotations.RUN_NOW, "y" * 100_000)
        assert problem is not None
        assert len(problem) < 300


class TestBackfillRequests:
    def test_it_reads_a_token_and_a_window(self) -> None:
        asked = annotations.parse_backfill(
            '{"token": "b1", "from": "2026-11-30T00:00:00Z", "to": "2026-11-30T01:00:00Z"}'
        )

        assert not isinstance(asked, str)
        assert asked.token == "b1"
        assert asked.end - asked.start == timedelta(hours=1)

    @pytest.mark.parametrize(
        "value",
        [
            "yesterday please",
            "[]",
            '{"token": "b1", "from": "2026-11-30T00:00:00Z"}',
            '{"token": "b 1", "from": "2026-11-30T00:00:00Z", "to": "2026-11-30T01:00:00Z"}',
            '{"token": 7, "from": "2026-11-30T00:00:00Z", "to": "2026-11-30T01:00:00Z"}',
            '{"token": "b1", "from": "noon", "to": "2026-11-30T01:00:00Z"}',
            '{"token": "b1", "from": "2026-11-30T02:00:00Z", "to": "2026-11-30T01:00:00Z"}',
            '{"token": "b1", "from": "2026-11-30T00:00:00Z", "to": "2026-11-30T01:00:00Z", "x": 1}',
            "x" * 10_000,
        ],
    )
    def test_it_refuses_anything_else_naming_the_annotation(self, value: str) -> None:
        problem = annotations.parse_backfill(value)

        assert isinstance(problem, str)
        assert problem.startswith("metadata.annotations[punctual.dev/backfill]")
        assert len(problem) < 300
