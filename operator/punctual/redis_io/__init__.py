"""Low-level access to the operator's Redis, shared by the slot lock, the run leases
(``punctual.locks``) and the queue target (``punctual.targets.queue``), which never import each
other.

Belongs here: connecting (``connections``: URL, pool, timeouts, redaction; replies of an
untrusted Redis read within a budget: ``bounded_replies``), the key of a slot
(``slot_keys``), and slot claims sent in pipelines (``pipelines``). Nothing here decides what a
claim sends or means: its users do.
"""
