"""``punctual run``'s options as the replica gets them: sharding on unless ``--sharding off``,
the membership Leases' namespace, from the most explicit source there is, the bounds per job, the
addresses HTTP targets never call beside the default ones, the connections one namespace
keeps busy, the replicas of Redis a claim waits for, and the image warm Jobs take the gate from."""

import argparse
import importlib.metadata
from datetime import timedelta
from pathlib import Path

import pytest

from punctual.api import spec_bounds
from punctual.cli import run, run_flags
from punctual.redis_io import replication
from punctual.replica import settings as replica_settings
from punctual.scheduling.errors import InvalidSpecError


def settings(*argv: str) -> replica_settings.ReplicaSettings:
    parser = argparse.ArgumentParser()
    run.register(parser.add_subparsers())
    return run_flags.settings(parser.parse_args(["run", *argv]))


@pytest.fixture(autouse=True)
def outside_a_pod(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    monkeypatch.setattr(run_flags, "SERVICE_ACCOUNT_NAMESPACE", tmp_path / "no-service-account")


class TestSharding:
    @pytest.mark.parametrize(
        ("argv", "sharding"),
        [
            ((), True),
            (("--sharding", "on"), True),
            (("--sharding", "off"), False),
        ],
        ids=["the-default", "on", "off"],
    )
    def test_it_is_on_unless_turned_off(self, argv: tuple[str, ...], sharding: bool) -> None:
        assert settings(*argv).sharding is sharding

    def test_it_is_the_default_of_a_replica_built_without_the_command_too(self) -> None:
        assert replica_settings.ReplicaSettings(replica_id="r1").sharding


class TestTheMembershipNamespace:
    @pytest.mark.parametrize(
        ("argv", "pod_namespace", "service_account", "expected"),
        [
            (("--membership-namespace", "leases", "--namespace", "a"), "pod", "sa", "leases"),
            (("--namespace", "a"), "pod", "sa", "pod"),
            (("--namespace", "a"), None, "sa", "sa"),
            (("--namespace", "a", "--namespace", "b"), None, None, "a"),
            ((), None, None, "default"),
        ],
        ids=["the-option", "the-pods", "the-service-accounts", "the-first-watched", "default"],
    )
    def test_comes_from_the_most_explicit_source(  # noqa: PLR0917 - the table's columns
        self,
        monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path,
        argv: tuple[str, ...],
        pod_namespace: str | None,
        service_account: str | None,
        expected: str,
    ) -> None:
        if pod_namespace is not None:
            monkeypatch.setenv("POD_NAMESPACE", pod_namespace)
        if service_account is not None:
            mounted = tmp_path / "namespace"
            mounted.write_text(f"{service_account}\n")
            monkeypatch.setattr(run_flags, "SERVICE_ACCOUNT_NAMESPACE", mounted)

        assert settings(*argv).membership_namespace == expected


class TestTheBoundsPerJob:
    def test_the_defaults_are_the_documented_ones(self) -> None:
        assert settings().bounds == spec_bounds.DEFAULT_BOUNDS
        assert (
            replica_settings.ReplicaSettings(replica_id="r1").bounds == spec_bounds.DEFAULT_BOUNDS
        )

    def test_each_flag_sets_its_bound(self) -> None:
        bounds = settings(
            "--min-period=100ms",
            "--max-timeout=2h",
            "--max-runs-in-flight-per-job=3",
            "--max-queued-runs-per-job=4",
            "--max-job-template-bytes=1000",
            "--max-http-body-bytes=2000",
            "--max-http-headers-bytes=3000",
            "--max-queue-payload-bytes=4000",
            "--schedule-horizon-years=2",
        ).bounds

        assert bounds == spec_bounds.Bounds(
            min_period=timedelta(milliseconds=100),
            max_timeout=timedelta(hours=2),
            max_runs_in_flight=3,
            max_queued=4,
            max_job_template_bytes=1000,
            max_http_body_bytes=2000,
            max_http_headers_bytes=3000,
            max_queue_payload_bytes=4000,
            schedule_horizon_years=2,
        )

    @pytest.mark.parametrize(
        ("argv", "flag"),
        [
            (("--min-period=0s",), "--min-period"),
            (("--min-period=soon",), "--min-period"),
            (("--max-runs-in-flight-per-job=0",), "--max-runs-in-flight-per-job"),
            (("--schedule-horizon-years=0",), "--schedule-horizon-years"),
            (("--schedule-horizon-years=11",), "--schedule-horizon-years"),
        ],
    )
    def test_a_bound_no_job_could_meet_is_refused_naming_the_flag(
        self, argv: tuple[str, ...], flag: str
    ) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            settings(*argv)

        assert caught.value.field == flag


BOUNDS_PER_NAMESPACE = pytest.mark.parametrize(
    ("flag", "attribute", "default"),
    [
        ("--max-runs-in-flight-per-namespace", "max_runs_in_flight_per_namespace", 1000),
        ("--max-queued-runs-per-namespace", "max_queued_runs_per_namespace", 1000),
        ("--max-backfills-per-namespace", "max_backfills_per_namespace", 2),
    ],
)


@BOUNDS_PER_NAMESPACE
class TestTheBoundsPerNamespace:
    def test_the_default_is_the_documented_one(
        self, flag: str, attribute: str, default: int
    ) -> None:
        assert getattr(settings(), attribute) == default
        assert getattr(replica_settings.ReplicaSettings(replica_id="r1"), attribute) == default

    def test_the_flag_sets_it(self, flag: str, attribute: str, default: int) -> None:
        chosen = settings(f"{flag}=50")

        assert getattr(chosen, attribute) == 50

    def test_a_cap_nothing_could_meet_is_refused_naming_the_flag(
        self, flag: str, attribute: str, default: int
    ) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            settings(f"{flag}=0")

        assert caught.value.field == flag


class TestTheRefusedAddresses:
    def test_are_none_beside_the_defaults_unless_given(self) -> None:
        assert settings().refused_addresses == ()

    def test_are_taken_comma_separated_or_repeated(self) -> None:
        refused = settings(
            "--http-refused-addresses",
            "10.0.0.10:6443,10.0.0.11:6443",
            "--http-refused-addresses",
            "192.168.0.0/16",
        ).refused_addresses

        assert [(str(r.network), r.port) for r in refused] == [
            ("10.0.0.10/32", 6443),
            ("10.0.0.11/32", 6443),
            ("192.168.0.0/16", None),
        ]

    def test_a_host_name_is_refused_naming_the_option(self) -> None:
        with pytest.raises(ValueError, match=r"--http-refused-addresses: 'api\.internal'"):
            settings("--http-refused-addresses", "api.internal")


class TestConnectionsPerNamespace:
    def test_are_half_of_a_hosts_by_default(self) -> None:
        assert settings().http_connections_per_namespace == 50

    def test_are_taken_from_the_option(self) -> None:
        assert (
            settings("--http-connections-per-namespace", "10").http_connections_per_namespace == 10
        )

    def test_at_least_one(self) -> None:
        with pytest.raises(InvalidSpecError, match="--http-connections-per-namespace"):
            settings("--http-connections-per-namespace", "0")


class TestTheBytesOfAStream:
    def test_are_eight_mebibytes_by_default(self) -> None:
        assert settings().max_stream_bytes == 8 * 1024 * 1024

    def test_are_taken_from_the_option(self) -> None:
        assert settings("--max-stream-bytes", "1000").max_stream_bytes == 1000

    def test_at_least_one(self) -> None:
        with pytest.raises(InvalidSpecError, match="--max-stream-bytes"):
            settings("--max-stream-bytes", "0")


class TestTheIdleExpiryOfAStream:
    @pytest.mark.parametrize(
        ("given", "expiry"),
        [
            pytest.param((), timedelta(days=7), id="a-week-by-default"),
            pytest.param(("--stream-idle-expiry", "36h"), timedelta(hours=36), id="as-given"),
            pytest.param(("--stream-idle-expiry", "0"), timedelta(), id="zero-turns-it-off"),
        ],
    )
    def test_is_read_from_the_option(self, given: tuple[str, ...], expiry: timedelta) -> None:
        assert settings(*given).stream_idle_expiry == expiry

    def test_a_negative_one_is_refused_naming_the_option(self) -> None:
        with pytest.raises(InvalidSpecError, match="--stream-idle-expiry"):
            settings("--stream-idle-expiry=-1h")


class TestTheReplicasAClaimWaitsFor:
    def test_are_none_by_default_a_standalone_redis(self) -> None:
        assert settings().acknowledgement == replication.Acknowledgement(
            replicas=0, timeout=timedelta(milliseconds=500)
        )
        assert (
            replica_settings.ReplicaSettings(replica_id="r1").acknowledgement == replication.NO_WAIT
        )

    def test_are_taken_from_the_options(self) -> None:
        chosen = settings("--redis-wait-replicas=1", "--redis-wait-timeout=200ms")

        assert chosen.acknowledgement == replication.Acknowledgement(
            replicas=1, timeout=timedelta(milliseconds=200)
        )

    @pytest.mark.parametrize(
        ("argv", "field"),
        [
            (("--redis-wait-replicas=-1",), "--redis-wait-replicas"),
            (("--redis-wait-timeout=0s",), "--redis-wait-timeout"),
            (("--redis-wait-timeout=1s",), "--redis-wait-timeout"),
        ],
    )
    def test_a_wait_no_claim_could_meet_is_refused_naming_the_flag(
        self, argv: tuple[str, ...], field: str
    ) -> None:
        with pytest.raises(InvalidSpecError) as caught:
            settings(*argv)

        assert caught.value.field == field


class TestTheWarmStartGateImage:
    def test_is_the_gate_of_the_operators_own_version_by_default(self) -> None:
        version = importlib.metadata.version("punctual-operator")

        assert settings().warm_start_gate_image == f"punctual-gate:{version}"

    def test_is_taken_from_the_option(self) -> None:
        image = "registry.example.com/mirror/punctual-gate@sha256:" + "0" * 64

        assert settings("--warm-start-gate-image", image).warm_start_gate_image == image

    def test_an_empty_one_is_refused_naming_the_option(self) -> None:
        with pytest.raises(InvalidSpecError, match="--warm-start-gate-image"):
            settings("--warm-start-gate-image", " ")
