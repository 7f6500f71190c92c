"""A BullMQ job as BullMQ 5's ``queue.add(name, data, {jobId})`` adds it.

``Queue.add`` runs BullMQ's Lua script ``addStandardJob`` (``commands/addStandardJob-9.lua``
and its includes) for a job with no delay, priority, parent or deduplication: it counts the job
(``INCR bull:<queue>:id``, even for a custom id), reads the events stream's length from the
queue's meta hash (``opts.maxLenEvents``, set to 10000 when missing), and if the job's hash
exists already, adds a ``duplicated`` event and nothing else: BullMQ drops a second copy of the
same id. Otherwise it writes the job's hash (``name``, ``data``, ``opts``, ``timestamp``,
``delay`` 0, ``priority`` 0), an ``added`` event, pushes the id onto the wait list (``LPUSH``;
onto the paused list when the queue's meta says ``paused``), adds the marker that wakes the
workers (``ZADD bull:<queue>:marker 0 "0"``) unless the queue is paused or at its global
concurrency, and a ``waiting`` event. ``BODY`` is that script's path for this job, in the same
order, run after the slot's claim (``brokers.CLAIM_THEN``); the tested version pins it
(``hack/node/package-lock.json``).

The job id is the slot's ``message_id``, so the slot is dropped natively even past the claim's
day. The data is the job's own; the opts carry ``punctual_slot`` and ``punctual_scheduled_time``
(RFC 3339), which BullMQ keeps as they are (``job.opts`` in the Worker), next to ``attempts``
(BullMQ's default 0: one try) and the removal counts when given.
"""

from datetime import datetime

from punctual.api import task_models
from punctual.scheduling import timeline
from punctual.targets.queue import pushes

PREFIX = "bull"
"""BullMQ's default key prefix (the Queue's and the Worker's ``prefix`` option unset)."""

BODY = """
-- keys: wait, paused, meta, id, active, events, marker, the job's hash
-- args: the job id, name, data (JSON), opts (JSON), timestamp (Unix ms)
redis.call('INCR', keys[4])
local maxEvents = redis.call('HGET', keys[3], 'opts.maxLenEvents')
if not maxEvents then
  maxEvents = 10000
  redis.call('HSET', keys[3], 'opts.maxLenEvents', maxEvents)
end
if redis.call('EXISTS', keys[8]) == 1 then
  redis.call('XADD', keys[6], 'MAXLEN', '~', maxEvents, '*', 'event', 'duplicated',
    'jobId', args[1])
  return 0
end
redis.call('HMSET', keys[8], 'name', args[2], 'data', args[3], 'opts', args[4],
  'timestamp', args[5], 'delay', 0, 'priority', 0)
redis.call('XADD', keys[6], '*', 'event', 'added', 'jobId', args[1], 'name', args[2])
local target, blocked = keys[1], false
local queue = redis.call('HMGET', keys[3], 'paused', 'concurrency')
if queue[1] then
  target, blocked = keys[2], true
elseif queue[2] then
  blocked = redis.call('LLEN', keys[5]) >= tonumber(queue[2])
end
redis.call('LPUSH', target, args[1])
if not blocked then
  redis.call('ZADD', keys[7], 0, '0')
end
redis.call('XADD', keys[6], 'MAXLEN', '~', maxEvents, '*', 'event', 'waiting', 'jobId', args[1])
return 1
"""


def bullmq_push(
    job: task_models.BullmqJob, *, slot_id: str, scheduled_time: datetime, now: datetime
) -> pushes.Push:
    """The script that adds ``job`` for the slot ``slot_id``, due at ``scheduled_time``, added
    at ``now``."""
    job_id = pushes.message_id(slot_id)
    opts: dict[str, object] = {"jobId": job_id, "attempts": job.attempts or 0}
    if job.remove_on_complete is not None:
        opts["removeOnComplete"] = job.remove_on_complete
    if job.remove_on_fail is not None:
        opts["removeOnFail"] = job.remove_on_fail
    opts["punctual_slot"] = slot_id
    opts["punctual_scheduled_time"] = timeline.rfc3339(scheduled_time)
    queue = f"{PREFIX}:{job.queue}:"
    keys = (
        ("list", f"{queue}wait"),
        ("list", f"{queue}paused"),
        ("hash", f"{queue}meta"),
        ("string", f"{queue}id"),
        ("list", f"{queue}active"),
        ("stream", f"{queue}events"),
        ("zset", f"{queue}marker"),
        ("hash", f"{queue}{job_id}"),
    )
    arguments = (
        job_id,
        job.name,
        pushes.json_text(job.data or {}),
        pushes.json_text(opts),
        int(now.timestamp() * 1000),
    )
    return pushes.Push(
        message_id=job_id,
        commands=(),
        description=f"bullmq job {job_id} on queue {job.queue!r}",
        script=pushes.Script(body=BODY, keys=keys, arguments=arguments),
    )
