"""The operator's allowlist of HTTP target hosts (``--http-allowed-hosts``): which URLs each
pattern admits, which patterns are refused, and (once wired) that a job whose URL is outside
the list is reported, never called."""

import argparse

import pytest

from punctual import replica
from punctual.api import spec_parsing
from punctual.cli import run as run_command
from punctual.scheduling import slots
from punctual.targets import addresses
from punctual.targets import errors as target_errors
from punctual.targets.addresses import AddressGuard, HostAllowlist
from punctual.targets.http import wiring as http_wiring

JOB = slots.JobRef(namespace="ns", name="job", uid="uid-1")


@pytest.mark.parametrize(
    ("pattern", "url"),
    [
        ("report-svc.reports.svc", "http://report-svc.reports.svc:8080/run"),
        ("REPORT-svc.reports.svc", "http://report-svc.Reports.svc./run"),
        ("*.svc.cluster.local", "https://a.b.svc.cluster.local/x"),
        ("*.svc.cluster.local:8443", "https://a.svc.cluster.local:8443/x"),
        ("api.example.com:443", "https://api.example.com/"),
        ("10.0.0.0/8", "http://10.1.2.3:9000/"),
        ("127.0.0.1", "http://127.0.0.1:18080/hello"),
        ("[::1]:8080", "http://[::1]:8080/"),
        ("fd00::/8", "http://[fd12::1]/"),
        ("*", "http://anything.at.all:1/"),
    ],
)
def test_a_pattern_admits_the_urls_it_names(pattern: str, url: str) -> None:
    assert HostAllowlist.parse([pattern]).admits(url)


@pytest.mark.parametrize(
    ("pattern", "url"),
    [
        ("report-svc.reports.svc", "http://report-svc.reports.svc.evil.com/run"),
        ("report-svc.reports.svc", "http://evil.com/?report-svc.reports.svc"),
        ("report-svc.reports.svc", "http://report-svc.reports.svc@evil.com/"),
        ("*.svc.cluster.local", "http://svc.cluster.local/"),
        ("*.svc.cluster.local", "http://evilsvc.cluster.local/"),
        ("*.svc.cluster.local:8443", "https://a.svc.cluster.local/"),
        ("10.0.0.0/8", "http://169.254.169.254/latest/meta-data/"),
        ("10.0.0.0/8", "http://ten.example.com/"),
        ("127.0.0.1", "http://[::ffff:127.0.0.2]/"),
        ("api.example.com:443", "http://api.example.com/"),
        ("api.example.com", "http://api.example.com:99999/"),
    ],
)
def test_a_pattern_refuses_what_it_does_not_name(pattern: str, url: str) -> None:
    assert not HostAllowlist.parse([pattern]).admits(url)


def test_several_patterns_may_share_one_value_separated_by_commas() -> None:
    allowlist = HostAllowlist.parse(["a.example.com, *.svc", "10.0.0.1"])

    assert all(allowlist.admits(f"http://{h}/") for h in ("a.example.com", "x.svc", "10.0.0.1"))
    assert not allowlist.admits("http://b.example.com/")


@pytest.mark.parametrize(
    "pattern", ["", "http://a.example.com", "*.", "a b", "*.*.svc", "10.0.0.0/33", "a:70000", "[x]"]
)
def test_a_malformed_pattern_is_refused_naming_it(pattern: str) -> None:
    with pytest.raises(ValueError, match="--http-allowed-hosts"):
        HostAllowlist.parse([pattern])


def test_a_job_whose_host_is_not_allowed_is_reported_and_never_wired() -> None:
    wiring = http_wiring.HttpTargets(
        connections=object(),  # type: ignore[arg-type]
        secrets=object(),  # type: ignore[arg-type]
        guard=AddressGuard(allowed=HostAllowlist.parse(["*.svc.cluster.local"])),
    )
    spec = spec_parsing.parse_spec(
        {"every": "10s", "target": {"http": {"url": "http://169.254.169.254/latest/meta-data/"}}}
    )

    with pytest.raises(target_errors.TargetUnavailableError) as refused:
        wiring.wire(JOB, spec)

    assert refused.value.reason == "HostNotAllowed"
    assert "spec.target.http.url" in str(refused.value)


def test_a_job_whose_host_is_allowed_is_wired() -> None:
    wiring = http_wiring.HttpTargets(
        connections=object(),  # type: ignore[arg-type]
        secrets=object(),  # type: ignore[arg-type]
        guard=AddressGuard(allowed=HostAllowlist.parse(["*.svc.cluster.local"])),
    )
    spec = spec_parsing.parse_spec(
        {"every": "10s", "target": {"http": {"url": "http://report.reports.svc.cluster.local/"}}}
    )

    assert wiring.wire(JOB, spec).executor is not None


def test_the_command_line_takes_the_allowlist() -> None:
    parser = argparse.ArgumentParser()
    run_command.register(parser.add_subparsers())
    arguments = parser.parse_args(
        ["run", "--http-allowed-hosts", "*.svc.cluster.local", "--http-allowed-hosts", "10.0.0.0/8"]
    )

    assert HostAllowlist.parse(arguments.http_allowed_hosts).admits("http://10.0.0.7/")


API_SERVER = [("10.96.0.1", 443), ("127.0.0.1", 6443)]


