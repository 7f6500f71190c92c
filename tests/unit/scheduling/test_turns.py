"""Turns across namespaces: one item per namespace each round, the namespace that waited
longest since its turn first, whatever order the items came in."""

from collections.abc import Mapping
from typing import Any

import pytest

from punctual.scheduling import turns


class TestTurnsAcrossNamespaces:
    @pytest.mark.parametrize(
        ("ready", "limit", "taken"),
        [
            ({"a": ["a1", "a2", "a3"], "b": ["b1"]}, 3, ["a1", "b1", "a2"]),
            ({"a": ["a1", "a2", "a3"], "b": ["b1"]}, 10, ["a1", "b1", "a2", "a3"]),
            ({"a": ["a1", "a2"], "b": ["b1", "b2"], "c": ["c1"]}, 4, ["a1", "b1", "c1", "a2"]),
            ({"a": ["a1", "a2"], "b": []}, 2, ["a1", "a2"]),
            ({"a": ["a1"]}, 0, []),
            ({}, 5, []),
        ],
    )
    def test_one_write_per_namespace_each_round(
        self, ready: Mapping[str, list[str]], limit: int, taken: list[str]
    ) -> None:
        assert turns.FairTurns().take(ready, limit=limit) == taken

    @pytest.mark.parametrize(
        ("rounds", "taken"),
        [
            # One write a tick still reaches every namespace in turn.
            ([({"a": ["a1", "a2", "a3"], "b": ["b1", "b2"]}, 1)] * 4, ["a1", "b1", "a1", "b1"]),
            # A namespace new to the writer goes before those served already.
            (
                [({"a": ["a1"]}, 1), ({"a": ["a1"]}, 1), ({"a": ["a1"], "b": ["b1"]}, 1)],
                ["a1", "a1", "b1"],
            ),
            # The one that waited longest since its turn starts the next round.
            (
                [({"a": ["a1"], "b": ["b1"], "c": ["c1"]}, 2)] * 3,
                ["a1", "b1", "c1", "a1", "b1", "c1"],
            ),
        ],
    )
    def test_the_turns_go_on_from_tick_to_tick(
        self, rounds: list[tuple[Mapping[str, list[str]], int]], taken: list[str]
    ) -> None:
        fair = turns.FairTurns()

        assert [item for ready, limit in rounds for item in fair.take(ready, limit=limit)] == taken

    def test_reads_only_as_far_as_its_turns_reach(self) -> None:
        read: list[int] = []

        def many() -> Any:
            for index in range(10_000):
                read.append(index)
                yield index

        turns.FairTurns().take({"a": many(), "b": iter([-1])}, limit=3)

        assert read == [0, 1]
