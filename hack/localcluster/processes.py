"""Child processes of the launcher and how they end.

Each child runs in its own session (so its own process group: Ctrl-C in the terminal reaches only
the launcher, which then stops the children in order), writes its output to ``<run dir>/<name>.log``
and is stopped with SIGTERM to the whole group, then SIGKILL after a grace period. Every live child
is registered so that ``atexit`` and SIGTERM/SIGHUP stop it too, and, where the platform allows,
the kernel kills it should the launcher itself be killed outright.
"""

import atexit
import contextlib
import ctypes
import functools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Self

LOG_TAIL_LINES = 40
DEFAULT_GRACE_SECONDS = 10.0


class ComponentError(RuntimeError):
    """A component exited or did not become ready; the message carries the tail of its log."""

    def __init__(self, process: "ManagedProcess", reason: str) -> None:
        self.process = process
        tail = process.log_tail()
        super().__init__(
            f"{process.name} {reason}\n"
            f"--- last {LOG_TAIL_LINES} lines of {process.log_path} ---\n"
            f"{tail or '(empty log)'}\n"
            f"--- end of {process.name} log ---"
        )


@dataclass
class ManagedProcess:
    name: str
    argv: Sequence[str]
    popen: "subprocess.Popen[bytes]"
    log_path: Path
    started_at: float = field(default_factory=time.monotonic)
    stopped: bool = False

    @property
    def pid(self) -> int:
        return self.popen.pid

    def running(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace: float = DEFAULT_GRACE_SECONDS) -> None:
        stop_processes([self], grace)


def _stat_fields(pid: int | str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name: state, ppid, pgrp, ..."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()


def alive(pids: Iterable[int]) -> list[int]:
    """Those of ``pids`` that still exist and are not zombies (for checks after a stop)."""
    return [pid for pid in pids if (fields := _stat_fields(pid)) and fields[0] != "Z"]


def group_members(group: int) -> list[int]:
    """The processes, zombies aside, in process group ``group``."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(entry.name)
            if fields and fields[0] != "Z" and int(fields[2]) == group:
                members.append(int(entry.name))
    return members


_live: dict[int, ManagedProcess] = {}
_live_lock = threading.Lock()


@functools.cache
def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    # The symbols of the running interpreter include libc's.
    prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    return prctl


def _pdeathsig_hook() -> Callable[[], None] | None:
    """A pre-exec hook asking the kernel to SIGKILL the child when the launcher dies.

    Linux ties this to the forking *thread*, so it is only used from the main thread, which lives
    as long as the process. The libc function is resolved here, not in the forked child.
    """
    prctl = _prctl()
    if prctl is None or threading.current_thread() is not threading.main_thread():
        return None
    pr_set_pdeathsig = 1

    def hook() -> None:
        prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)

    return hook


def start(
    name: str,
    argv: Sequence[str],
    run_dir: Path,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> ManagedProcess:
    """Starts ``argv`` in its own process group with stdout and stderr in ``run_dir/name.log``."""
    log_path = run_dir / f"{name}.log"
    with log_path.open("ab") as log:
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
            preexec_fn=_pdeathsig_hook(),  # noqa: PLW1509 - only prctl, resolved before the fork
        )
    process = ManagedProcess(name=name, argv=list(argv), popen=popen, log_path=log_path)
    with _live_lock:
        _live[popen.pid] = process
    return process


def wait_until(
    process: ManagedProcess,
    check: Callable[[], bool],
    until: str,
    timeout: float,
    interval: float = 0.25,
) -> None:
    """Polls ``check`` until it returns true (``until`` says what that means, for messages);
    fails at once if the process exits, and after ``timeout`` seconds otherwise.

    Exceptions from ``check`` count as "not yet" (a port that does not answer yet), and the last
    one is reported should the wait time out.
    """
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        if not process.running():
            raise ComponentError(
                process, f"exited with code {process.popen.returncode} while waiting until {until}"
            )
        try:
            if check():
                return
        except Exception as error:  # any failure of a probe means "not ready yet"
            last_error = error
        if time.monotonic() >= deadline:
            detail = f" (last probe error: {last_error!r})" if last_error else ""
            raise ComponentError(
                process, f"timed out after {timeout:.0f}s waiting until {until}{detail}"
            )
        time.sleep(interval)


def _signal_group(process: ManagedProcess, signum: int) -> None:
    # The group id is the leader's pid (start_new_session). Signalling the group after the
    # leader has exited still reaches any straggling children; ESRCH means nothing is left.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


def _wait_for_group_to_die(group: int, timeout: float = 5.0) -> None:
    # SIGKILL is delivered asynchronously: a grandchild can still be on its way out when the
    # signal call returns, and "nothing left behind" must hold when stop() returns.
    deadline = time.monotonic() + timeout
    while group_members(group) and time.monotonic() < deadline:
        time.sleep(0.02)


def stop_processes(
    processes: Iterable[ManagedProcess], grace: float = DEFAULT_GRACE_SECONDS
) -> None:
    """SIGTERM to every group at once, then SIGKILL to whatever is left after ``grace`` seconds."""
    # A stopped process is never signalled again: its pid may belong to someone else by now.
    targets = [process for process in processes if not process.stopped]
    for process in targets:
        _signal_group(process, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for process in targets:
        try:
            process.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.popen.wait()
        _signal_group(process, signal.SIGKILL)
        _wait_for_group_to_die(process.pid)
        process.stopped = True
        with _live_lock:
            _live.pop(process.pid, None)


def stop_all_live(grace: float = DEFAULT_GRACE_SECONDS) -> None:
    """Stops every child this process started and has not stopped yet, newest first."""
    with _live_lock:
        remaining = sorted(_live.values(), key=lambda process: process.started_at, reverse=True)
    stop_processes(remaining, grace)


atexit.register(stop_all_live)


def _interrupt_on_signal(_signum: int, _frame: FrameType | None) -> None:
    # Treated like Ctrl-C: every `with` block unwinds and stops its processes in order, and
    # pytest ends the session and tears its fixtures down (a SystemExit raised inside a test
    # would only fail that test). atexit catches whatever is left.
    raise KeyboardInterrupt


def install_signal_handlers() -> None:
    """Makes SIGTERM and SIGHUP act like Ctrl-C, unless someone else already handles them.

    Python's default for both is to die without running ``finally`` blocks or ``atexit``, which
    would leave the children running. Only possible from the main thread.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _interrupt_on_signal)


def stop_on_first_interrupt() -> None:
    """For a program that runs until stopped (``make run``): Ctrl-C, SIGTERM or SIGHUP stop it
    once. The first raises KeyboardInterrupt, so every ``with`` block stops what it started, in
    order; later ones are ignored from then on. A second Ctrl-C arriving during that stop (a
    terminal sends one to every process of its group, and ``uv run`` passes its own on) would
    interrupt it wherever it stands, a child's wait left holding its lock, and the exit would
    then wait on it for ever. The stop is bounded (``DEFAULT_GRACE_SECONDS`` per group, then
    SIGKILL). Only possible from the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in _STOP_SIGNALS:
        signal.signal(signum, _interrupt_once)


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _interrupt_once(_signum: int, _frame: FrameType | None) -> None:
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    raise KeyboardInterrupt


class Service:
    """A local service used in ``with``: started on entry, stopped on exit, and stopped again
    when its start fails half-way (whatever it started so far is not left behind)."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
