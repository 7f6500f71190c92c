"""What a loop builds ahead is taken once at its moment, built then if it was not, and only the
newest few are kept (a moment that went by untaken is dropped)."""

from punctual.aio import prepared


class Builds:
    def __init__(self) -> None:
        self.built: list[int] = []

    def __call__(self, moment: int) -> str:
        self.built.append(moment)
        return f"built for {moment}"


def test_what_was_built_ahead_is_taken_without_building_again() -> None:
    build = Builds()
    ahead = prepared.Prepared(build, key=lambda moment: moment)
    ahead.prepare(1)

    assert ahead.take(1) == "built for 1"
    assert build.built == [1]


def test_what_was_not_built_ahead_is_built_when_taken_and_each_take_is_once() -> None:
    build = Builds()
    ahead = prepared.Prepared(build, key=lambda moment: moment)
    ahead.prepare(1)
    ahead.take(1)

    assert ahead.take(1) == "built for 1"
    assert build.built == [1, 1]


def test_only_the_newest_are_kept() -> None:
    build = Builds()
    ahead = prepared.Prepared(build, key=lambda moment: moment)
    for moment in range(prepared.KEPT + 1):
        ahead.prepare(moment)

    ahead.take(0)  # the oldest went by: built again
    assert build.built == [*range(prepared.KEPT + 1), 0]
