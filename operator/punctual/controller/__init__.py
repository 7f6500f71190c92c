"""The operator proper: kopf handlers that translate resource events into scheduler calls.

Belongs here: the handlers (``handlers``), the reconciler that arms, re-arms, suspends and
disarms jobs per replica (``reconciler``), and the choice of a spec's target kind
(``targets``), whose wiring is the kind's own (``punctual.targets.<kind>.wiring``).
Scheduling decisions stay in ``punctual.scheduling``; API access stays in ``punctual.kube``.
"""
