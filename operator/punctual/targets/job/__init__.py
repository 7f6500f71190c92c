"""The job target: one Kubernetes batch/v1 Job (a "batch Job") per slot, like a CronJob's.

Belongs here, one module per purpose: the names, labels and manifests of our batch Jobs
(``manifests``), their state read back (``states``), the API requests about them
(``requests``), the one shared watch that follows them (``watcher``), the executor
(``executor``) and the wiring (``wiring``).

Does not belong here: ScheduledJob I/O (the API client, status, Events: ``punctual.kube``), and
the plan's rules for this target (its loop timeout margin and shortest period:
``punctual.api.planning``, which makes every plan and sits below the targets). "Job" alone means a
ScheduledJob everywhere else; here the Kubernetes object is a batch Job.
"""
