"""One tenant cannot harm another through the shared operator (issue 29), on the real control
plane.

One replica (the kubernetes slot lock, the default) watches two namespaces. ``tenant-b``, the
victim, runs a job ``every: 1s`` on the recording receiver. Once it is Ready, ``tenant-a``
applies every attack below at once:

- 30 schedules that never fire (``30 2 * 3 0L`` in Europe/Berlin with ``dst.nonexistent:
  Skip``: the last Sunday of March at 02:30 is in the spring-forward gap every year), which
  once walked their search to the year 9999 on the event loop;
- a period below the operator's minimum (``every: 100ms``);
- URLs at the cloud metadata addresses and at the API server the operator knows;
- an HTTP body and a Job template above their size bounds;
- ``concurrencyPolicy: Allow`` every second against a target that accepts connections and
  never answers, with a timeout of an hour.

Each attack is refused or bounded in status: an invalid spec is ``InvalidSpec`` naming its
field (the very message the webhook refuses it with, which ``test_webhook.py`` checks), an
address no tenant may call ``HostNotAllowed``, and the silent target holds at most
``--max-runs-in-flight-per-job`` runs. Meanwhile the victim's job is called for every second,
on time. The operator writes one Event a second (``--event-writes-per-second 1``), so that
tenant-a's InvalidSpec Warnings are a backlog of tens of seconds: the victim's first Warning,
of a job failing after the attack, is written while most of that backlog still waits, since
Events are written in turns across namespaces.

The findings tested elsewhere on the real control plane are left out here: the Host header
(``test_hostile_http_targets.py``), another namespace's stream (``test_operator_queue_target.py``),
the webhook's callers (``test_webhook.py``), a Redis that forgets (``test_redis_forgets.py``)
and its keyspace (``test_redis_keyspace.py``).
"""

import contextlib
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hostile_http_servers import Connections, HostileServer
from operator_harness import (
    Call,
    Operators,
    Receiver,
    Spread,
    api,
    apply,
    assert_called_every_second,
    assert_on_time,
    condition,
    counts,
    eventually,
    fmt,
    http_target,
    new_namespace,
    now,
    read_all,
    report,
    scheduled_job,
    sleep_until,
    status,
)

from localcluster import LocalCluster

pytest_plugins = ["operator_fixtures"]

ATTACK_FOR = timedelta(seconds=18)
"""Long enough for the silent target to reach its bound of runs in flight and be skipped past
it, one run a second."""
ON_TIME_LATENESS_MS = 500.0
"""Generous for a shared, noisy machine; a frozen or busy event loop is late by seconds."""
READY_TIMEOUT = 30.0
EVENT_TIMEOUT = 20.0
MAX_RUNS_IN_FLIGHT_PER_JOB = 10
"""The operator's default ``--max-runs-in-flight-per-job``."""
SIZE_BOUND = 64 * 1024
"""The default ``--max-http-body-bytes`` and ``--max-job-template-bytes``."""

ON_TIME = "on-time"
FAILING = "failing"
NEVER_FIRES = {
    "schedule": "30 2 * 3 0L",
    "timeZone": "Europe/Berlin",
    "dst": {"nonexistent": "Skip"},
}
NEVER_FIRING = [f"never-fires-{index}" for index in range(30)]
TOO_OFTEN = "too-often"
METADATA = {"aws-gcp-azure-metadata": "169.254.169.254", "alibaba-metadata": "100.100.100.200"}
API_SERVER = "api-server"
BODY_TOO_LARGE = "body-too-large"
TEMPLATE_TOO_LARGE = "template-too-large"
SILENT = "never-answered"


@dataclass(frozen=True)
class Attack:
    start: datetime
    end: datetime
    victim: str
    """tenant-b's namespace."""
    victim_calls: list[Call]
    """tenant-b's every-second job's calls whose slot is in the attack."""
    bodies: dict[str, dict[str, Any]]
    """tenant-a's jobs at the end of the attack."""
    attacker_warnings_when_victim_warned: int
    """tenant-a's InvalidSpec Events written when tenant-b's first Warning was."""
    silent: Connections
    problems: dict[str, list[str]]
    """The error lines of the replica's log, at the end of the attack."""


def warnings(cluster: LocalCluster, namespace: str, *, reason: str) -> list[dict[str, Any]]:
    """The Events about ScheduledJobs of ``namespace`` with ``reason``, any job."""
    listing = api(cluster).get(f"/api/v1/namespaces/{namespace}/events")
    return [
        event
        for event in listing["items"]
        if event["involvedObject"].get("kind") == "ScheduledJob" and event.get("reason") == reason
    ]


def every_job_has_ready(cluster: LocalCluster, namespace: str, names: list[str]) -> bool:
    bodies = read_all(cluster, namespace)
    return all(condition(bodies.get(name, {}), "Ready") is not None for name in names)


