"""The job target's models (``spec.target.job``): the batch/v1 Job created for each slot, and
its warm start (the Job created ahead of its slot, its workload held until it).

``punctual.targets.job`` creates the Jobs; what a template must hold for a warm start is
``punctual.api.warm_pods``'.
"""

import enum

import pydantic

from punctual.api import fields


class WarmStartMode(enum.StrEnum):
    """Where the gate holds a warm Job's workload until its slot (``targets.job.warm``)."""

    AUTO = "Auto"
    """Exec when every container the gate holds has a ``command``, Init otherwise."""
    EXEC = "Exec"
    """The gate runs as the container's own command and execs the original at the slot."""
    INIT = "Init"
    """A last init container waits for the slot; the kubelet then starts the workload."""


class WarmStart(fields.ApiModel):
    """Create a slot's Job ahead of its slot, its workload held by a gate until the slot."""

    lead: fields.Duration = pydantic.Field(
        description="How long before its slot the Job is created: the pod is scheduled, its "
        "sandbox, network and volumes set up and every image pulled in that time, and its "
        "workload released at the slot. A positive Go-style duration (e.g. 30s); at most the "
        "schedule's shortest time between two slots minus spec.timeout.",
    )
    mode: WarmStartMode = pydantic.Field(
        default=WarmStartMode.AUTO,
        description="How the workload is held. Exec: each held container's command becomes "
        "the gate's, which execs the original command at the slot (same process, needs an "
        "explicit command). Init: a last init container waits for the slot, then the kubelet "
        "starts the containers (up to about a second later). Auto (default): Exec when every "
        "held container has a command and no liveness or startup probe, Init otherwise.",
    )
    gate_image: str | None = pydantic.Field(
        default=None,
        min_length=1,
        max_length=512,
        description="The gate's image, pulled in this namespace with the template's "
        "imagePullSecrets. Unset: the operator's (punctual run --warm-start-gate-image).",
    )


class JobTarget(fields.ApiModel):
    """A batch/v1 Job created for each slot, as a CronJob would."""

    template: fields.FreeFormObject = pydantic.Field(
        description="The Job to create, shaped like a CronJob's spec.jobTemplate: {metadata, "
        "spec} where spec is a batch/v1 JobSpec. The Job is named <name>-<unix seconds of the "
        "slot>, labelled punctual.dev/scheduled-job, annotated punctual.dev/scheduled-time and "
        "owned by the ScheduledJob; spec.timeout becomes its activeDeadlineSeconds.",
    )
    warm_start: WarmStart | None = pydantic.Field(
        default=None,
        description="Create each slot's Job lead ahead of its slot, with its pod template "
        "rewritten so that scheduling, image pulls and the pod's start happen before the slot "
        "and the workload starts at it; not with concurrencyPolicy Queue (an armed Job counts "
        "as running). Unset: the Job is created at the slot.",
    )
