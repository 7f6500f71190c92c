"""Free TCP ports on 127.0.0.1, and whether something still listens on one.

Ports are picked below the kernel's ephemeral range where possible: a port found free there can be
taken by any outgoing connection (and the control plane makes many) before the component that
was promised it binds it. Below the range only another listener can take it.
"""

import random
import socket
import threading
from collections.abc import Iterable
from pathlib import Path

LOOPBACK = "127.0.0.1"
LOWEST_PORT = 15000
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")

_handed_out: set[int] = set()
_lock = threading.Lock()
_random = random.Random()


def _below_ephemeral_range() -> range:
    try:
        first_ephemeral = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return range(0)
    return range(LOWEST_PORT, first_ephemeral)


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            return False
        return True


def _kernel_pick() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port


def free_port() -> int:
    """A port nothing listens on right now, never the same one twice in this process.

    The remembered set keeps two components started close together from getting the same port
    before either has bound it.
    """
    candidates = _below_ephemeral_range()
    with _lock:
        for _ in range(100):
            port = _random.choice(candidates) if len(candidates) > 1000 else _kernel_pick()
            if port not in _handed_out and _bindable(port):
                _handed_out.add(port)
                return port
    raise RuntimeError(f"found no free port on {LOOPBACK} in 100 tries")


def is_listening(port: int, timeout: float = 0.5) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        try:
            probe.connect((LOOPBACK, port))
        except OSError:
            return False
        return True


def listening(ports: Iterable[int]) -> list[int]:
    """Those of ``ports`` that something still listens on."""
    return [port for port in ports if is_listening(port)]
