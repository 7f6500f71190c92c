"""CPU per call of the HTTP target's client, against aiohttp's request path, side by side.

One local receiver (``bench/scale_receiver.py``, a process of its own, answering 204), keep-alive
connections, calls one after another on uvloop. Each round times ``--calls`` calls of each
client with ``time.process_time`` (this process's CPU only, not the receiver's); the rounds
alternate, so that what else runs on the machine weighs on both alike. Printed: microseconds of
CPU per call, the median of the rounds, and the ratio.

Then what keeping connections per namespace costs (no connection carries two namespaces'
requests): 10,000 jobs calling the same receiver, spread over 1, 100 and 1,000 namespaces, in
bursts of 1,000 slots due at once; CPU per call and the connections opened, beside one namespace.

Usage: python bench/http_client.py [--calls 5000] [--rounds 3] [--jobs 10000]
"""

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import aiohttp
import uvloop
import yarl

from localcluster import ports
from punctual.contracts import records
from punctual.scheduling import slots
from punctual.scheduling.timeline import parse_rfc3339
from punctual.targets.http import connections as http_connections
from punctual.targets.http import executor as http_executor

RECEIVER = Path(__file__).with_name("scale_receiver.py")
JOB = slots.JobRef(namespace="bench", name="http", uid="uid-1")
SLOT = parse_rfc3339("2026-01-01T00:00:00Z")


def context(job: slots.JobRef = JOB) -> records.RunContext:
    return records.RunContext(
        job=job,
        slot=SLOT,
        slot_id=slots.slot_id(job, SLOT),
        scheduled_time=SLOT,
        timeout=timedelta(minutes=1),
    )


async def punctual_calls(url: str, calls: int) -> float:
    async with http_connections.HttpConnections() as connections:
        executor = http_executor.HttpExecutor(
            http_executor.HttpRequest(url=url), connections=connections
        )
        run = context()
        await executor(run)  # the connection is open before the clock starts
        started = time.process_time()
        for _ in range(calls):
            executor.prepare(run)  # as the loop does, before each slot
            await executor(run)
        return time.process_time() - started


async def aiohttp_calls(url: str, calls: int) -> float:
    run = context()
    headers = {
        http_executor.IDEMPOTENCY_KEY: run.slot_id,
        http_executor.SCHEDULED_TIME: "2026-01-01T00:00:00Z",
    }
    target = yarl.URL(url)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as session:
        async with session.post(target, headers=headers) as response:
            await response.read()
        started = time.process_time()
        for _ in range(calls):
            async with session.request(
                "POST",
                target,
                headers=headers,
                timeout=timeout,
                allow_redirects=False,
                raise_for_status=False,
            ) as response:
                await response.read()
        return time.process_time() - started


BURST = 1000
"""Slots due at the same instant, as at the top of a minute."""
NAMESPACES = (1, 100, 1000)


async def tenant_calls(url: str, jobs: int, namespaces: int) -> tuple[float, int]:
    """CPU per call over ``jobs`` calls, one per job, in bursts; connections opened."""
    opened = 0
    async with http_connections.HttpConnections() as connections:
        request = http_executor.HttpRequest(url=url)
        executor = http_executor.HttpExecutor(request, connections=connections)
        runs = [
            context(slots.JobRef(namespace=f"ns-{n % namespaces}", name=f"j{n}", uid=f"u{n}"))
            for n in range(jobs)
        ]
        started = time.process_time()
        for first in range(0, jobs, BURST):
            burst = runs[first : first + BURST]
            await asyncio.gather(*(executor(run) for run in burst))
            opened = max(opened, connections.open_connections)
        return (time.process_time() - started) / jobs, opened


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=10_000)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        ready = Path(scratch) / "ready"
        port = ports.free_port()
        receiver = subprocess.Popen(
            [sys.executable, str(RECEIVER), "--port", str(port), "--ready-file", str(ready)]
        )
        try:
            while not ready.exists():
                time.sleep(0.05)
            url = f"http://127.0.0.1:{port}/run"
            clients: dict[str, Callable[[str, int], Awaitable[float]]] = {
                "punctual (http_connections)": punctual_calls,
                "aiohttp": aiohttp_calls,
            }
            seconds: dict[str, list[float]] = {name: [] for name in clients}
            for _ in range(arguments.rounds):
                for name, client in clients.items():
                    seconds[name].append(uvloop.run(client(url, arguments.calls)))
            tenancy: dict[int, list[tuple[float, int]]] = {n: [] for n in NAMESPACES}
            for _ in range(arguments.rounds):
                for namespaces in NAMESPACES:
                    measured = uvloop.run(tenant_calls(url, arguments.jobs, namespaces))
                    tenancy[namespaces].append(measured)
        finally:
            receiver.terminate()
            receiver.wait()
    micros = {
        name: statistics.median(values) / arguments.calls * 1e6 for name, values in seconds.items()
    }
    for name, value in micros.items():
        print(f"{name:30} {value:8.1f} µs of CPU per call")
    ratio = micros["aiohttp"] / micros["punctual (http_connections)"]
    print(
        f"aiohttp / punctual: {ratio:.1f}×  ({arguments.calls} calls × {arguments.rounds} rounds)"
    )
    alone = statistics.median(cpu for cpu, _ in tenancy[1])
    print(f"{arguments.jobs} jobs, bursts of {BURST}, connections kept per namespace:")
    for namespaces, measured in tenancy.items():
        cpu = statistics.median(cpu for cpu, _ in measured)
        opened = max(count for _, count in measured)
        print(
            f"  {namespaces:5} namespace(s): {cpu * 1e6:6.1f} µs of CPU per call "
            f"({cpu / alone:.2f}× one namespace's), {opened} connections open at most"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
