"""What the CronJob translation knows of CronJob (batch/v1): its fields and their defaults, the
fields of the JobSpec its jobTemplate holds, and the metadata the API server sets.

``punctual.api.cronjob_translation`` reads a CronJob through these: a field it does not know is
a problem to name, one the API server set is left out of the ScheduledJob.
"""

CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")
CONCURRENCY_DEFAULT = "Allow"
SUCCEEDED_HISTORY = 3
"""A CronJob's ``successfulJobsHistoryLimit`` when it sets none."""
FAILED_HISTORY = 1
"""A CronJob's ``failedJobsHistoryLimit`` when it sets none."""
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
SERVER_SET_METADATA = frozenset(
    {
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
        "generation",
        "selfLink",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generateName",
    }
)
"""Metadata the API server writes (``generateName`` too: the name it generated is kept)."""
SPEC_FIELDS = frozenset(
    {
        "schedule",
        "timeZone",
        "startingDeadlineSeconds",
        "concurrencyPolicy",
        "suspend",
        "jobTemplate",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
    }
)
"""The fields of a batch/v1 CronJob's spec: any other is named as left out."""
JOB_SPEC_FIELDS = frozenset(
    {
        "activeDeadlineSeconds",
        "backoffLimit",
        "backoffLimitPerIndex",
        "completionMode",
        "completions",
        "managedBy",
        "manualSelector",
        "maxFailedIndexes",
        "parallelism",
        "podFailurePolicy",
        "podReplacementPolicy",
        "selector",
        "successPolicy",
        "suspend",
        "template",
        "ttlSecondsAfterFinished",
    }
)
"""The fields of a batch/v1 JobSpec as of Kubernetes 1.35. Others are copied all the same (a
newer Kubernetes may know them), and named: a typo would be dropped by the API server."""
TOP_LEVEL_FIELDS = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})
"""The fields of any object at its top level, a CronJob's included."""
