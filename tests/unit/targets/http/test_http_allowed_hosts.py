"""The operator's allowlist of HTTP target hosts (``--http-allowed-hosts``): which URLs each
pattern admits, which patterns are refused, and (once wired) that a job whose URL is outside
the list is reported, never called."""

import argparse

import pytest

from punctual.api import planning
from punctual.cli import run as run_command
from punctual.controller import targets
from punctual.scheduling import slots
from punctual.targets import errors as target_errors
from punctual.targets.http.allowlist import AddressGuard, HostAllowlist

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
    wiring = targets.Targets(
        connections=object(),  # type: ignore[arg-type]
        secrets=object(),  # type: ignore[arg-type]
        guard=AddressGuard(allowed=HostAllowlist.parse(["*.svc.cluster.local"])),
    )
    spec = planning.parse_spec(
        {"every": "10s", "target": {"http": {"url": "http://169.254.169.254/latest/meta-data/"}}}
    )

    with pytest.raises(target_errors.TargetUnavailableError) as refused:
        wiring.wire(JOB, spec)

    assert refused.value.reason == "HostNotAllowed"
    assert "spec.target.http.url" in str(refused.value)


def test_a_job_whose_host_is_allowed_is_wired() -> None:
    wiring = targets.Targets(
        connections=object(),  # type: ignore[arg-type]
        secrets=object(),  # type: ignore[arg-type]
        guard=AddressGuard(allowed=HostAllowlist.parse(["*.svc.cluster.local"])),
    )
    spec = planning.parse_spec(
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
        ("fd00:ec2::254", 80, "cloud metadata"),
        ("10.96.0.1", 443, "API server"),
        ("127.0.0.1", 6443, "API server"),
    ],
)
def test_by_default_some_addresses_are_refused(address: str, port: int, why: str) -> None:
    guard = AddressGuard.default(api_server=API_SERVER, allowed=None)

    assert why in (guard.refusal(address, port) or "")


@pytest.mark.parametrize(
    ("address", "port"),
    [("127.0.0.1", 18080), ("10.96.0.1", 80), ("10.0.0.7", 443), ("::1", 80), ("example.com", 80)],
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
    wiring = targets.Targets(
        connections=object(),  # type: ignore[arg-type]
        secrets=object(),  # type: ignore[arg-type]
    )
    spec = planning.parse_spec(
        {"every": "10s", "target": {"http": {"url": "http://169.254.169.254/latest/meta-data/"}}}
    )

    with pytest.raises(target_errors.TargetUnavailableError) as refused:
        wiring.wire(JOB, spec)

    assert refused.value.reason == "HostNotAllowed"
    assert "169.254.169.254 is link-local" in str(refused.value)
    assert "--http-allowed-hosts" in str(refused.value)
