"""The operator proper: kopf handlers that translate resource events into scheduler calls.

Belongs here: the handlers (``handlers``), the reconciler that arms, re-arms, suspends and
disarms jobs per replica (``reconciler``), on the target kinds' own wiring
(``punctual.targets.kinds``).
Scheduling decisions stay in ``punctual.scheduling``; API access stays in ``punctual.kube``.
"""