def attacks(
    cluster: LocalCluster, receiver: Receiver, namespace: str, silent: HostileServer
) -> list[dict[str, Any]]:
    """tenant-a's ScheduledJobs, every one of them an attack."""
    api_server = urllib.parse.urlsplit(cluster.server)
    big_body = http_target(receiver, namespace, BODY_TOO_LARGE)
    # Within the CRD's bound on characters, past the operator's on bytes as sent.
    big_body["http"] |= {"method": "POST", "body": "\u00e9" * (SIZE_BOUND // 2 + 1)}
    big_container = {"name": "big", "image": "busybox:1.36", "command": ["true", "x" * SIZE_BOUND]}
    big_template = {
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [big_container]}}}
    }
    urls = {name: f"http://{address}/latest/meta-data/" for name, address in METADATA.items()}
    urls[API_SERVER] = f"https://{api_server.netloc}/api/v1/secrets"
    return [
        *(
            scheduled_job(
                namespace, name, {**NEVER_FIRES, "target": http_target(receiver, namespace, name)}
            )
            for name in NEVER_FIRING
        ),
        scheduled_job(
            namespace,
            TOO_OFTEN,
            {"every": "100ms", "target": http_target(receiver, namespace, TOO_OFTEN)},
        ),
        *(
            scheduled_job(namespace, name, {"every": "1s", "target": {"http": {"url": url}}})
            for name, url in urls.items()
        ),
        scheduled_job(namespace, BODY_TOO_LARGE, {"every": "1s", "target": big_body}),
        scheduled_job(
            namespace,
            TEMPLATE_TOO_LARGE,
            {"every": "1s", "target": {"job": {"template": big_template}}},
        ),
        scheduled_job(
            namespace,
            SILENT,
            {
                "every": "1s",
                "concurrencyPolicy": "Allow",
                "timeout": "1h",
                "target": {"http": {"url": silent.url()}},
            },
        ),
    ]


@pytest.fixture(scope="module")
def attack(
    cluster: LocalCluster,
    scheduled_job_crd: list[Path],
    receiver: Receiver,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Attack]:
    with contextlib.ExitStack() as stack:
        attacker = stack.enter_context(new_namespace(cluster, "tenant-a"))
        victim = stack.enter_context(new_namespace(cluster, "tenant-b"))
        silent = stack.enter_context(HostileServer(b"", name=SILENT))
        operators = stack.enter_context(
            Operators(
                cluster,
                tmp_path_factory.mktemp("operators"),
                namespace=attacker,
                extra_args=["--namespace", victim, "--event-writes-per-second", "1"],
            )
        )
        on_time = f"{victim}/{ON_TIME}"
        receiver.answer(f"/{victim}/{FAILING}", 500)
        apply(
            cluster,
            scheduled_job(
                victim, ON_TIME, {"every": "1s", "target": http_target(receiver, victim, ON_TIME)}
            ),
        )
        eventually(
            lambda: (
                (condition(read_all(cluster, victim).get(ON_TIME, {}), "Ready") or {}).get("status")
                == "True"
            ),
            timeout=READY_TIMEOUT,
            what=f"Ready=True on {on_time}",
        )

        start = now()
        tenant_a = attacks(cluster, receiver, attacker, silent)
        apply(cluster, *tenant_a)
        names = [body["metadata"]["name"] for body in tenant_a]
        eventually(
            lambda: every_job_has_ready(cluster, attacker, names),
            timeout=READY_TIMEOUT,
            what=f"a Ready condition on every job of {attacker}",
        )
        # The victim's job fails from its first run: its Warning joins tenant-a's backlog.
        apply(
            cluster,
            scheduled_job(
                victim, FAILING, {"every": "1s", "target": http_target(receiver, victim, FAILING)}
            ),
        )
        eventually(
            lambda: warnings(cluster, victim, reason="RunFailed"),
            timeout=EVENT_TIMEOUT,
            what=f"a RunFailed Event in {victim}",
        )
        attacker_warnings = len(warnings(cluster, attacker, reason="InvalidSpec"))

        sleep_until(start + ATTACK_FOR)
        end = now()
        silent_connections = silent.connections()
        bodies = read_all(cluster, attacker)
        calls = [call for call in receiver.calls(on_time) if start < call.slot <= end]
        report(
            "hostile tenants (1 replica, tenant-a attacking, tenant-b every second)",
            [
                f"attack {fmt(start)} - {fmt(end)}; log {operators['r1'].log_path}",
                f"{on_time}: {len(calls)} calls, "
                f"lateness {Spread.of(call.lateness_ms for call in calls)}",
                f"tenant-a's InvalidSpec Events when tenant-b's first Warning was written: "
                f"{attacker_warnings}",
                f"{SILENT}: {silent_connections}, "
                f"in flight {len(status(bodies[SILENT]).get('active') or [])}, "
                f"counts {dict(counts(bodies[SILENT]))}",
            ],
        )
        yield Attack(
            start=start,
            end=end,
            victim=victim,
            victim_calls=calls,
            bodies=bodies,
            attacker_warnings_when_victim_warned=attacker_warnings,
            silent=silent_connections,
            problems=operators.problems(),
        )


