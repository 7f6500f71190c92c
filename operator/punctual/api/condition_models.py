"""The conditions of a ScheduledJob's status: their types and the reasons the operator gives,
and the model of one condition, following the Kubernetes API conventions.

The controller writes Ready and Suspended (``punctual.controller.reconciler``), the status
writer LastRunSucceeded and WarmStartReady (``punctual.stores.status.conditions``); the status that
holds them is ``punctual.api.status_models``'.
"""

import enum

import pydantic

from punctual.api import fields

READY = "Ready"
"""The condition that tells whether the job is valid and being scheduled (written by the
controller, ``punctual.controller.reconciler``)."""
SUSPENDED = "Suspended"
"""The condition that tells whether no new slots are scheduled (written by the controller)."""
SCHEDULED = "Scheduled"
"""Ready's reason, with status True: nothing stands in the way of the job's runs."""
LOCK_BACKEND_UNAVAILABLE = "LockBackendUnavailable"
"""Ready's reason, with status False, while the lock backend does not answer (no slot can be
claimed)."""
LAST_RUN_SUCCEEDED = "LastRunSucceeded"
"""The condition that tells whether the last run that started succeeded (written by the status
writer, ``punctual.stores.status.conditions``, from the runs it writes)."""
NO_RUN_YET = "NoRunYet"
"""LastRunSucceeded's reason, with status Unknown, until a run has finished."""
WARM_START_READY = "WarmStartReady"
"""The condition that tells whether the newest warm run checked had its pod at its gate at its
scheduled time (written by the status writer from the job target's check at the slot)."""
WARM_START_NOT_READY = "WarmStartNotReady"
"""WarmStartReady's reason, with status False (and the Warning Event's): the pod's own reason."""
AT_GATE = "AtGate"
"""WarmStartReady's reason, with status True."""
CONDITION_MESSAGE_MAX = 32768
"""The longest condition message (the Kubernetes ``metav1.Condition`` limit)."""


class ConditionStatus(enum.StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Condition(fields.ApiModel):
    """One aspect of the object's state, following the Kubernetes API conventions."""

    type: str = pydantic.Field(
        min_length=1,
        max_length=316,
        description="The aspect: Ready (the schedule is valid and armed), Suspended, or "
        "LastRunSucceeded (whether the last run that started succeeded).",
    )
    status: ConditionStatus = pydantic.Field(description='"True", "False" or "Unknown".')
    reason: str = pydantic.Field(
        min_length=1,
        max_length=1024,
        pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        description="Why, in one CamelCase word: Scheduled; InvalidSpec, "
        "LockBackendUnavailable, ... when Ready is False; for LastRunSucceeded the last run's "
        "result (Succeeded, Failed, TimedOut, Lost), or NoRunYet.",
    )
    message: str = pydantic.Field(
        default="",
        max_length=CONDITION_MESSAGE_MAX,
        description="Details for humans; for InvalidSpec it names the offending field, e.g. "
        "spec.schedule; for LastRunSucceeded the last run's message.",
    )
    last_transition_time: fields.Timestamp = pydantic.Field(
        description="When status last changed (RFC 3339).",
    )
    observed_generation: fields.WholeNumber | None = pydantic.Field(
        default=None,
        ge=0,
        description="The metadata.generation of the spec this condition was computed from.",
    )
