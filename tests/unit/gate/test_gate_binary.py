"""The gate of warm start (``hack/gate``), built as it ships (static, ``hack/gate/build.sh``,
cached) and run for real: it releases at the absolute instant and never before, at once when the
instant is past, and then becomes the command (same PID, environment and arguments, a bare name
looked up in PATH); it installs a copy of itself, does nothing on ``noop``, and refuses a bad
command line naming the argument. Its pure parts (parsing, the sleep loop under a fake clock that
steps) are the Go tests beside it, run here too."""

import json
import os
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

GATE_SOURCE = Path(__file__).resolve().parents[3] / "hack" / "gate"
BUILD_TIMEOUT = 300.0
"""A cold build of the gate: a few seconds, minutes when Go's build cache is cold too."""
RUN_TIMEOUT = 30.0
AHEAD_MS = 800
"""How far ahead a test's release instant is: long enough to start a process, short to wait."""
RELEASE_KEYS = ["punctualGate", "releaseAtMs", "nodeClockMs", "lateMs"]
PT_INTERP = 3
"""The ELF program header that names a dynamic loader: a static binary has none."""


@pytest.fixture(scope="session")
def gate() -> Path:
    built = subprocess.run(
        [str(GATE_SOURCE / "build.sh")],
        check=True, stdout=subprocess.PIPE, text=True, timeout=BUILD_TIMEOUT,
    )  # fmt: skip
    return Path(built.stdout.strip().splitlines()[-1])


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def run(
    gate: Path, *args: str, env: dict[str, str] | None = None
) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(
        [str(gate), *args], capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT,
        check=False,
    )  # fmt: skip


def reporter(*fields: str) -> list[str]:
    """A Python command that prints, as one JSON line after the gate's, when it started and what
    it was given."""
    code = (
        "import json, os, sys, time; print(json.dumps({'startedNs': time.time_ns(), "
        "'pid': os.getpid(), 'args': sys.argv[1:], 'env': os.environ.get('GATE_TEST')}))"
    )
    return ["-c", code, *fields]


def lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines()]


