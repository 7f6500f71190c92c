"""Whatever a ScheduledJob's spec holds, the operator's one check answers InvalidSpecError or a
plan: never another exception, which would crash the handler and leave the object unreported.

The path is the reconciler's (``controller/reconciler.py``, ``Reconciler.observe``):
``validation.check`` (``spec_parsing.parse_spec`` → ``planning.plan_for`` → the target's own checks:
what the admission webhook refuses) → ``Targets.wire`` (building the target's executor and
lock). Whatever the check admits, the wiring finds nothing invalid in: the webhook never admits
what the operator would then report as InvalidSpec. Every capability a target can need is
present (a Redis for queue targets, the Jobs API for job targets), so ``TargetUnavailableError``
cannot stand in for a validation gap.

Specs come in two shapes: arbitrary JSON (what a stale CRD or a hand-made object could carry),
and the real fields with values drawn near their edges (odd durations, cron fragments, zone
names, URLs, header names and values), which is where a check can let something through.
"""

import string
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from punctual.api import spec_bounds
from punctual.controller import validation
from punctual.scheduling import hashed, slots
from punctual.scheduling.errors import InvalidSpecError
from punctual.targets import kinds
from punctual.targets.http import wiring as http_wiring
from punctual.targets.job import wiring as batch_job_wiring
from punctual.targets.queue import stream as queue_stream
from punctual.targets.queue import wiring as queue_wiring

