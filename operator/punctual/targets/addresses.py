"""The hosts and addresses targets may reach: the operator's allowlist (``punctual run
--http-allowed-hosts``) and the addresses refused by default.

Shared by the kinds that make the operator connect where a spec says: HTTP targets' URLs and
the queue target's brokers (``redis://`` and ``rediss://`` URLs read from a tenant's Secret),
each checked the same way. Whoever may create a ScheduledJob may otherwise make the operator
call any address it can reach (the cloud metadata endpoint, the API server, a database's HTTP
port) with the operator's network position: server-side request forgery. An
allowlist bounds that to the hosts the operator's owner chose.
Patterns, one per entry, case-insensitive:

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

Without any allowlist, and beside one, some addresses are refused by default (``AddressGuard``,
``DEFAULT_REFUSED``): link-local networks (``169.254.0.0/16``, where clouds serve instance
metadata and credentials, ``169.254.169.254`` and ECS's ``169.254.170.2``, and ``fe80::/10``),
the metadata endpoints outside them (``fd00:ec2::254`` of AWS, ``fd20:ce::254`` of GCP,
``100.100.100.200`` of Alibaba Cloud, ``192.0.0.192`` of Oracle, Azure's WireServer
``168.63.129.16``), and the API server at each address and port the operator knows it by (its
configured host, resolved, and the in-cluster ``kubernetes`` Service). The platform team adds
its own with ``--http-refused-addresses`` (addresses or networks, optionally with ``:PORT``):
the API server's other endpoints (the control plane nodes' addresses), which the operator does
not read, are the first to add. An IPv6 address carrying an IPv4 one (mapped, NAT64,
IPv4-compatible) is refused as that IPv4 address is. They are checked on the URL's IP literal
when the job is armed, and on every address a host name resolves to before each connection, so
a name pointing there is refused too. A network or address pattern of ``--http-allowed-hosts``
that covers one of them allows it (``*`` does not: it must be named).
"""

import ipaddress
import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass

_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_NAME = re.compile(rf"\A{_LABEL}(\.{_LABEL})*\Z")
_WITH_PORT = re.compile(r"\A(?P<host>\[[^\]]+\]|[^:\[\]]+)(:(?P<port>[0-9]{1,5}))?\Z")
DEFAULT_PORTS = {"http": 80, "https": 443, "redis": 6379, "rediss": 6379}

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


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

    def names_address(self, address: IpAddress, port: int) -> bool:
        """Whether a network or address pattern (not ``*``, not a name) covers ``address``."""
        return any(
            pattern.network is not None and pattern.admits(str(address), port)
            for pattern in self.patterns
        )

    def admits(self, url: str) -> bool:
        """Whether ``url`` (an absolute http://, https://, redis:// or rediss:// URL) names an
        allowed host and port."""
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


@dataclass(frozen=True, slots=True)
class RefusedAddresses:
    """A network targets never reach by default, at one port or at any, and why."""

    network: Network
    why: str
    port: int | None = None

    def covers(self, address: IpAddress, port: int) -> bool:
        return (
            address.version == self.network.version
            and address in self.network
            and (self.port is None or port == self.port)
        )


DEFAULT_REFUSED = (
    RefusedAddresses(
        ipaddress.ip_network("169.254.0.0/16"),
        "link-local (where clouds serve instance metadata: 169.254.169.254, 169.254.170.2)",
    ),
    RefusedAddresses(ipaddress.ip_network("fe80::/10"), "link-local"),
    RefusedAddresses(ipaddress.ip_network("fd00:ec2::254/128"), "a cloud metadata endpoint (AWS)"),
    RefusedAddresses(ipaddress.ip_network("fd20:ce::254/128"), "a cloud metadata endpoint (GCP)"),
    RefusedAddresses(
        ipaddress.ip_network("100.100.100.200/32"), "a cloud metadata endpoint (Alibaba Cloud)"
    ),
    RefusedAddresses(ipaddress.ip_network("192.0.0.192/32"), "a cloud metadata endpoint (Oracle)"),
    RefusedAddresses(
        ipaddress.ip_network("168.63.129.16/32"), "a cloud host endpoint (Azure WireServer)"
    ),
)

REFUSED_BY_FLAG = "refused by --http-refused-addresses"
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def parse_refused(entries: Iterable[str]) -> tuple[RefusedAddresses, ...]:
    """The platform team's own refusals (``--http-refused-addresses``): IP addresses or
    networks, each optionally with ``:PORT``, comma-separated or repeated.

    Raises ``ValueError`` naming an entry that is not one (a host name cannot be refused: it is
    checked on the addresses it resolves to, so its addresses are what to name).
    """
    refused: list[RefusedAddresses] = []
    for entry in entries:
        for part in entry.split(","):
            if not part.strip():
                continue
            try:
                pattern = HostPattern.parse(part)
            except ValueError:
                pattern = None
            if pattern is None or pattern.network is None:
                raise ValueError(
                    f"--http-refused-addresses: {part.strip()!r} is not an IP address or network "
                    "(optionally with :PORT)"
                )
            refused.append(RefusedAddresses(pattern.network, REFUSED_BY_FLAG, pattern.port))
    return tuple(refused)


def forms_of(address: IpAddress) -> tuple[IpAddress, ...]:
    """``address``, and the IPv4 address an IPv6 one carries: an IPv4-mapped address
    (``::ffff:169.254.169.254``) is that IPv4 address on a dual-stack socket, and a NAT64 one
    (``64:ff9b::a9fe:a9fe``) or an IPv4-compatible one (``::a9fe:a9fe``) may be translated to
    it on the way; each must be refused as the IPv4 address is."""
    if not isinstance(address, ipaddress.IPv6Address):
        return (address,)
    if address.ipv4_mapped is not None:
        return (address, address.ipv4_mapped)
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return (address, ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return (address,)


@dataclass(frozen=True, slots=True)
class AddressGuard:
    """The addresses targets (HTTP URLs, brokers) never reach unless ``--http-allowed-hosts``
    names them."""

    refused: tuple[RefusedAddresses, ...] = DEFAULT_REFUSED
    allowed: HostAllowlist | None = None

    @classmethod
    def default(
        cls,
        *,
        api_server: Iterable[tuple[str, int]],
        allowed: HostAllowlist | None,
        refused: Iterable[RefusedAddresses] = (),
    ) -> "AddressGuard":
        """The default refusals, the API server at each (address, port) it is reached at, and
        the platform team's own (``refused``)."""
        servers = tuple(
            RefusedAddresses(ipaddress.ip_network(address), "the Kubernetes API server", port)
            for address, port in api_server
        )
        return cls(refused=DEFAULT_REFUSED + servers + tuple(refused), allowed=allowed)

    def refusal(self, address: str, port: int) -> str | None:
        """Why ``address`` (an IP address; anything else is not this guard's) at ``port`` must
        not be called, or ``None``."""
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 zone is not the address
        except ValueError:
            return None
        for form in forms_of(ip):
            refusal = self._refusal(form, port)
            if refusal is not None:
                return refusal
        return None

    def _refusal(self, address: IpAddress, port: int) -> str | None:
        for refused in self.refused:
            if refused.covers(address, port):
                if self.allowed is not None and self.allowed.names_address(address, port):
                    return None
                return refused.why
        return None
