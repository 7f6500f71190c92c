"""The tasks the frameworks' own workers run in the queue target's tests: each records the slot
and scheduled time it was given, one JSON line per run, in the file ``$RECORD_FILE``."""
