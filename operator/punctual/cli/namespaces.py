"""``-n``/``--namespace`` of the commands that act on one ScheduledJob: when it is absent, the
namespace kubectl would act in (the kubeconfig's current context's, or the pod's own)."""

import argparse

from punctual.kube import client


def add_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-n",
        "--namespace",
        metavar="NAMESPACE",
        help="the job's namespace (default: the current context's, as for kubectl)",
    )


def chosen(arguments: argparse.Namespace) -> str:
    """The namespace given with ``-n``, else kubectl's; raises
    ``client.UnreadableKubeconfigError``."""
    given: str | None = arguments.namespace
    return given or client.current_namespace()
