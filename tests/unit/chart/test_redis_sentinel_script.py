"""The start script of the Sentinel-managed Redis (charts/punctual/files/redis-sentinel.sh): which
primary a starting member follows, and the configuration it writes for its server and its
Sentinel. The script runs under sh with stand-ins for redis-cli (the Sentinels' answers, per
member) and for redis-server and redis-sentinel (which record how they were started); the
objects that run it are rendered in tests/integration/test_helm_chart.py."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "charts" / "punctual" / "files" / "redis-sentinel.sh"
HEADLESS = "punctual-redis.punctual-system.svc"
PASSWORD = "s3cret-Pa55"
SCRIPT_TIMEOUT = 20

# A Sentinel's answer to `SENTINEL get-master-addr-by-name` is printed from answers/<host>; after
# it was asked once, from answers/<host>.then when there is one (a failover in between). No
# file: that Sentinel does not answer.
REDIS_CLI = """#!/bin/sh
host=$3
answers="$STUB_DIR/answers/$host"
asked="$STUB_DIR/asked-$host"
if [ -f "$asked" ] && [ -f "$answers.then" ]; then cat "$answers.then"; exit 0; fi
touch "$asked"
[ -f "$answers" ] || exit 1
cat "$answers"
"""
STARTED = """#!/bin/sh
printf '%s\\n' "$(basename "$0")" "$@" > "$STUB_DIR/started"
"""


def member(index: int) -> str:
    return f"punctual-redis-{index}.{HEADLESS}"


@pytest.fixture
def stub_dir(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "answers").mkdir()
    (tmp_path / "config").mkdir()
    for name, text in (("redis-cli", REDIS_CLI), ("redis-server", STARTED)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    shutil.copy(bin_dir / "redis-server", bin_dir / "redis-sentinel")
    return tmp_path


def sentinel_names(stub_dir: Path, asked: int, primary: str, *, then: str | None = None) -> None:
    (stub_dir / "answers" / member(asked)).write_text(f"{primary}\n6379\n")
    if then is not None:
        (stub_dir / "answers" / f"{member(asked)}.then").write_text(f"{then}\n6379\n")


def start(
    stub_dir: Path, role: str, pod: int, *args: str, down_after_ms: int = 500
) -> tuple[list[str], str]:
    """Runs the script as pod ``pod``'s ``role``: what it started (program and arguments) and
    the configuration file it wrote."""
    env = {
        "PATH": f"{stub_dir / 'bin'}:{os.environ['PATH']}",
        "STUB_DIR": str(stub_dir),
        "CONFIG_DIR": str(stub_dir / "config"),
        "POD_NAME": f"punctual-redis-{pod}",
        "HEADLESS": HEADLESS,
        "MEMBERS": "3",
        "SERVICE": "punctual",
        "REDIS_PORT": "6379",
        "SENTINEL_PORT": "26379",
        "QUORUM": "2",
        # A restarted primary waits twice this for a failover.
        "DOWN_AFTER_MS": str(down_after_ms),
        "FAILOVER_TIMEOUT_MS": "60000",
        "REDISCLI_AUTH": PASSWORD,
    }
    subprocess.run(["sh", str(SCRIPT), role, *args], env=env, check=True, timeout=SCRIPT_TIMEOUT)
    started = (stub_dir / "started").read_text().splitlines()
    config = stub_dir / "config" / ("redis.conf" if role == "server" else "sentinel.conf")
    assert config.stat().st_mode & 0o077 == 0  # it holds the password
    return started, config.read_text()


class TestWhichPrimaryAServerFollows:
    def test_on_the_first_start_pod_0_is_the_primary_and_the_others_its_replicas(
        self, stub_dir: Path
    ) -> None:
        _, first = start(stub_dir, "server", 0)
        _, second = start(stub_dir, "server", 1)

        assert "replicaof" not in first
        assert f"replicaof {member(0)} 6379\n" in second

    def test_it_follows_the_primary_the_first_answering_sentinel_names(
        self, stub_dir: Path
    ) -> None:
        sentinel_names(stub_dir, 2, member(1))

        _, config = start(stub_dir, "server", 0)

        assert f"replicaof {member(1)} 6379\n" in config

    def test_a_restarted_primary_waits_for_the_failover_and_follows_the_promoted_replica(
        self, stub_dir: Path
    ) -> None:
        sentinel_names(stub_dir, 1, member(0), then=member(2))

        _, config = start(stub_dir, "server", 0, down_after_ms=5000)

        assert f"replicaof {member(2)} 6379\n" in config

    def test_a_restarted_primary_no_one_replaces_in_time_starts_as_the_primary(
        self, stub_dir: Path
    ) -> None:
        sentinel_names(stub_dir, 1, member(0))

        _, config = start(stub_dir, "server", 0)

        assert "replicaof" not in config


class TestWhatAServerIsStartedWith:
    def test_it_announces_its_dns_name_and_takes_the_password_from_a_file(
        self, stub_dir: Path
    ) -> None:
        started, config = start(stub_dir, "server", 1, "--port", "6379", "--save", "")

        assert config.splitlines()[:3] == [
            f"requirepass {PASSWORD}",
            f"masterauth {PASSWORD}",
            f"replica-announce-ip {member(1)}",
        ]
        assert started == [
            "redis-server",
            str(stub_dir / "config" / "redis.conf"),
            "--port",
            "6379",
            "--save",
            "",
        ]
        assert PASSWORD not in " ".join(started)


class TestWhatASentinelIsStartedWith:
    def test_it_watches_the_named_primary_by_name_with_the_password(self, stub_dir: Path) -> None:
        sentinel_names(stub_dir, 0, member(2))

        started, config = start(stub_dir, "sentinel", 1)

        assert config.splitlines() == [
            "port 26379",
            # Before `sentinel monitor`, which names the primary by its DNS name.
            "sentinel resolve-hostnames yes",
            "sentinel announce-hostnames yes",
            f"sentinel announce-ip {member(1)}",
            f"requirepass {PASSWORD}",
            f"sentinel sentinel-pass {PASSWORD}",
            f"sentinel monitor punctual {member(2)} 6379 2",
            f"sentinel auth-pass punctual {PASSWORD}",
            "sentinel down-after-milliseconds punctual 500",
            "sentinel failover-timeout punctual 60000",
            "sentinel parallel-syncs punctual 1",
        ]
        assert started == ["redis-sentinel", str(stub_dir / "config" / "sentinel.conf")]

    def test_on_the_first_start_it_watches_pod_0(self, stub_dir: Path) -> None:
        _, config = start(stub_dir, "sentinel", 2)

        assert f"sentinel monitor punctual {member(0)} 6379 2\n" in config


def test_an_unknown_role_is_refused_with_the_usage(stub_dir: Path) -> None:
    result = subprocess.run(
        ["sh", str(SCRIPT), "primary"],
        env={"POD_NAME": "punctual-redis-0", "HEADLESS": HEADLESS, "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        check=False,
        timeout=SCRIPT_TIMEOUT,
    )

    assert result.returncode == 2
    assert "usage:" in result.stderr