def ready(attack: Attack, name: str) -> tuple[str, str, str]:
    found = condition(attack.bodies[name], "Ready") or {}
    return found.get("status", ""), found.get("reason", ""), found.get("message", "")


class TestTheVictimsEverySecondJob:
    def test_is_called_for_every_second_of_the_attack(self, attack: Attack) -> None:
        assert_called_every_second(attack.victim_calls, start=attack.start, end=attack.end)

    def test_is_called_within_500_ms_of_each_scheduled_time(self, attack: Attack) -> None:
        assert_on_time(attack.victim_calls, within_ms=ON_TIME_LATENESS_MS)

    def test_is_called_once_per_slot(self, attack: Attack) -> None:
        slots = [call.slot for call in attack.victim_calls]

        assert len(slots) == len(set(slots))


class TestTheOperatorReplica:
    def test_logs_no_error_through_the_attack(self, attack: Attack) -> None:
        assert attack.problems == {}


class TestAScheduleThatNeverFires:
    @pytest.mark.parametrize("name", NEVER_FIRING)
    def test_is_an_invalid_spec_naming_the_schedule_and_its_dst_rule(
        self, attack: Attack, name: str
    ) -> None:
        state, reason, message = ready(attack, name)

        assert (state, reason) == ("False", "InvalidSpec"), message
        assert message.startswith("spec.schedule: '30 2 * 3 0L' in Europe/Berlin"), message
        assert "dst.nonexistent: Skip" in message


class TestAPeriodBelowTheMinimum:
    def test_is_an_invalid_spec_naming_the_field_and_the_flag(self, attack: Attack) -> None:
        state, reason, message = ready(attack, TOO_OFTEN)

        assert (state, reason) == ("False", "InvalidSpec"), message
        assert message == (
            "spec.every: slots 100ms apart: this operator allows no less than 1s between two "
            "slots (punctual run --min-period)"
        )


class TestEventsInTurnsAcrossNamespaces:
    def test_the_victims_first_warning_is_written_while_the_attackers_still_wait(
        self, attack: Attack
    ) -> None:
        refused = sum(ready(attack, name)[1] == "InvalidSpec" for name in attack.bodies)

        # Written in arrival order, tenant-b's Warning would come after all of tenant-a's.
        assert attack.attacker_warnings_when_victim_warned < refused / 2, refused


class TestAnAddressNoTenantMayCall:
    @pytest.mark.parametrize("name", list(METADATA))
    def test_a_cloud_metadata_address_is_refused_saying_what_it_is(
        self, attack: Attack, name: str
    ) -> None:
        state, reason, message = ready(attack, name)

        assert (state, reason) == ("False", "HostNotAllowed"), message
        assert message.startswith(f"spec.target.http.url: {METADATA[name]} is "), message
        assert "metadata" in message

    def test_the_api_server_is_refused_saying_so(self, attack: Attack) -> None:
        state, reason, message = ready(attack, API_SERVER)

        assert (state, reason) == ("False", "HostNotAllowed"), message
        assert "the Kubernetes API server" in message


class TestASpecAboveItsSizeBound:
    @pytest.mark.parametrize(
        ("name", "field", "flag"),
        [
            (BODY_TOO_LARGE, "spec.target.http.body", "--max-http-body-bytes"),
            (TEMPLATE_TOO_LARGE, "spec.target.job.template", "--max-job-template-bytes"),
        ],
        ids=["http body", "job template"],
    )
    def test_is_an_invalid_spec_naming_the_field_and_the_flag(
        self, attack: Attack, name: str, field: str, flag: str
    ) -> None:
        state, reason, message = ready(attack, name)

        assert (state, reason) == ("False", "InvalidSpec"), message
        assert message.startswith(f"{field}: "), message
        assert f"more than the {SIZE_BOUND} this operator allows (punctual run {flag})" in message


class TestRunsInFlightAgainstATargetThatNeverAnswers:
    def test_stay_at_the_bound_per_job(self, attack: Attack) -> None:
        active = status(attack.bodies[SILENT]).get("active") or []

        assert len(active) == MAX_RUNS_IN_FLIGHT_PER_JOB
        assert attack.silent.max_open <= MAX_RUNS_IN_FLIGHT_PER_JOB, attack.silent

    def test_count_the_slots_past_the_bound_skipped(self, attack: Attack) -> None:
        assert counts(attack.bodies[SILENT])["skippedInFlightLimit"] > 0, status(
            attack.bodies[SILENT]
        )
