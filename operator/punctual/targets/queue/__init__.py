"""The queue target: each slot leaves one message for consumers to do the work: an entry of a
Redis stream on the operator's Redis, or a Celery, RQ, arq, Dramatiq, taskiq, Sidekiq or BullMQ
task on the tenant's own broker.

Belongs here: the claim that appends the stream entry in the same atomic step (``stream``), the
tenants' brokers and the claim-and-push script run on them (``brokers``), each framework's
message (``pushes``, ``celery_messages``, ``rq_jobs``, ``arq_jobs``, ``dramatiq_messages``,
``taskiq_messages``, ``sidekiq_jobs``, ``bullmq_jobs``), the executors (``executor``) and the
wiring (``wiring``).

Does not belong here: connecting to Redis and the pipelined claims it shares with the slot lock
(``punctual.redis_io``); the slot lock itself (``punctual.locks``, never imported from here);
the addresses a broker may have (``punctual.targets.addresses``); reading Secrets
(``punctual.kube.secrets``).
"""
