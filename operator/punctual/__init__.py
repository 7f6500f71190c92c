"""Punctual: a Kubernetes operator that runs scheduled jobs on time.

Subpackages, from the bottom layer up (each imports only the ones below it):

- ``punctual.scheduling``: the pure scheduling core: parsing schedules, next slots, DST rules,
  jitter, missed-run and overlap decisions. No I/O, no clock reads, no asyncio.
- ``punctual.runtime``: the asyncio scheduler: wall-clock timers, the per-job slot loop and the
  supervisor of many loops. Clocks, locks, executors and the run store are injected.
- ``punctual.redis_io``: connecting to Redis and pipelined slot claims, shared by the Redis
  locks and the queue target.
- ``punctual.locks``: slot-lock backends, one per module.
- ``punctual.targets``: one package per target kind (``http``, ``job``, ``queue``): executor,
  its own I/O and its wiring.
- ``punctual.cli``: the ``punctual`` command line.
"""
