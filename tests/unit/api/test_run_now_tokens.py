"""A ``punctual.dev/run-now`` token is outside input: like a label value (1 to 63 characters,
alphanumeric at both ends, ``-``, ``_``, ``.`` between), anything else refused with a message
naming the annotation, and cut short in it."""

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
