"""``punctual run --log-format text|json --log-level LEVEL``: every logger's lines (kopf's too)
in one format, with the fields their calls passed; the Kubernetes client's response bodies
(Secrets among them) never, whatever the level."""

import io
import json
import logging
import threading
from collections.abc import Iterator

import kopf
import pytest

from punctual.cli import log_format, main


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {
        name: logging.getLogger(name).level for name in ("kubernetes_asyncio", "kopf.objects")
    }
    yield
    root.handlers[:], root.level = handlers, level
    for name, saved in levels.items():
        logging.getLogger(name).setLevel(saved)


def configured(format: log_format.LogFormat, level: str = "INFO") -> io.StringIO:
    stream = io.StringIO()
    log_format.configure(format=format, level=level, stream=stream)
    return stream


@pytest.mark.usefixtures("restore_logging")
class TestJsonLines:
    def test_carry_time_level_logger_message_and_the_fields_passed(self) -> None:
        stream = configured("json")

        logging.getLogger("punctual.runs").warning(
            "run finished", extra={"fields": {"namespace": "reports", "attempt": 2}}
        )

        line = json.loads(stream.getvalue())
        assert line | {"time": "…"} == {
            "time": "…",
            "level": "WARNING",
            "logger": "punctual.runs",
            "message": "run finished",
            "namespace": "reports",
            "attempt": 2,
        }
        assert line["time"].endswith("Z")

    def test_are_one_a_line_with_the_traceback_inside(self) -> None:
        stream = configured("json")

        try:
            raise ValueError("bad\nworse")
        except ValueError:
            logging.getLogger("punctual").exception("it failed")

        (line,) = stream.getvalue().splitlines()
        assert "ValueError: bad" in json.loads(line)["exception"]

    def test_of_kopf_name_the_object_and_drop_kopfs_internals(self) -> None:
        stream = configured("json")

        logging.getLogger("kopf.objects").error(
            "handler failed",
            extra={
                "k8s_ref": {"namespace": "reports", "name": "nightly", "uid": "u"},
                "k8s_skip": True,  # not an Event: a log line only
                "settings": kopf.OperatorSettings(),
            },
        )

        line = json.loads(stream.getvalue())
        assert (line["namespace"], line["name"]) == ("reports", "nightly")
        assert not {"k8s_ref", "k8s_skip", "settings"} & set(line)


@pytest.mark.usefixtures("restore_logging")
class TestTextLines:
    def test_end_with_the_fields_as_key_value(self) -> None:
        stream = configured("text")

        logging.getLogger("punctual.runs").info(
            "run finished", extra={"fields": {"name": "nightly", "detail": "HTTP 500 Error"}}
        )

        assert (
            stream.getvalue()
            .rstrip()
            .endswith('INFO punctual.runs: run finished name=nightly detail="HTTP 500 Error"')
        )


@pytest.mark.usefixtures("restore_logging")
class TestTheLevel:
    def test_drops_what_is_below_it(self) -> None:
        stream = configured("text", "WARNING")

        logging.getLogger("punctual").info("quiet")
        logging.getLogger("punctual").warning("loud")

        assert "quiet" not in stream.getvalue()
        assert "loud" in stream.getvalue()

    def test_debug_lets_the_operators_and_kopfs_debug_lines_through(self) -> None:
        stream = configured("json", "DEBUG")

        logging.getLogger("punctual").debug("detail")
        logging.getLogger("kopf.objects").debug("handler invoked")

        lines = [json.loads(line) for line in stream.getvalue().splitlines()]
        assert [(line["logger"], line["level"]) for line in lines] == [
            ("punctual", "DEBUG"),
            ("kopf.objects", "DEBUG"),
        ]

    def test_info_leaves_out_kopfs_line_per_handler_call(self) -> None:
        stream = configured("text", "INFO")

        logging.getLogger("kopf.objects").info("handler succeeded")

        assert stream.getvalue() == ""

    @pytest.mark.parametrize("format", log_format.LOG_FORMATS)
    def test_debug_never_logs_the_kubernetes_clients_response_bodies(
        self, format: log_format.LogFormat
    ) -> None:
        stream = configured(format, "DEBUG")

        # What kubernetes-asyncio logs for every response at DEBUG: a Secret's data among them.
        logging.getLogger("kubernetes_asyncio.client.rest").debug(
            "response body: %s", '{"kind":"Secret","data":{"token":"c2VjcmV0"}}'
        )

        assert "c2VjcmV0" not in stream.getvalue()


class TestTheOptions:
    @pytest.mark.parametrize(
        "argv",
        [
            ["run", "--log-format", "yaml"],
            ["run", "--log-level", "chatty"],
        ],
    )
    def test_refuse_what_is_not_a_format_or_a_level(
        self, argv: list[str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        with pytest.raises(SystemExit) as exit:
            main.main(argv)

        assert exit.value.code == 2
        assert "invalid choice" in capsys.readouterr().err


class StuckStderr(io.StringIO):
    """A stderr whose writes wait until it is unstuck (a full pipe, a disk waiting on its
    journal)."""

    def __init__(self) -> None:
        super().__init__()
        self.writing = threading.Event()
        self.unstuck = threading.Event()

    def write(self, text: str) -> int:
        self.writing.set()
        self.unstuck.wait(timeout=10)
        return super().write(text)


def messages(stream: io.StringIO) -> list[str]:
    return [line.split(": ", 1)[1] for line in stream.getvalue().splitlines()]


@pytest.mark.usefixtures("restore_logging")
class TestLinesWrittenAside:
    def test_are_logged_at_once_while_stderr_is_stuck_and_written_in_order_after(
        self,
    ) -> None:
        stream = StuckStderr()
        log_format.configure(format="text", level="INFO", stream=stream)
        logger = logging.getLogger("punctual.runs")

        with log_format.written_aside():
            logger.info("first")
            assert stream.writing.wait(timeout=10)
            logger.info("second")  # logged, not written: the writer waits on the first
            assert stream.getvalue() == ""
            stream.unstuck.set()

        assert messages(stream) == ["first", "second"]

    def test_keep_their_format_with_the_callers_values(self) -> None:
        stream = io.StringIO()
        log_format.configure(format="json", level="INFO", stream=stream)
        fields = {"namespace": "reports"}

        with log_format.written_aside():
            logging.getLogger("punctual.runs").info("run finished", extra={"fields": fields})
            fields["namespace"] = "changed after the call"

        line = json.loads(stream.getvalue())
        assert (line["message"], line["namespace"]) == ("run finished", "reports")

    def test_past_the_bound_are_dropped_and_counted_once_the_writer_catches_up(self) -> None:
        stream = StuckStderr()
        log_format.configure(format="text", level="INFO", stream=stream)
        logger = logging.getLogger("punctual.runs")

        with log_format.written_aside(most_waiting=2):
            logger.info("being written")
            assert stream.writing.wait(timeout=10)
            for index in range(5):
                logger.info("line %d", index)
            stream.unstuck.set()

        assert messages(stream) == [
            "being written",
            "line 0",
            "line 1",
            "3 log lines dropped: stderr was written slower than lines came",
        ]
        [handler] = logging.getLogger().handlers  # as configured again
        assert isinstance(handler, logging.StreamHandler)
        assert handler.stream is stream
