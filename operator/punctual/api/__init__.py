"""The ScheduledJob API: its types, the CRD generated from them, and their translation to plans.

Belongs here: the pydantic models of ``spec`` and ``status`` (the one source of truth for the
CRD in ``crds/``), the generation of that CRD, and the step from a raw ``spec`` to the
``punctual.scheduling.plans.JobPlan`` the scheduler obeys, with every error naming the field
users wrote; and the translation of CronJobs into ScheduledJobs (``cronjobs``, through
``cronjob_translation``, ``cronjob_schedules`` and ``cronjob_problems``).

Does not belong here: I/O of any kind (talking to the API server, writing status, printing):
callers read and write objects, this package only says what they mean.
"""
