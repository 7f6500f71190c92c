"""``overlap.admit``: the verdict on a run, from the runs it meets and the job's policy to what
is done and what its record says, as one table."""

import pytest

from punctual.scheduling import overlap

LIMITS = overlap.Limits(max_queued=1, max_active=3, max_namespace_active=5, max_namespace_queued=4)


def meeting(
    *,
    here: int = 0,
    elsewhere: int = 0,
    queued: int = 0,
    namespace_here: int = 0,
    namespace_queued: int = 0,
) -> overlap.InFlight:
    return overlap.InFlight(
        here=here,
        elsewhere=elsewhere,
        queued=queued,
        namespace="reports",
        namespace_here=namespace_here,
        namespace_queued=namespace_queued,
        replica="replica-a",
    )


@pytest.mark.parametrize(
    ("policy", "meets", "action", "overlapped", "why_skipped"),
    [
        pytest.param(
            overlap.ConcurrencyPolicy.FORBID,
            meeting(),
            overlap.Action.START,
            False,
            "",
            id="idle-starts",
        ),
        pytest.param(
            overlap.ConcurrencyPolicy.FORBID,
            meeting(here=1, namespace_here=1),
            overlap.Action.SKIP,
            True,
            "1 run(s) active, concurrencyPolicy Forbid",
            id="forbid-skips-behind-a-run-here",
        ),
        pytest.param(
            overlap.ConcurrencyPolicy.FORBID,
            meeting(elsewhere=2),
            overlap.Action.SKIP,
            True,
            "2 run(s) active, concurrencyPolicy Forbid",
            id="forbid-counts-the-runs-elsewhere",
        ),
        pytest.param(
            overlap.ConcurrencyPolicy.ALLOW,
            meeting(here=1, namespace_here=1),
            overlap.Action.START,
            True,
            "",
            id="allow-starts-alongside",
        ),
        pytest.param(
            overlap.ConcurrencyPolicy.ALLOW,
            meeting(here=2, elsewhere=1, namespace_here=2),
            overlap.Action.SKIP_AT_LIMIT,
            True,
            "3 run(s) active, the most the operator allows one job",
            id="allow-stops-at-the-job-cap",
        ),
        pytest.param(
            overlap.ConcurrencyPolicy.ALLOW,
            meeting(namespace_here=5),
            overlap.Action.SKIP_AT_NAMESPACE_LIMIT,
            False,
            "5 run(s) of namespace reports active on replica replica-a, the most the operator "
            "allows one namespace",
            id="an-idle-job-of-a-full-namespace-is-skipped",
        ),
        pytest.param(
            overlap.ConcurrencyPolicy.REPLACE,
            meeting(here=1, namespace_here=5),
            overlap.Action.REPLACE,
            True,
            "",
            id="replace-here-takes-the-place-it-frees",
        ),
        pytest.param(
            overlap.ConcurrencyPolicy.QUEUE,
            meeting(here=1, namespace_here=1),
            overlap.Action.ENQUEUE,
            True,
            "",
            id="queue-waits",
        ),
        pytest.param(
            overlap.ConcurrencyPolicy.QUEUE,
            meeting(here=1, queued=1, namespace_here=1),
            overlap.Action.SKIP,
            True,
            "1 run(s) active, concurrencyPolicy Queue",
            id="queue-full-skips",
        ),
        pytest.param(
            overlap.ConcurrencyPolicy.QUEUE,
            meeting(here=1, namespace_here=1, namespace_queued=4),
            overlap.Action.SKIP_AT_NAMESPACE_QUEUE_LIMIT,
            True,
            "4 run(s) of namespace reports queued on replica replica-a, the most the operator "
            "allows one namespace",
            id="queue-of-a-namespace-with-its-queues-full-skips",
        ),
        pytest.param(
            overlap.ConcurrencyPolicy.FORBID,
            meeting(queued=1),
            overlap.Action.SKIP,
            True,
            "0 run(s) active, concurrencyPolicy Forbid",
            id="a-queued-run-alone-is-an-overlap",
        ),
    ],
)
def test_the_verdict_on_a_run(
    policy: overlap.ConcurrencyPolicy,
    meets: overlap.InFlight,
    action: overlap.Action,
    overlapped: bool,
    why_skipped: str,
) -> None:
    assert overlap.admit(policy, meets, LIMITS) == overlap.Verdict(
        action=action, overlapped=overlapped, why_skipped=why_skipped
    )
