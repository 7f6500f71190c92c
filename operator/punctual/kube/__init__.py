"""Low-level access to the Kubernetes API for ScheduledJobs, one module per purpose.

Belongs here: the API client, the cache of the newest ScheduledJob bodies this replica saw,
reading, listing and patching (``status_api``), reading Secrets (``secrets``), posting Events
(``events``), the replicas' membership Leases (``membership``), and the list-and-watch loop that
the Lease watch and the job target's watch of its Jobs share (``watching``). Nothing here
decides anything: the controller, the stores and the scheduler do.

Does not belong here: the job target's batch Jobs (names, requests, their watch), which are
``punctual.targets.job``'s.
"""
