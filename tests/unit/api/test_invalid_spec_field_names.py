"""An InvalidSpecError names the offending field, and that name ends up in the Ready condition,
a Warning Event and the operator's log. A field name the user made up must not carry raw
newlines or terminal escapes there (a forged log line, a rewritten terminal)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from punctual.api import spec_parsing
from punctual.scheduling.errors import InvalidSpecError

VALID = {"every": "1s", "target": {"http": {"url": "http://127.0.0.1/"}}}


def problem_with_unknown_field(name: str) -> InvalidSpecError:
    with pytest.raises(InvalidSpecError) as refused:
        spec_parsing.parse_spec({**VALID, "dst": {name: 1}})
    return refused.value


def test_a_plain_unknown_field_is_named_by_its_path() -> None:
    assert str(problem_with_unknown_field("nonExistent")) == "spec.dst.nonExistent: unknown field"


@settings(max_examples=200, deadline=None)
@given(name=st.text(min_size=1, max_size=20))
def test_a_made_up_field_name_reaches_messages_printable_and_on_one_line(name: str) -> None:
    message = str(problem_with_unknown_field(name))

    assert message.isprintable(), repr(message)
