"""The operator's allowlist of HTTP target hosts (``punctual run --http-allowed-hosts``).

Whoever may create a ScheduledJob may otherwise make the operator call any address it can
reach (the cloud metadata endpoint, the API server, a database's HTTP port) with the operator's
network position: server-side request forgery. An allowlist bounds that to the hosts the
operator's owner chose. Patterns, one per entry, case-insensitive:

- ``report-svc.reports.svc``: exactly this host name;
- ``*.svc.cluster.local``: any name with one or more labels before this suffix (not the suffix
  itself);
- ``10.0.0.0/8``, ``fd00::/8``, ``127.0.0.1``: an IP address literal in this network (host
  names are never resolved for the check: a name matches name patterns only);
- any of the above with ``:PORT`` (``[::1]:8080`` for IPv6) to allow that port only;
  otherwise any port;
- ``*``: any host (the same as no allowlist).

The check is on the URL as written in the spec (redirects are never followed, so the URL is
the only host a run talks to). It does not stop a name that the allowlist admits from
resolving to an address it would not: DNS belongs to the cluster's owner.
"""

import ipaddress
import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass

_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_NAME = re.compile(rf"\A{_LABEL}(\.{_LABEL})*\Z")
_WITH_PORT = re.compile(r"\A(?P<host>\[[^\]]+\]|[^:\[\]]+)(:(?P<port>[0-9]{1,5}))?\Z")
DEFAULT_PORTS = {"http": 80, "https": 443}

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class HostPattern:
    text: str
    name: str | None = None
    """An exact host name, or the suffix after ``*.`` when ``wildcard``."""
    wildcard: bool = False
    network: Network | None = None
    port: int | None = None
    anything: bool = False

    @classmethod
    def parse(cls, text: str) -> "HostPattern":
        """Raises ``ValueError`` naming ``text`` when it is none of the documented forms."""
        pattern = text.strip().lower()
        if pattern == "*":
            return cls(text, anything=True)
        found = _WITH_PORT.fullmatch(pattern)
        if found is None:
            # A CIDR network of IPv6 has colons and no brackets: try it whole.
            return cls(text, network=_network(pattern, text))
        host, port_text = found["host"], found["port"]
        port = None
        if port_text is not None:
            port = int(port_text)
            if not 1 <= port <= 65535:
                raise ValueError(f"--http-allowed-hosts: {text!r}: port out of range")
        if host.startswith("["):
            return cls(text, network=_network(host[1:-1], text), port=port)
        if host.startswith("*."):
            suffix = host[2:]
            if not _NAME.fullmatch(suffix):
                raise ValueError(f"--http-allowed-hosts: {text!r}: not a host name after '*.'")
            return cls(text, name=suffix, wildcard=True, port=port)
        try:
            return cls(text, network=_network(host, text), port=port)
        except ValueError:
            pass
        if not _NAME.fullmatch(host):
            raise ValueError(
                f"--http-allowed-hosts: {text!r} is not a host name, '*.' suffix, IP address "
                "or network (each optionally with :PORT)"
            )
        return cls(text, name=host, port=port)

    def admits(self, host: str, port: int) -> bool:
        if self.anything:
            return True
        if self.port is not None and port != self.port:
            return False
        if self.network is not None:
            try:
                address = ipaddress.ip_address(host)
            except ValueError:
                return False
            return address.version == self.network.version and address in self.network
        assert self.name is not None
        if self.wildcard:
            return host.endswith("." + self.name)
        return host == self.name


def _network(text: str, pattern: str) -> Network:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise ValueError(
            f"--http-allowed-hosts: {pattern!r}: not an IP address or network"
        ) from None


@dataclass(frozen=True, slots=True)
class HostAllowlist:
    patterns: tuple[HostPattern, ...]

    @classmethod
    def parse(cls, entries: Iterable[str]) -> "HostAllowlist":
        """From ``--http-allowed-hosts`` values; each may hold several patterns, comma-separated.

        Raises ``ValueError`` for an empty list or a pattern of none of the documented forms.
        """
        patterns = tuple(
            HostPattern.parse(part)
            for entry in entries
            for part in entry.split(",")
            if part.strip()
        )
        if not patterns:
            raise ValueError("--http-allowed-hosts: no pattern given")
        return cls(patterns)

    def admits(self, url: str) -> bool:
        """Whether ``url`` (an absolute http:// or https:// URL) names an allowed host and port."""
        parts = urllib.parse.urlsplit(url)
        host = (parts.hostname or "").lower().rstrip(".")
        try:
            port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower(), 0)
        except ValueError:
            return False
        if not host:
            return False
        return any(pattern.admits(host, port) for pattern in self.patterns)

    def __str__(self) -> str:
        return ", ".join(pattern.text for pattern in self.patterns)
