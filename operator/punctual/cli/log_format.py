"""How ``punctual run`` logs: text or JSON lines, at one level, kopf's own lines included.

A line's structured fields are what its call passed as ``extra={"fields": {...}}`` (as
``punctual.stores.logs`` does for every run; a dict of its own, as ``name`` and the like are
taken by the record), and any other ``extra``: JSON lines carry them as keys beside ``time``,
``level``, ``logger`` and ``message``; text lines end with them as ``key=value``. kopf's lines
about one object carry its namespace and name the same way.

Never logged, whatever the level: the Kubernetes client's debug lines, which hold whole response
bodies (a Secret's data among them).

``written_aside``: the lines are formatted where they are logged, and written by a thread of
their own. A write to stderr blocks whenever what reads it falls behind (a full pipe to the
container runtime; a file on a disk whose journal waits for another process's fsync, as etcd's
on the same disk does), and a line written on the event loop stalled every slot due meanwhile.
"""

import collections
import contextlib
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, Final, Literal, TextIO, get_args

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = get_args(LogFormat)
LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR")
FIELDS: Final = "fields"
"""The ``extra`` key of a line's structured fields."""

_STANDARD: Final = frozenset(
    logging.LogRecord("", logging.INFO, "", 0, "", None, None).__dict__
) | {"message", "asctime", "taskName"}
"""The attributes every record has: anything else on a record is a field its call passed."""
_KOPF_INTERNAL: Final = frozenset({"settings", "k8s_skip", "k8s_ref"})
"""What kopf's object loggers attach for themselves (``k8s_ref`` becomes namespace and name)."""
_CLIENT: Final = "kubernetes_asyncio"
"""Never below INFO: the client's debug lines are response bodies, Secrets' included."""
_KOPF_OBJECTS: Final = "kopf.objects"
"""Below WARNING only at DEBUG: kopf logs every handler call at INFO, a line per watch event,
noise at our scale."""


def configure(*, format: LogFormat, level: str, stream: TextIO | None = None) -> None:
    """Send every logger's lines (kopf's too) to ``stream`` (stderr), in ``format``, from
    ``level`` up; replaces whatever handlers the root logger had."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if format == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    threshold: int = logging.getLevelName(level)
    debug = threshold <= logging.DEBUG
    logging.getLogger(_CLIENT).setLevel(max(logging.INFO, threshold))
    logging.getLogger(_KOPF_OBJECTS).setLevel(
        threshold if debug else max(logging.WARNING, threshold)
    )


LINES_WAITING_AT_MOST: Final = 10_000
"""Lines formatted and not yet written at most (a few MB): past it, a line is dropped and
counted, and the writer says how many once it catches up; a stuck stderr never holds the
operator's memory without bound, nor its event loop."""
WRITES_EVERY: Final = 0.05
"""Seconds between the writer's writes: each takes every line waiting in one write. A thread
woken per line would take the interpreter lock from the event loop hundreds of times a second
(a run line each), each time making it wait its turn back."""
WRITTEN_ON_THE_WAY_OUT_WITHIN: Final = 5.0
"""Seconds the lines still waiting at exit are given to be written: a stuck stderr must not
keep the process from ending."""


@contextlib.contextmanager
def written_aside(*, most_waiting: int = LINES_WAITING_AT_MOST) -> Iterator[None]:
    """Within it, the root logger's stream handlers (``configure``'s) format each line where
    it is logged, and a thread writes them; the lines still waiting are written on the way
    out."""
    root = logging.getLogger()
    configured = root.handlers[:]
    aside = [
        _Aside(handler, most_waiting=most_waiting)
        if isinstance(handler, logging.StreamHandler)
        else handler
        for handler in configured
    ]
    ending = threading.Event()
    writing = [handler for handler in aside if isinstance(handler, _Aside)]
    writer = threading.Thread(target=_write, args=(writing, ending), daemon=True)
    root.handlers[:] = aside
    writer.start()
    try:
        yield
    finally:
        root.handlers[:] = configured
        ending.set()
        writer.join(timeout=WRITTEN_ON_THE_WAY_OUT_WITHIN)