JOB = slots.JobRef(namespace="fuzz", name="fuzzed", uid="0b7e2a54-9d7f-4b0e-8f57-1d2c3b4a5f60")
HASH_KEY = hashed.job_key(namespace=JOB.namespace, name=JOB.name)
NOW = datetime(2026, 6, 1, tzinfo=UTC)
FUZZ_SETTINGS = settings(
    max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# -- values ----------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
durations = st.one_of(
    st.sampled_from(["1s", "250ms", "1h30m", "10m", "59s", "1ms", "0s", "0ms", "-1s", "1.5s"]),
    st.sampled_from(["1d", "", " 1s", "1s ", "１s", "9223372036854775807ms", "2562048h"]),
    st.from_regex(r"\A([0-9]{1,22}(ms|h|m|s)){1,3}\Z"),
    st.text(alphabet="0123456789hms.-+ ", max_size=10),
)
cron_fields = st.sampled_from(
    ["*", "0", "59", "60", "*/5", "*/0", "1-3", "3-1", "L", "W", "?", "#", "1,2", "7", "8", "-1",
     "99999999999", "JAN", "MON", "mon-fri", "1/2", "", "0-23/2", "*/61"]
)  # fmt: skip
crons = st.one_of(
    st.sampled_from(
        [
            "* * * * *",
            "30 2 * * *",
            "@hourly",
            "@daily",
            "@reboot",
            "@every 1s",
            "0 0 31 2 *",
            "* * * * * *",
            "* * * * * * *",
            "0 0 29 2 1",
            "0 2 * * 1-5",
        ]
    ),
    st.lists(cron_fields, min_size=1, max_size=7).map(" ".join),
    st.text(max_size=20),
)
zones = st.one_of(
    st.sampled_from(
        [
            "UTC",
            "Europe/Copenhagen",
            "Australia/Lord_Howe",
            "Mars/Olympus",
            "",
            "../etc/passwd",
            "/etc/localtime",
            "EST5EDT",
            "Etc/GMT+14",
            "localtime",
            "posixrules",
            "Factory",
            "US",
            "Europe",
            "utc",
            "Europe/Copenhagen\x00",
        ]
    ),
    st.text(max_size=20),
)
urls = st.one_of(
    st.sampled_from(
        [
            "http://127.0.0.1:8080/run",
            "https://svc.ns.svc/x?y=1",
            "http://user:pw@host/",
            "http://host:99999/",
            "http://host:-1/",
            "http://[::1]:80/",
            "http://[::1/",
            "ftp://x/",
            "http:///nohost",
            "http://h/\u2028",
            "https://h:0/",
            "http://xn--/",
            "http://%zz/",
        ]
    ),
    st.text(max_size=30).map(lambda text: f"http://{text}"),
    st.text(max_size=30),
)
header_names = st.one_of(
    st.sampled_from(
        [
            "X-Env",
            "Authorization",
            "Idempotency-Key",
            "x-punctual-scheduled-time",
            "Bad Name",
            "",
            "X:Y",
            "Ä",
        ]
    ),
    st.text(alphabet=string.printable, max_size=10),
)
header_values = st.one_of(
    st.sampled_from(["prod", "", "a\r\nb", "a\x00b", "ÿ", "\t"]), st.text(max_size=10)
)


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """The value from ``strategy`` most of the time, an arbitrary JSON value otherwise."""
    return st.one_of(strategy, strategy, strategy, json_values)


def partial(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """Any subset of ``fields``, plus now and then a field nobody defined."""
    return st.builds(
        lambda chosen, extra: {**chosen, **extra},
        st.fixed_dictionaries({}, optional=fields),
        st.just({}) | st.dictionaries(st.text(max_size=8), json_values, max_size=1),
    )


edgy_http = partial(
    {
        "url": maybe(urls),
        "method": maybe(st.sampled_from(["GET", "POST", "post", "BREW", ""])),
        "headers": maybe(st.dictionaries(header_names, header_values, max_size=3)),
        "headersFrom": maybe(
            st.lists(
                st.fixed_dictionaries({"secretRef": maybe(partial({"name": maybe(st.text())}))}),
                max_size=2,
            )
        ),
        "body": maybe(st.text(max_size=20)),
        "successCodes": maybe(st.lists(st.integers(min_value=-5, max_value=1000), max_size=3)),
    }
)
edgy_queue = partial(
    {
        "stream": maybe(st.text(max_size=300)),
        "payload": json_values,
        "maxLen": maybe(st.integers(min_value=-5, max_value=2**64)),
    }
)
edgy_job = partial({"template": maybe(partial({"spec": json_values, "metadata": json_values}))})
edgy_fields: dict[str, st.SearchStrategy[Any]] = {
    "schedule": maybe(crons),
    "every": maybe(durations),
    "timeZone": maybe(zones),
    "jitter": maybe(durations),
    "timeout": maybe(durations),
    "suspend": json_values,
    "concurrencyPolicy": maybe(st.sampled_from(["Forbid", "Queue", "Never", "forbid"])),
    "maxQueued": maybe(st.integers(min_value=-2, max_value=200)),
    "dst": maybe(
        partial(
            {
                "nonexistent": maybe(st.sampled_from(["ShiftForward", "Skip", "skip"])),
                "ambiguous": maybe(st.sampled_from(["First", "Second", "Both", "Third"])),
            }
        )
    ),
    "missedRuns": maybe(
        partial(
            {
                "policy": maybe(st.sampled_from(["Skip", "RunOnce", "CatchUp", "Never"])),
                "maxCatchUp": maybe(st.integers(min_value=-2, max_value=2000)),
                "startingDeadline": maybe(durations),
            }
        )
    ),
    "history": maybe(
        partial(
            {
                "succeeded": maybe(st.integers(min_value=-2, max_value=200)),
                "failed": maybe(st.integers(min_value=-2, max_value=200)),
            }
        )
    ),
    "target": maybe(
        st.one_of(
            st.fixed_dictionaries({"http": maybe(edgy_http)}),
            st.fixed_dictionaries({"queue": maybe(edgy_queue)}),
            st.fixed_dictionaries({"job": maybe(edgy_job)}),
            partial({"http": edgy_http, "queue": edgy_queue, "job": edgy_job}),
        )
    ),
}

# Valid specs of every target, one to three fields of which are then replaced by an edgy
# value (or removed): a check that lets something through is found only past all the checks
# before it, so most examples must get that far.
valid_targets = st.sampled_from(
    [
        {"http": {"url": "http://127.0.0.1:8080/run"}},
        {"http": {"url": "https://svc.ns.svc:8443/x", "method": "PUT", "body": "{}",
                  "headers": {"X-Env": "prod"}, "headersFrom": [{"secretRef": {"name": "t"}}],
                  "successCodes": [200, 204]}},
        {"queue": {"stream": "reports:jobs"}},
        {"queue": {"stream": "s", "payload": {"kind": "nightly", "n": [1, 2.5, None]},
                   "maxLen": 10}},
        {"job": {"template": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}}},
        {"job": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": {}}}},
    ]
)  # fmt: skip
valid_specs = st.builds(
    lambda optional, timing, target: {**optional, **timing, "target": target},
    st.fixed_dictionaries(
        {},
        optional={
            "timeZone": st.sampled_from(["UTC", "Europe/Copenhagen", "America/New_York"]),
            "dst": st.just({"nonexistent": "Skip", "ambiguous": "Both"}),
            "missedRuns": st.just({"policy": "CatchUp", "maxCatchUp": 5, "startingDeadline": "1m"}),
            "concurrencyPolicy": st.sampled_from(["Forbid", "Allow", "Replace", "Queue"]),
            "maxQueued": st.integers(min_value=1, max_value=100),
            "timeout": st.sampled_from(["10s", "1m", "10m"]),
            "suspend": st.booleans(),
            "history": st.just({"succeeded": 0, "failed": 100}),
        },
    ),
    st.sampled_from(
        [
            {"every": "10s"},
            {"every": "10s", "jitter": "2s"},
            {"schedule": "30 2 * * *"},
            {"schedule": "*/15 * * * * *", "jitter": "5s"},
        ]
    ),
    valid_targets,
)
_REMOVED = object()


def _mutated(spec: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    mutated = {**spec, **changes}
    return {key: value for key, value in mutated.items() if value is not _REMOVED}


specs = st.builds(
    _mutated,
    valid_specs,
    st.lists(st.sampled_from(sorted(edgy_fields)), max_size=2, unique=True).flatmap(
        lambda names: st.fixed_dictionaries(
            {name: st.just(_REMOVED) | edgy_fields[name] for name in names}
        )
    ),
)


# -- the path under test -----------------------------------------------------------------------


class _IdleBatchJobWatcher:
    """The batch Jobs watch, minus the watching: the fuzz test only builds executors."""

    def start(self) -> None:
        pass


@pytest.fixture(scope="module")
def wiring() -> kinds.Targets:
    # Every capability present: a Redis (never connected to: clients connect lazily), the Jobs
    # API. The session and the secret reader are only stored by the executors built here.
    return kinds.Targets(
        {
            "http": http_wiring.HttpTargets(
                connections=object(),  # type: ignore[arg-type]
                secrets=object(),  # type: ignore[arg-type]
            ),
            "job": batch_job_wiring.BatchJobTargets(
                api=object(),  # type: ignore[arg-type]
                watcher=_IdleBatchJobWatcher(),  # type: ignore[arg-type]
            ),
            "queue": queue_wiring.QueueTargets(
                queue_stream.StreamClaims.from_url("redis://127.0.0.1:1/0")
            ),
        }
    )


def validate(raw: object, wiring: kinds.Targets) -> None:
    """What ``Reconciler.observe`` does with an object's spec before it arms anything."""
    # The reconciler reads `body.get("spec") or {}`: whatever the object holds under spec.
    checked = validation.check(
        raw or {},  # type: ignore[arg-type]
        uid=JOB.uid,
        hash_key=HASH_KEY,
        bounds=spec_bounds.DEFAULT_BOUNDS,
        now=NOW,
    )
    wiring.wire(JOB, checked.spec)


@FUZZ_SETTINGS
@given(raw=specs)
def test_a_spec_with_edgy_values_is_planned_or_refused_as_an_invalid_spec(
    wiring: kinds.Targets, raw: dict[str, Any]
) -> None:
    try:
        validate(raw, wiring)
    except InvalidSpecError as error:
        field = error.field  # the error must name the field users wrote
    else:
        field = "spec"
    assert field.startswith("spec")


@FUZZ_SETTINGS
@given(raw=specs)
def test_what_the_check_admits_the_wiring_finds_valid(
    wiring: kinds.Targets, raw: dict[str, Any]
) -> None:
    try:
        checked = validation.check(
            raw, uid=JOB.uid, hash_key=HASH_KEY, bounds=spec_bounds.DEFAULT_BOUNDS, now=NOW
        )
    except InvalidSpecError:
        return
    wiring.wire(JOB, checked.spec)  # an InvalidSpecError here fails the test


@FUZZ_SETTINGS
@given(raw=json_values)
def test_any_json_as_a_spec_is_refused_as_an_invalid_spec(
    wiring: kinds.Targets, raw: object
) -> None:
    with pytest.raises(InvalidSpecError):
        validate(raw, wiring)


def test_the_fuzzer_reaches_valid_specs_of_every_target(wiring: kinds.Targets) -> None:
    """The generator is worth something only if it reaches the executors: a valid spec of each
    target, drawn from the same strategy pieces, must pass the whole path."""
    for target in (
        {"http": {"url": "http://127.0.0.1:8080/run", "headers": {"X-Env": "prod"}}},
        {"queue": {"stream": "reports:jobs", "payload": {"kind": "nightly"}, "maxLen": 10}},
        {"job": {"template": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}}},
    ):
        validate({"schedule": "30 2 * * *", "timeZone": "Europe/Copenhagen", "target": target},
                 wiring)  # fmt: skip
