"""The asyncio scheduler: wall-clock timers, the per-job slot loop, the supervisor of many.

Belongs here: waiting, claiming, starting runs with timeouts, recording results, shutdown.
Everything with side effects is injected: the wall clock, the slot lock, the executor that
runs a slot and the store that records what happened, through ``punctual.contracts``.

Does not belong here: deciding *when* (that is ``punctual.scheduling``), and any concrete
backend (Redis, Kubernetes, HTTP), which live in their own packages and implement the contracts.
"""
