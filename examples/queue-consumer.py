"""A consumer of the queue target's stream: a consumer group, XREADGROUP, XACK, idempotent.

Punctual appends one entry per slot (see README.md, "Queue target: message format"). A slot is
never enqueued twice by Punctual, but a consumer can still see an entry twice: it crashed after
doing the work and before XACK, and the entry was delivered again (here: claimed back from the
pending list with XAUTOCLAIM). So the work is made idempotent by the entry's
``idempotencyKey`` (the slot id): a key is recorded in a Redis SET of done keys (with an
expiry) once its work is done, and an entry whose key is in it is only acknowledged.

The stream of a ScheduledJob in namespace ``reports`` with ``spec.target.queue.stream:
jobs`` is the key ``punctual:ns:{reports}:stream:jobs`` (its Ready condition names it); this
consumer keeps its done set beside it, under the same namespace's prefix, so a Redis user
limited to ``~punctual:ns:{reports}:*`` (docs/queue-messages.md, "A Redis user per namespace")
can run it.

Usage (several consumers may run side by side, each with its own --consumer name):

    python examples/queue-consumer.py --redis-url redis://reports:PASSWORD@redis:6379/0 \\
        --namespace reports --stream jobs --group reports --consumer worker-1

Needs only redis-py (``pip install redis``).
"""

import argparse
import json
import logging
import signal
import socket
from typing import Any

import redis

DONE_TTL_SECONDS = 7 * 24 * 3600
"""How long the done keys are remembered; longer than any redelivery can take."""
CLAIM_IDLE_MS = 60_000
"""Entries pending this long with a consumer that went away are taken over."""

log = logging.getLogger("queue-consumer")


def do_the_work(job: str, scheduled_time: str, payload: dict[str, Any]) -> None:
    """The scheduled work itself; replace with yours."""
    log.info("running %s for %s with %s", job, scheduled_time, payload)


def handle(client: "redis.Redis", done_key: str, entry_id: str, fields: dict[str, str]) -> None:
    key = fields["idempotencyKey"]
    if client.sismember(done_key, key):
        log.info("entry %s (slot %s) was done already: acknowledging only", entry_id, key)
        return
    do_the_work(fields["job"], fields["scheduledTime"], json.loads(fields["payload"]))
    # Remember the slot as done before acknowledging: a crash in between redelivers an entry
    # that is then skipped, never run twice.
    with client.pipeline() as pipe:
        pipe.sadd(done_key, key)
        pipe.expire(done_key, DONE_TTL_SECONDS)
        pipe.execute()


def namespace_prefix(namespace: str) -> str:
    """Where Punctual keeps a namespace's streams, and this consumer its own keys."""
    return f"punctual:ns:{{{namespace}}}:"


def consume(
    client: "redis.Redis",
    *,
    namespace: str,
    stream: str,
    group: str,
    consumer: str,
    stop: list[bool],
) -> None:
    prefix = namespace_prefix(namespace)
    done_key = f"{prefix}done:{group}:{stream}"
    stream = f"{prefix}stream:{stream}"
    log.info("reading %s as %s of group %s", stream, consumer, group)
    try:
        client.xgroup_create(stream, group, id="0", mkstream=True)
    except redis.ResponseError as error:
        if "BUSYGROUP" not in str(error):  # the group exists already: fine
            raise
    while not stop:
        # Entries another consumer took and never acknowledged (it died) come back first.
        _, claimed, _ = client.xautoclaim(stream, group, consumer, CLAIM_IDLE_MS, count=10)
        batch = [(stream, claimed)] if claimed else []
        # Then new entries, waiting up to a second for some.
        batch += client.xreadgroup(group, consumer, {stream: ">"}, count=10, block=1000) or []
        for _, entries in batch:
            for entry_id, fields in entries:
                try:
                    handle(client, done_key, entry_id, fields)
                except Exception:
                    log.exception("entry %s failed; it stays pending and comes back", entry_id)
                    continue
                client.xack(stream, group, entry_id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--namespace", required=True, help="the ScheduledJob's namespace")
    parser.add_argument("--stream", required=True, help="its spec.target.queue.stream")
    parser.add_argument("--group", default="punctual-consumers")
    parser.add_argument("--consumer", default=socket.gethostname())
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    stop: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    client = redis.Redis.from_url(arguments.redis_url, decode_responses=True)
    try:
        consume(
            client,
            namespace=arguments.namespace,
            stream=arguments.stream,
            group=arguments.group,
            consumer=arguments.consumer,
            stop=stop,
        )
    except KeyboardInterrupt:
        pass
    finally:
        client.close()


if __name__ == "__main__":
    main()