class _Aside(logging.Handler):
    """A stream handler's lines, formatted as it would and left for the writer thread; dropped
    and counted when ``most_waiting`` wait already."""

    def __init__(self, handler: "logging.StreamHandler[TextIO]", *, most_waiting: int) -> None:
        super().__init__(handler.level)
        self.setFormatter(handler.formatter)
        self.stream = handler.stream
        self.lines: collections.deque[str] = collections.deque()
        self._most_waiting = most_waiting
        self.dropped = 0
        """Lines dropped so far (counted under the handler's lock, which ``handle`` holds)."""
        self.told = 0
        """Of those, the ones a line has said were dropped."""

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.lines) >= self._most_waiting:
            self.dropped += 1
            return
        try:
            self.lines.append(self.format(record) + "\n")
        except Exception:  # as logging's own handlers: a line that cannot be formatted
            self.handleError(record)

    def drops_line(self) -> str:
        """The line saying how many were dropped since the last such line, or nothing."""
        dropped = self.dropped
        if dropped == self.told:
            return ""
        record = logging.LogRecord(
            __name__,
            logging.WARNING,
            __file__,
            0,
            "%d log lines dropped: stderr was written slower than lines came",
            (dropped - self.told,),
            None,
        )
        self.told = dropped
        self.acquire()  # the formatter is shared with the threads that log
        try:
            return self.format(record) + "\n"
        finally:
            self.release()


def _write(handlers: list[_Aside], ending: threading.Event) -> None:
    """Every ``WRITES_EVERY``, each handler's lines waiting, in one write; once more at the
    end."""
    while True:
        ended = ending.wait(WRITES_EVERY)
        for handler in handlers:
            taken = [handler.lines.popleft() for _ in range(len(handler.lines))]
            taken.append(handler.drops_line())
            text = "".join(taken)
            if text:
                try:
                    handler.stream.write(text)
                    handler.stream.flush()
                except (OSError, ValueError):  # stderr closed: nothing is left to tell
                    return
        if ended:
            return


def fields(record: logging.LogRecord) -> dict[str, Any]:
    """The structured fields of ``record``: its call's ``extra``, and kopf's object."""
    passed = getattr(record, FIELDS, None)
    found = dict(passed) if isinstance(passed, Mapping) else {}
    for key, value in record.__dict__.items():
        if key not in _STANDARD and key not in _KOPF_INTERNAL and key != FIELDS:
            found.setdefault(key, value)
    reference = getattr(record, "k8s_ref", None)
    if isinstance(reference, Mapping):
        for key in ("namespace", "name"):
            if reference.get(key):
                found.setdefault(key, reference[key])
    return found


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (RFC 3339, UTC, milliseconds), level, logger, message,
    the record's fields, and the traceback (``exception``) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in fields(record).items():
            line.setdefault(key, value)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``<time> <level> <logger>: <message>``, then the record's fields as ``key=value``.

    A line per run, a thousand runs a second: the time's text is made once per second, not
    once per line (logging's handler formats one record at a time)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self._second = -1
        self._second_text = ""

    def formatTime(  # noqa: N802 (logging's name)
        self, record: logging.LogRecord, datefmt: str | None = None
    ) -> str:
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        if second != self._second:
            self._second_text = time.strftime(self.default_time_format, self.converter(second))
            self._second = second
        return f"{self._second_text},{int(record.msecs):03d}"  # logging's own '%s,%03d'

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        line = super().formatMessage(record)
        pairs = [f"{key}={_text_value(value)}" for key, value in fields(record).items()]
        return " ".join([line, *pairs])


def _timestamp(record: logging.LogRecord) -> str:
    at = datetime.fromtimestamp(record.created, tz=UTC)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


_BARE: Final = re.compile(r"[^\s\"'=]+")
"""A field's text shown as it is: no space, quote or equals sign (else JSON-quoted)."""


def _text_value(value: object) -> str:
    if isinstance(value, str):
        text = value
    elif type(value) is int:  # as JSON writes it, without the encoder (a bool is not one)
        text = str(value)
    else:
        text = json.dumps(value, default=str)
    if _BARE.fullmatch(text):
        return text
    return json.dumps(text, ensure_ascii=False)
