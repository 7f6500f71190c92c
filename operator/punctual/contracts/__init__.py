"""The contracts at the bottom of the operator: the protocols the scheduler is wired through
(``protocols``) and the records that cross them (``records``).

Belongs here: small Protocols and frozen records, nothing that does I/O or decides anything.
Does not belong here: any implementation (locks, stores, targets implement these; the
scheduler in ``punctual.runtime`` calls them), and scheduling logic (``punctual.scheduling``).
"""
