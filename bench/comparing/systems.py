"""The systems compared and the measures taken of each: their names in every table."""

from datetime import timedelta
from typing import Any

from punctual.redis_io import namespace_keys

NAMESPACE = "compare"
STREAM = "queue"
STREAM_KEY = namespace_keys.stream_key(namespace=NAMESPACE, stream=STREAM)
CRON_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
PUNCTUAL_ANNOTATION = "punctual.dev/scheduled-time"
SCHEDULED_HEADER = "X-Punctual-Scheduled-Time"
MINUTE = timedelta(minutes=1)
LEAD = timedelta(seconds=5)
"""The first measured slot is at least this long after everything is armed."""
SETTLE = timedelta(seconds=25)
"""How long after the last measured slot the observers keep listening (pods, stragglers)."""
READY_TIMEOUT = 120.0
"""How long the operator may take to arm a phase's ScheduledJobs (per 500 objects)."""

CRONJOB = "CronJob"
PUNCTUAL = "Punctual Job"
QUEUE = "Punctual queue"
HTTP = "Punctual HTTP"
WARM_EXEC = "Punctual Job, warm (Exec)"
WARM_INIT = "Punctual Job, warm (Init)"
WARM_MODES = {WARM_EXEC: "Exec", WARM_INIT: "Init"}
"""The warm systems and the ``warmStart.mode`` each one's ScheduledJobs ask for."""
SYSTEMS = (CRONJOB, PUNCTUAL, QUEUE, HTTP, WARM_EXEC, WARM_INIT)

JOB_WATCH = "Job created (watch)"
JOB_CREATED = "Job created (creationTimestamp)"
POD_RUNNING = "pod Running (watch)"
POD_START = "pod startTime"
WORKLOAD_STARTED = "workload started (its call)"
AT_RECEIVER = "request at the receiver"
ENTRY_ID = "entry id time"
ENTRY_READ = "consumer read"
RUN_STARTED = "run started (status)"
"""Punctual's own record: when the run began (after the claim), before the Job or the entry."""
AT_GATE = "pod at its gate (watch)"
"""A warm pod's gated container first seen running: negative when it waits ahead of its slot."""
GATE_RELEASED = "gate released (its lateMs)"
"""The gate's own report of its lateness, from the line it prints as it releases."""
GATE_LINE = "punctualGate"
RUN_PHASES = ("Running", "Succeeded", "Failed")
"""A pod in one of these phases has been Running (seen late, it may be past it)."""
WHOLE_SECONDS = (JOB_CREATED, POD_START)
BASIC_MEASURES = {
    CRONJOB: (JOB_WATCH, JOB_CREATED, POD_RUNNING, POD_START),
    PUNCTUAL: (RUN_STARTED, JOB_WATCH, JOB_CREATED, POD_RUNNING, POD_START),
    QUEUE: (RUN_STARTED, ENTRY_ID, ENTRY_READ),
}

PARTS = ("workload", "http", "stress", "scale", "outage", "express")
SCALE_SIZES = (20, 200, 1000)
WARM_LEAD = timedelta(seconds=30)
"""How long ahead of its slot a warm ScheduledJob's Job is created (--warm-lead)."""

JOB_TEMPLATE: dict[str, Any] = {
    "spec": {
        "backoffLimit": 0,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "tick", "image": "busybox:1.36", "command": ["true"]},
                ],
            }
        },
    }
}
