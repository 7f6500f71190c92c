"""Low-level access to the Kubernetes API, one module per purpose.

Belongs here: the API client, the cache of the newest ScheduledJob bodies this replica saw,
reading and patching status (``status``), reading Secrets (``secrets``), posting Events
(``events``). Nothing here decides anything: the controller and the stores do.
"""
