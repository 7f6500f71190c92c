"""What ``WAIT`` (``--redis-wait-replicas``) costs a slot claim, on loopback.

Starts a Redis primary with one replica (``LocalRedis``, no persistence) and claims slots
through ``RedisLock`` on it, with no ``WAIT`` and with ``WAIT 1``, alternating rounds so that
what else runs on the machine weighs on both alike:

- lone claims, one after another: each is one round trip (the claim, and ``WAIT`` with it);
  printed: the claim's latency p50 and p99 in milliseconds, the medians of the rounds;
- bursts of claims due at once (``--burst``): claims per round trip (the ``WAIT`` is one
  command per round trip, not per claim) and the burst's time.

Usage: python bench/claim_wait.py [--claims 2000] [--rounds 3] [--burst 200]
"""

import argparse
import asyncio
import itertools
import statistics
import time
from datetime import UTC, datetime, timedelta

import uvloop

from lib.statistics import percentile
from localcluster import sentinel
from localcluster.redis import LocalRedis
from punctual.contracts import records
from punctual.locks import redis as redis_lock
from punctual.redis_io import connections, replication
from punctual.scheduling import slots

JOB = slots.JobRef(namespace="bench", name="claims", uid="uid-1")
EPOCH = datetime(2030, 1, 1, tzinfo=UTC)
_slots = itertools.count()


def claim() -> records.Claim:
    """A claim of a fresh slot (due after the server's start: provable, so won to run)."""
    slot = EPOCH + timedelta(seconds=next(_slots))
    return records.Claim(
        job=JOB,
        slot=slot,
        slot_id=slots.slot_id(JOB, slot),
        holder="bench:1",
        ttl=timedelta(minutes=1),
    )


async def lone_claims(lock: redis_lock.RedisLock, count: int) -> list[float]:
    """Milliseconds per claim, one after another."""
    latencies = []
    for _ in range(count):
        start = time.perf_counter()
        assert await lock.claim(claim())
        latencies.append((time.perf_counter() - start) * 1000)
    return latencies


async def burst(lock: redis_lock.RedisLock, size: int) -> float:
    """Milliseconds for ``size`` claims made at once."""
    start = time.perf_counter()
    assert all(await asyncio.gather(*(lock.claim(claim()) for _ in range(size))))
    return (time.perf_counter() - start) * 1000


async def wait_calls(connection: connections.Connection) -> int:
    """``WAIT`` commands the server has run so far."""
    stats = await connection.client.info("commandstats")
    return int(stats.get("cmdstat_wait", {}).get("calls", 0))


async def measure(url: str, arguments: argparse.Namespace) -> None:
    results: dict[int, dict[str, list[float]]] = {0: {}, 1: {}}
    for _ in range(arguments.rounds):
        for replicas in (0, 1):
            connection = connections.connect(url)
            lock = redis_lock.RedisLock(
                connection.client,
                description=connection.description,
                acknowledgement=replication.Acknowledgement(replicas=replicas),
            )
            try:
                await lone_claims(lock, 100)  # connections open, script loaded
                latencies = await lone_claims(lock, arguments.claims)
                waits_before = await wait_calls(connection)
                burst_ms = await burst(lock, arguments.burst)
                waits = await wait_calls(connection) - waits_before
            finally:
                await lock.close()
            figures = results[replicas]
            figures.setdefault("p50", []).append(percentile(sorted(latencies), 0.5))
            figures.setdefault("p99", []).append(percentile(sorted(latencies), 0.99))
            figures.setdefault("burst", []).append(burst_ms)
            figures.setdefault("round trips", []).append(waits)
    print(f"{arguments.claims} lone claims and a burst of {arguments.burst}, per round (median):")
    for replicas, figures in results.items():
        label = "WAIT 1 " if replicas else "no WAIT"
        print(
            f"  {label}: claim p50 {statistics.median(figures['p50']):.3f} ms, "
            f"p99 {statistics.median(figures['p99']):.3f} ms; burst "
            f"{statistics.median(figures['burst']):.1f} ms"
            + (
                f" in {statistics.median(figures['round trips']):.0f} round trips (one WAIT each)"
                if replicas
                else ""
            )
        )
    added = statistics.median(results[1]["p50"]) - statistics.median(results[0]["p50"])
    print(f"  WAIT adds {added:.3f} ms to the claim's p50")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--burst", type=int, default=200)
    arguments = parser.parse_args()
    with (
        LocalRedis() as primary,
        LocalRedis(options=["--replicaof", primary.host, str(primary.port)]),
    ):
        # The replica's first sync: a WAIT before it would wait its whole timeout.
        while not sentinel.LocalSentinelRedis.online_replicas(primary):
            time.sleep(0.1)
        uvloop.run(measure(primary.url, arguments))


if __name__ == "__main__":
    main()