def test_the_gates_own_go_tests_pass() -> None:
    result = subprocess.run(
        ["go", "test", "./..."], cwd=GATE_SOURCE, capture_output=True, text=True,
        timeout=BUILD_TIMEOUT, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_it_is_built_static(gate: Path) -> None:
    # ELF64, little-endian: the program headers' offset, entry size and count in the header.
    image = gate.read_bytes()
    assert image[:4] == b"\x7fELF"
    (program_headers,) = struct.unpack_from("<Q", image, 0x20)
    entry_size, count = struct.unpack_from("<HH", image, 0x36)
    kinds = [
        struct.unpack_from("<I", image, program_headers + index * entry_size)[0]
        for index in range(count)
    ]
    assert PT_INTERP not in kinds


class TestTheRelease:
    def test_wait_returns_at_the_absolute_instant_and_not_before(self, gate: Path) -> None:
        at = now_ms() + AHEAD_MS

        result = run(gate, "wait", "--at", str(at))

        assert now_ms() >= at
        assert result.returncode == 0, result.stderr
        [line] = lines(result.stdout)
        assert line["releaseAtMs"] == at
        assert line["nodeClockMs"] >= at

    def test_the_command_starts_at_the_instant_and_not_before(self, gate: Path) -> None:
        at = now_ms() + AHEAD_MS

        result = run(gate, "--at", str(at), "--", sys.executable, *reporter())

        assert result.returncode == 0, result.stderr
        released, started = lines(result.stdout)
        assert started["startedNs"] >= at * 1_000_000
        assert 0 <= released["lateMs"] < AHEAD_MS

    def test_an_instant_already_past_releases_at_once_and_says_how_late(self, gate: Path) -> None:
        an_hour_ago = now_ms() - 3_600_000
        began = time.monotonic()

        result = run(gate, "wait", "--at", str(an_hour_ago))

        assert time.monotonic() - began < 1
        assert result.returncode == 0, result.stderr
        [line] = lines(result.stdout)
        assert line["lateMs"] >= 3_600_000

    def test_the_line_is_one_json_object_with_the_documented_fields(self, gate: Path) -> None:
        at = now_ms() - 5

        result = run(gate, "wait", "--at", str(at))

        [text] = result.stdout.splitlines()
        line = json.loads(text)
        assert list(line) == RELEASE_KEYS
        assert line["punctualGate"] == "released"
        assert all(type(line[key]) is int for key in RELEASE_KEYS[1:])
        assert line["releaseAtMs"] == at
        assert line["lateMs"] == line["nodeClockMs"] - line["releaseAtMs"]

    def test_sigterm_before_the_release_ends_it_at_once(self, gate: Path) -> None:
        with subprocess.Popen(
            [str(gate), "wait", "--at", str(now_ms() + 3_600_000)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        ) as waiting:  # fmt: skip
            waiting.send_signal(signal.SIGTERM)
            output, _ = waiting.communicate(timeout=RUN_TIMEOUT)

        # Its own handler's status once it is waiting (what makes it stop as a container's PID 1),
        # the runtime's default before: the signal early in its start.
        assert waiting.returncode in {128 + signal.SIGTERM, -signal.SIGTERM}
        assert output == b""


class TestTheExec:
    def test_the_command_keeps_the_pid_the_environment_and_its_arguments(self, gate: Path) -> None:
        arguments = ["a b", "--at", "--", ""]
        with subprocess.Popen(
            [str(gate), "--at", str(now_ms() - 1), "--", sys.executable, *reporter(*arguments)],
            stdout=subprocess.PIPE, text=True, env={**os.environ, "GATE_TEST": "kept"},
        ) as gated:  # fmt: skip
            output, _ = gated.communicate(timeout=RUN_TIMEOUT)

        assert gated.returncode == 0
        released, started = lines(output)
        assert released["punctualGate"] == "released"
        assert started["pid"] == gated.pid
        assert started["args"] == arguments
        assert started["env"] == "kept"

    def test_a_bare_name_is_looked_up_in_path(self, gate: Path, tmp_path: Path) -> None:
        (tmp_path / "reporter").symlink_to(sys.executable)

        result = run(
            gate, "--at", str(now_ms() - 1), "--", "reporter", *reporter("found"),
            env={"PATH": f"/nonexistent:{tmp_path}", "GATE_TEST": "in-path"},
        )  # fmt: skip

        assert result.returncode == 0, result.stderr
        _, started = lines(result.stdout)
        assert started["args"] == ["found"]
        assert started["env"] == "in-path"

    def test_a_command_not_in_path_fails_at_once_not_at_the_release(
        self, gate: Path, tmp_path: Path
    ) -> None:
        began = time.monotonic()

        result = run(
            gate, "--at", str(now_ms() + 3_600_000), "--", "no-such-program",
            env={"PATH": str(tmp_path)},
        )  # fmt: skip

        assert time.monotonic() - began < RUN_TIMEOUT
        assert result.returncode == 127
        assert result.stderr.startswith("gate: no-such-program: ")
        assert result.stdout == ""


class TestInstallAndNoop:
    def test_install_copies_the_gate_read_only_and_executable(
        self, gate: Path, tmp_path: Path
    ) -> None:
        destination = tmp_path / "gate"

        result = run(gate, "install", str(destination))

        assert result.returncode == 0, result.stderr
        assert destination.stat().st_mode & 0o7777 == 0o555
        assert destination.read_bytes() == gate.read_bytes()
        assert run(destination, "noop").returncode == 0
        assert sorted(path.name for path in tmp_path.iterdir()) == ["gate"]

    def test_install_again_replaces_the_copy_an_earlier_attempt_left(
        self, gate: Path, tmp_path: Path
    ) -> None:
        destination = tmp_path / "gate"
        destination.write_bytes(b"left by an init container that was restarted")
        destination.chmod(0o555)

        result = run(gate, "install", str(destination))

        assert result.returncode == 0, result.stderr
        assert destination.read_bytes() == gate.read_bytes()

    def test_noop_exits_at_once_and_says_nothing(self, gate: Path) -> None:
        result = run(gate, "noop")

        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        ((), "command"),
        (("sleep", "30"), '"sleep"'),
        (("install",), "install DEST"),
        (("noop", "now"), '"now"'),
        (("wait", "--at", "30s"), "--at"),
        (("wait", "--at"), "--at"),
        (("--at", "1796130000000", "python3"), "--"),
        (("--at", "1796130000000", "--"), "COMMAND"),
    ],
    ids=[
        "nothing", "an-unknown-command", "install-without-destination", "noop-with-more",
        "a-duration-for-an-instant", "no-instant", "no-separator", "no-command",
    ],
)  # fmt: skip
def test_a_bad_command_line_exits_2_naming_the_argument(
    gate: Path, args: Sequence[str], argument: str
) -> None:
    result = run(gate, *args)

    assert result.returncode == 2
    assert result.stderr.startswith(f"gate: {argument}: ")
    assert result.stdout == ""
