"""``punctual run``: the operator, one replica of it (``punctual.replica``) run by kopf.

This sets up logging, the garbage collector and the event loop on the options ``run_flags``
declares and reads, and hands kopf the replica's handlers; the replica builds and tears down
everything it runs on."""

import argparse
import asyncio
import gc
import logging
import pathlib
import ssl

import kopf
import uvloop

from punctual import replica
from punctual.cli import log_format, run_flags
from punctual.controller import handlers
from punctual.kube import events, membership
from punctual.replica import memory
from punctual.replica import settings as replica_settings
from punctual.scheduling.errors import InvalidSpecError


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = commands.add_parser(
        "run",
        help="run the operator",
        description="Run one replica of the operator. Each ScheduledJob in its scope is "
        "scheduled by its owner and its backup among the live replicas (or by every replica, "
        "--sharding off); slot locks make each slot run exactly once.",
    )
    run_flags.add(parser)
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    log_format.configure(format=arguments.log_format, level=arguments.log_level)
    logging.getLogger("kopf.objects").addFilter(handlers.RefusalsAreNotErrors())
    try:
        settings = run_flags.settings(arguments)
    except (InvalidSpecError, ValueError) as error:
        print(f"punctual run: {error}")
        return 2
    # What is loaded by now (kopf, the generated Kubernetes client: ~100k objects) lives as long
    # as the process: take it out of the garbage collector's sight (and again once the jobs
    # are armed, in ``_operate``). A full collection would otherwise walk all of it, stalling
    # the event loop, and every slot due meanwhile.
    memory.settle()
    gc.set_threshold(*GC_THRESHOLDS)
    loop_factory = (
        uvloop.new_event_loop if arguments.event_loop == run_flags.EventLoop.UVLOOP else None
    )
    try:
        with log_format.written_aside(), asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(_operate(settings))
    except membership.ForbiddenError as error:
        print(f"punctual run: {error}")
        return 1
    return 0


GC_THRESHOLDS = (700, 10, 1000)
"""The collector's thresholds: Python's own for the young generations; a full collection only
after 1,000 collections of the middle one (Python's: 10). At 10,000 jobs the objects that live
beyond two young collections (each slot's wait, a job's pending status, the newest body of each
object) reach the oldest generation at thousands a second: with Python's threshold a full
collection walked the whole heap every few seconds, each taking long enough that the slots due
meanwhile were late (docs/benchmarks.md). Each full collection finds few objects in cycles:
keeping them longer costs little memory."""


async def _operate(settings: replica_settings.ReplicaSettings) -> None:
    async with replica.Replica(settings, settle_memory=memory.settle) as operator:
        await operator.start()
        # Every job is armed: its loop, plan, executor and cached body live as long as it does
        # (~35 objects per job, a third of the heap at 10,000 jobs): out of a full collection's
        # walk too.
        memory.settle()
        kopf_registry = kopf.OperatorRegistry()
        handlers.register(kopf_registry, operator.reconciler, operator, reviews=operator.admission)
        kopf_settings = kopf.OperatorSettings()
        # The settings refuse a webhook port without a certificate.
        if settings.webhook_port and settings.webhook_cert_dir is not None:
            kopf_settings.admission.server = _webhook_server(
                addr=settings.bind_address,
                port=settings.webhook_port,
                cert_dir=settings.webhook_cert_dir,
                client_ca=settings.webhook_client_ca,
            )
        kopf_settings.posting.level = logging.WARNING  # our Events are explicit, not log lines
        # What kopf posts (the reconciler's InvalidSpec and the like) is from us too.
        kopf_settings.posting.reporting_component = events.REPORTING_CONTROLLER
        kopf_settings.posting.reporting_instance = settings.replica_id
        kopf_settings.posting.event_name_prefix = f"{events.REPORTING_CONTROLLER}-"
        # on.event handlers only: kopf's deep copy of every body to diff it is for nothing.
        kopf_settings.persistence.diffbase_storage = handlers.NoDiffBase()
        # The initial listing in pages: 10,000 objects are not one response held at once.
        kopf_settings.watching.chunk_size = 500
        # At a stop, the events still queued only tell of objects the stop lets go (a replica
        # that starts lists them all again): kopf's 2 s for them, of a stop that has 5 s, is
        # more than their worth.
        kopf_settings.queueing.exit_timeout = 0.5
        # Leaving the block stops the replica again (a safety net: kopf's cleanup handler has
        # stopped it on a normal stop), then closes its wiring.
        await kopf.operator(
            registry=kopf_registry,
            settings=kopf_settings,
            standalone=True,
            clusterwide=not settings.namespaces,
            namespaces=list(settings.namespaces),
            liveness_endpoint=settings.liveness_endpoint,
        )


def _webhook_server(
    *, addr: str, port: int, cert_dir: pathlib.Path, client_ca: pathlib.Path | None
) -> handlers.ReviewServer:
    """kopf's HTTPS server for the admission webhook, on the certificate in ``cert_dir``; with
    ``client_ca``, a client without a certificate it signed is refused at the TLS handshake.

    kopf's own server does all the webhook needs: a certificate from files, re-read when they
    change (a renewed Secret), client certificates verified, and a bounded body (aiohttp's
    1 MiB). kopf does not manage the webhook configuration (``settings.admission.managed``
    stays unset): that is the chart's.
    """
    return handlers.ReviewServer(
        addr=addr,
        port=port,
        certfile=cert_dir / "tls.crt",
        pkeyfile=cert_dir / "tls.key",
        verify_cafile=client_ca,
        verify_mode=ssl.CERT_REQUIRED if client_ca is not None else None,
    )
