"""The queue target: each slot appends an entry to a Redis stream, for consumers to do the work.

Belongs here: the claim that appends the entry in the same atomic step (``stream``), the
executor that reports the entry's id (``executor``) and the wiring (``wiring``).

Does not belong here: connecting to Redis and the pipelined claims it shares with the slot lock
(``punctual.redis_io``); the slot lock itself (``punctual.locks``, never imported from here).
"""
