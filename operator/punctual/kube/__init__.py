"""Low-level access to the Kubernetes API for ScheduledJobs, one module per purpose.

Belongs here: the API client, the cache of the newest ScheduledJob bodies this replica saw,
reading and patching status (``status_api``), reading Secrets (``secrets``), posting Events
(``events``). Nothing here decides anything: the controller and the stores do.

Does not belong here: the job target's batch Jobs (names, requests, their watch), which are
``punctual.targets.job``'s.
"""
