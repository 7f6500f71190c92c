"""The pure scheduling core: when slots fire and what to do when they cannot.

Belongs here: parsing and validating ``schedule``/``every``/durations, next slots in a time
zone with the DST rules, slot ids, per-job jitter, missed-run and overlap decisions, which
replicas own a job (rendezvous hashing over the live members).

Does not belong here: anything that does I/O, reads a clock, sleeps or touches asyncio. Every
instant is passed in as an aware UTC ``datetime``; callers own the clocks.
"""
