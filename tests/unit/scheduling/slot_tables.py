"""The slot tables of the cron and DST tests: an expression's next slots, each computed from the
previous one as the loop does, written in the tables' notation (``2026-03-29T01:00Z``, or
``03-29T01:00Z`` within the table's implied year, then the adjustment if any)."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from punctual.scheduling import cron, dst
from punctual.scheduling.timeline import Occurrence


def render(occurrence: Occurrence, *, implied_year: int | None = None) -> str:
    instant = occurrence.at
    assert instant.utcoffset() == timedelta(0)
    text = f"{instant:%m-%dT%H:%M}" + (f":{instant:%S}" if instant.second else "") + "Z"
    if instant.year != implied_year:
        text = f"{instant.year}-{text}"
    if occurrence.adjustment is not None:
        text += f" {occurrence.adjustment}"
    return text


def slots_after(
    expression: str,
    after: datetime,
    count: int,
    *,
    zone: str,
    rules: dst.DstRules = dst.DstRules(),
    implied_year: int | None = None,
) -> list[str]:
    schedule = cron.parse(expression, zone=ZoneInfo(zone), rules=rules)
    slots = []
    for _ in range(count):
        occurrence = schedule.next_after(after)
        slots.append(render(occurrence, implied_year=implied_year))
        after = occurrence.at
    return slots
