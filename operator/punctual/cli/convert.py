"""``punctual convert``: CronJob manifests in, ScheduledJobs that behave the same out.

Reads YAML from the files named, or from stdin for none or ``-`` (``kubectl get cronjob -o
yaml``, a ``List``; multi-document files), hands every document to ``punctual.api.cronjobs``
and prints the ScheduledJobs as multi-document YAML on stdout, every problem on stderr (one
line each, naming the input, the object and the field). Exit status: 0 when everything was
converted; 1 when something was left out (the rest is printed all the same); 2 for input that
cannot be read, or a bad option (then nothing is printed on stdout).
"""

import argparse
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from punctual.api import cronjobs
from punctual.scheduling.errors import InvalidSpecError

MAX_NODES_ADDED_BY_ALIASES = 100_000
"""How many nodes YAML aliases may add to a stream once expanded: the output repeats every alias
(it has none), so a few nested anchors could otherwise turn a page of input into gigabytes."""
STDIN = "-"
STDIN_NAME = "<stdin>"
PROG = "punctual convert"


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = commands.add_parser(
        "convert",
        help="print the ScheduledJobs that behave as the CronJobs given",
        description="Read CronJob manifests (batch/v1; YAML, several documents or a List, as "
        "`kubectl get cronjob -o yaml` prints) and print ScheduledJobs with the same behaviour, "
        "every default that differs from CronJob's written out. Fields that cannot be "
        "converted are named on stderr. Exit status: 0 all converted, 1 something left out "
        "(the rest is printed), 2 unreadable input.",
        epilog="Example: kubectl get cronjob -n reports -o yaml | punctual convert > "
        "scheduledjobs.yaml",
    )
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="YAML files of CronJobs ('-' or none: stdin)",
    )
    parser.add_argument(
        "--time-zone",
        default=cronjobs.DEFAULT_TIME_ZONE,
        metavar="ZONE",
        help="the timeZone written for CronJobs without one, which run in the local time of "
        f"kube-controller-manager (default: {cronjobs.DEFAULT_TIME_ZONE})",
    )
    parser.add_argument(
        "--timeout",
        default=cronjobs.DEFAULT_TIMEOUT,
        metavar="DURATION",
        help="the timeout written for CronJobs whose jobTemplate has no activeDeadlineSeconds "
        f"(which becomes the timeout otherwise); CronJob never stops a run (default: "
        f"{cronjobs.DEFAULT_TIMEOUT})",
    )
    parser.set_defaults(handler=run)


def run(arguments: argparse.Namespace) -> int:
    defaults = cronjobs.Defaults(time_zone=arguments.time_zone, timeout=arguments.timeout)
    try:
        defaults.check()
    except InvalidSpecError as error:
        option = "--timeout" if error.field == "spec.timeout" else "--time-zone"
        print(f"{PROG}: {option}: {error.problem}", file=sys.stderr)
        return 2
    try:
        inputs = [read(name) for name in arguments.files or [STDIN]]
    except UnreadableInputError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    converted: list[dict[str, Any]] = []
    left_out = False
    for source in inputs:
        for conversion in _conversions(source, defaults=defaults):
            if conversion.scheduled_job is not None:
                converted.append(conversion.scheduled_job)
            for problem in conversion.problems:
                left_out = True
                print(f"{PROG}: {source.name}: {conversion.subject}: {problem}", file=sys.stderr)
    if converted:
        sys.stdout.write(render(converted))
    return 1 if left_out else 0


@dataclass(frozen=True, slots=True)
class Source:
    """One input, read and parsed: its name in messages and its documents (objects)."""

    name: str
    documents: tuple[Mapping[str, Any], ...]


class UnreadableInputError(Exception):
    """An input that cannot be read or is not YAML objects; the message names it, on one line."""


def read(name: str) -> Source:
    """The documents of the file ``name`` ('-': stdin). Raises ``UnreadableInputError``."""
    shown = STDIN_NAME if name == STDIN else name
    try:
        text = sys.stdin.read() if name == STDIN else Path(name).read_text(encoding="utf-8")
    except OSError as error:
        raise UnreadableInputError(f"{shown}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise UnreadableInputError(f"{shown}: not UTF-8 text") from None
    return Source(name=shown, documents=parse(text, name=shown))


def parse(text: str, *, name: str) -> tuple[Mapping[str, Any], ...]:
    """The objects of a YAML stream; empty documents are skipped. Raises
    ``UnreadableInputError`` for text that is not YAML, or a document that is no object."""
    try:
        documents = _load_all(text, name=name)
    except yaml.YAMLError as error:
        raise UnreadableInputError(f"{name}: not YAML: {_yaml_problem(error)}") from None
    except RecursionError:
        raise UnreadableInputError(f"{name}: nested too deeply to be a manifest") from None
    objects = []
    for number, document in enumerate(documents, start=1):
        if document is None:
            continue
        if not isinstance(document, Mapping):
            raise UnreadableInputError(
                f"{name}: document {number} is not a Kubernetes object (a mapping)"
            )
        objects.append(document)
    return tuple(objects)


def _load_all(text: str, *, name: str) -> list[Any]:
    """Every document of the stream, refused before construction when aliases expand it past
    ``MAX_NODES_ADDED_BY_ALIASES``."""
    loader = _Loader(text)
    try:
        nodes: list[yaml.Node] = []
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                nodes.append(node)
        added = expanded_size(nodes) - distinct_size(nodes)
        if added > MAX_NODES_ADDED_BY_ALIASES:
            raise UnreadableInputError(
                f"{name}: its aliases expand it by {added:,} nodes, more than the "
                f"{MAX_NODES_ADDED_BY_ALIASES:,} allowed"
            )
        return [loader.construct_document(node) for node in nodes]
    finally:
        loader.dispose()


def expanded_size(nodes: Sequence[yaml.Node]) -> int:
    """The nodes of the documents with every alias written out, counted without expanding."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is None:
            known = sizes[id(node)] = 1 + sum(size(child) for child in _children(node))
        return known

    return sum(size(node) for node in nodes)


def distinct_size(nodes: Sequence[yaml.Node]) -> int:
    """The nodes of the documents as written, each anchor counted once."""
    seen: set[int] = set()
    pending = list(nodes)
    while pending:
        node = pending.pop()
        if id(node) not in seen:
            seen.add(id(node))
            pending.extend(_children(node))
    return len(seen)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _conversions(source: Source, *, defaults: cronjobs.Defaults) -> Iterable[cronjobs.Conversion]:
    for number, document in enumerate(source.documents, start=1):
        location = f"document {number}" if len(source.documents) > 1 else ""
        yield from cronjobs.convert_document(document, defaults=defaults, location=location)


def _yaml_problem(error: yaml.YAMLError) -> str:
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        problem = error.problem or error.context or "malformed"
        return f"{problem} (line {error.problem_mark.line + 1})"
    return " ".join(str(error).split())


def render(manifests: Sequence[Mapping[str, Any]]) -> str:
    """Multi-document YAML: keys in the order written, scripts as literal blocks, no aliases."""
    return yaml.dump_all(
        manifests,
        Dumper=_Dumper,
        explicit_start=True,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=100,
    )


class _Loader(yaml.SafeLoader):
    """A SafeLoader that leaves timestamps as strings, as kubectl reads manifests."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class _Dumper(yaml.SafeDumper):
    """A SafeDumper that repeats shared values instead of writing ``&id001`` anchors, and writes
    strings of several lines (scripts) as literal blocks."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _represent_str)