@pytest.mark.parametrize(
    ("address", "port", "why"),
    [
        ("169.254.169.254", 80, "link-local"),
        ("169.254.1.1", 8080, "link-local"),
        ("fe80::1", 80, "link-local"),
        ("fe80::1%eth0", 80, "link-local"),
        ("::ffff:169.254.169.254", 80, "link-local"),
        ("169.254.170.2", 80, "link-local"),
        ("fd00:ec2::254", 80, "cloud metadata"),
        ("FD00:EC2:0::254", 80, "cloud metadata"),
        ("fd20:ce::254", 80, "cloud metadata"),
        ("100.100.100.200", 80, "Alibaba"),
        ("::ffff:100.100.100.200", 80, "Alibaba"),
        ("::ffff:6464:64c8", 80, "Alibaba"),
        ("64:ff9b::100.100.100.200", 80, "Alibaba"),
        ("64:ff9b::a9fe:a9fe", 80, "link-local"),
        ("::169.254.169.254", 80, "link-local"),
        ("192.0.0.192", 80, "Oracle"),
        ("168.63.129.16", 80, "Azure"),
        ("168.63.129.16", 32526, "Azure"),
        ("10.96.0.1", 443, "API server"),
        ("::ffff:10.96.0.1", 443, "API server"),
        ("127.0.0.1", 6443, "API server"),
    ],
)
def test_by_default_some_addresses_are_refused(address: str, port: int, why: str) -> None:
    guard = AddressGuard.default(api_server=API_SERVER, allowed=None)

    assert why in (guard.refusal(address, port) or "")


@pytest.mark.parametrize(
    ("address", "port"),
    [
        ("127.0.0.1", 18080),
        ("10.96.0.1", 80),
        ("10.0.0.7", 443),
        ("::1", 80),
        ("::", 80),
        ("::ffff:10.0.0.7", 443),
        ("64:ff9b::a00:7", 443),
        ("100.100.100.201", 80),
        ("fd00:ec2::253", 53),
        ("example.com", 80),
    ],
)
def test_everything_else_is_not_the_guards_to_refuse(address: str, port: int) -> None:
    guard = AddressGuard.default(api_server=API_SERVER, allowed=None)

    assert guard.refusal(address, port) is None


@pytest.mark.parametrize(
    ("allowed", "refused"),
    [("169.254.169.254", False), ("169.254.0.0/16:80", False), ("*", True), ("10.0.0.0/8", True)],
)
def test_a_refused_address_is_allowed_only_when_a_pattern_names_it(
    allowed: str, refused: bool
) -> None:
    guard = AddressGuard.default(api_server=[], allowed=HostAllowlist.parse([allowed]))

    assert (guard.refusal("169.254.169.254", 80) is not None) is refused


def test_a_job_calling_the_metadata_endpoint_is_refused_without_any_allowlist() -> None:
    wiring = http_wiring.HttpTargets(
        connections=object(),  # type: ignore[arg-type]
        secrets=object(),  # type: ignore[arg-type]
    )
    spec = spec_parsing.parse_spec(
        {"every": "10s", "target": {"http": {"url": "http://169.254.169.254/latest/meta-data/"}}}
    )

    with pytest.raises(target_errors.TargetUnavailableError) as refused:
        wiring.wire(JOB, spec)

    assert refused.value.reason == "HostNotAllowed"
    assert "169.254.169.254 is link-local" in str(refused.value)
    assert "--http-allowed-hosts" in str(refused.value)


@pytest.mark.parametrize(
    ("allowed", "address", "refused"),
    [
        ("169.254.169.254", "::ffff:169.254.169.254", False),
        ("169.254.169.254", "64:ff9b::a9fe:a9fe", False),
        ("::ffff:0:0/96", "::ffff:169.254.169.254", True),
        ("100.100.100.200:80", "100.100.100.200", False),
    ],
)
def test_an_ipv6_form_of_a_refused_address_is_allowed_as_the_address_is(
    allowed: str, address: str, refused: bool
) -> None:
    guard = AddressGuard.default(api_server=[], allowed=HostAllowlist.parse([allowed]))

    assert (guard.refusal(address, 80) is not None) is refused


@pytest.mark.parametrize(
    ("entries", "address", "port", "refused"),
    [
        (["10.0.0.10:6443"], "10.0.0.10", 6443, True),
        (["10.0.0.10:6443"], "10.0.0.10", 80, False),
        (["10.0.0.10:6443"], "::ffff:10.0.0.10", 6443, True),
        (["10.0.0.0/24,192.168.0.0/16"], "192.168.4.2", 80, True),
        (["10.0.0.0/24", "[fd12::1]:8080"], "fd12::1", 8080, True),
        (["10.0.0.0/24", "[fd12::1]:8080"], "fd12::1", 80, False),
    ],
)
def test_the_platform_team_adds_its_own_refused_addresses(
    entries: list[str], address: str, port: int, refused: bool
) -> None:
    guard = AddressGuard.default(
        api_server=[], allowed=None, refused=addresses.parse_refused(entries)
    )

    why = guard.refusal(address, port)

    assert (why is not None) is refused
    assert why in (None, "refused by --http-refused-addresses")


@pytest.mark.parametrize("entry", ["api.internal", "*.svc", "*", "10.0.0.0/33", "10.0.0.1:99999"])
def test_a_refused_entry_must_be_an_address_or_network(entry: str) -> None:
    with pytest.raises(ValueError, match="--http-refused-addresses"):
        addresses.parse_refused([entry])


@pytest.mark.parametrize(
    ("configured", "environ", "urls"),
    [
        ("https://10.96.0.1:443", {}, ["https://10.96.0.1:443"]),
        (
            "https://api.example.com:6443",
            {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"},
            ["https://api.example.com:6443", "https://10.96.0.1:443"],
        ),
        (
            "https://127.0.0.1:6443",
            {"KUBERNETES_SERVICE_HOST": "fd00:10:96::1"},
            ["https://127.0.0.1:6443", "https://[fd00:10:96::1]:443"],
        ),
    ],
)
def test_the_api_server_is_refused_where_the_client_and_the_pod_reach_it(
    configured: str, environ: dict[str, str], urls: list[str]
) -> None:
    assert replica.api_server_urls(configured, environ) == urls
