"""The real wall clock; tests and benchmarks inject others."""

from datetime import UTC, datetime


def system_wall() -> datetime:
    return datetime.now(UTC)
