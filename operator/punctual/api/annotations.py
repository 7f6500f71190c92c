"""The annotations users set on a ScheduledJob to ask the operator for something, and what
makes their values acceptable. An annotation is anyone's to write who may edit the object: its
value is outside input, checked here before it goes anywhere (a lock key, a header, a name).
"""

import re

RUN_NOW = "punctual.dev/run-now"
"""``punctual.dev/run-now: <token>``: run the job once more, now, once per new token."""
TOKEN_MAX_LENGTH = 63
_TOKEN = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def token_problem(annotation: str, value: str) -> str | None:
    """Why ``value`` is no acceptable token for ``annotation`` (None when it is): like a label
    value, 1 to 63 characters, alphanumeric at both ends, ``-``, ``_`` and ``.`` between."""
    if len(value) > TOKEN_MAX_LENGTH or not _TOKEN.fullmatch(value):
        shown = value if len(value) <= TOKEN_MAX_LENGTH else value[:TOKEN_MAX_LENGTH] + "…"
        return (
            f"metadata.annotations[{annotation}]: {shown!r} is no token: 1 to "
            f"{TOKEN_MAX_LENGTH} characters, letters and digits at both ends, '-', '_' and "
            "'.' between; nothing run"
        )
    return None
