"""Entry point of the ``punctual`` console script."""

import argparse
import sys
from collections.abc import Sequence

from punctual.cli import backfill, convert, crd, next_slots, run, skip, trigger


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="punctual", description="Scheduled jobs for Kubernetes, on time."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    next_slots.register(commands)
    crd.register(commands)
    convert.register(commands)
    run.register(commands)
    trigger.register(commands)
    backfill.register(commands)
    skip.register(commands)
    arguments = parser.parse_args(argv)
    result: int = arguments.handler(arguments)
    return result


def entry_point() -> None:
    sys.exit(main())
