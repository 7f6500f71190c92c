"""The asyncio scheduler: wall-clock timers, the per-job slot loop and its runs, the supervisor.

Belongs here: waiting toward slots on the wall clock (``timers``); per job, deciding what
becomes of each slot as it comes due (``job_loop``: which slots are due, the missed-run policy)
and carrying that out (``runs``: claiming, the concurrency policy against the runs in flight,
the queue, running with timeouts, aborting, recording), with every task of the job closed
together (``tasks``); many jobs on one loop and their shutdown (``supervisor``); leases on
runs in flight and the take-over of lost ones (``leases``). Everything with side effects is
injected: the wall clock, the slot lock, the executor that runs a slot, the store that records
what happened and the lease backend, through ``punctual.contracts``.

Does not belong here: the pure decisions themselves, *when* a slot is and what a policy says
about it (that is ``punctual.scheduling``; the runtime applies them at the moment they are due),
and any concrete backend (Redis, Kubernetes, HTTP), which live in their own packages and
implement the contracts.
"""
