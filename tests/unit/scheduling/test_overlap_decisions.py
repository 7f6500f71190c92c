"""``overlap.decide``: what a slot does while earlier runs of its job are still going."""

import pytest

from punctual.scheduling import overlap

FORBID = overlap.ConcurrencyPolicy.FORBID
ALLOW = overlap.ConcurrencyPolicy.ALLOW
REPLACE = overlap.ConcurrencyPolicy.REPLACE
QUEUE = overlap.ConcurrencyPolicy.QUEUE
START = overlap.Action.START
SKIP = overlap.Action.SKIP
SKIP_AT_LIMIT = overlap.Action.SKIP_AT_LIMIT
ENQUEUE = overlap.Action.ENQUEUE
SKIP_AT_NAMESPACE_LIMIT = overlap.Action.SKIP_AT_NAMESPACE_LIMIT
SKIP_AT_NAMESPACE_QUEUE_LIMIT = overlap.Action.SKIP_AT_NAMESPACE_QUEUE_LIMIT
ROOMY_QUEUES = {"namespace_queued": 0, "max_namespace_queued": 100}
"""A namespace far below its cap on queued runs."""
ROOMY = {"namespace_active": 0, "max_namespace_active": 100, **ROOMY_QUEUES}
"""A namespace far below its caps: the job's policy and cap alone decide."""


class TestAnIdleJobAlwaysStarts:
    @pytest.mark.parametrize("policy", list(overlap.ConcurrencyPolicy), ids=str)
    @pytest.mark.parametrize("max_queued", [0, 1, 5])
    def test_nothing_running_nothing_queued(
        self, policy: overlap.ConcurrencyPolicy, max_queued: int
    ) -> None:
        assert (
            overlap.decide(
                policy,
                active=0,
                active_here=0,
                queued=0,
                max_queued=max_queued,
                max_active=1,
                **ROOMY,
            )
            is START
        )


class TestABusyJobFollowsItsConcurrencyPolicy:
    @pytest.mark.parametrize(
        ("policy", "active", "queued", "max_queued", "action"),
        [
            pytest.param(FORBID, 1, 0, 1, SKIP, id="forbid-skips-and-counts"),
            pytest.param(FORBID, 3, 0, 1, SKIP, id="forbid-with-several-running"),
            pytest.param(ALLOW, 1, 0, 1, START, id="allow-runs-alongside"),
            pytest.param(ALLOW, 5, 0, 1, START, id="allow-has-no-limit-of-its-own"),
            pytest.param(
                REPLACE, 1, 0, 1, overlap.Action.REPLACE, id="replace-cancels-the-running"
            ),
            pytest.param(REPLACE, 2, 0, 1, overlap.Action.REPLACE, id="replace-cancels-them-all"),
            pytest.param(QUEUE, 1, 0, 1, ENQUEUE, id="queue-while-there-is-room"),
            pytest.param(QUEUE, 1, 1, 1, SKIP, id="queue-full-skips"),
            pytest.param(QUEUE, 1, 2, 3, ENQUEUE, id="queue-of-three-with-two-waiting"),
            pytest.param(QUEUE, 1, 3, 3, SKIP, id="queue-of-three-full"),
            pytest.param(QUEUE, 1, 0, 0, SKIP, id="queue-of-zero-is-like-forbid"),
            pytest.param(QUEUE, 0, 1, 2, ENQUEUE, id="queue-waits-behind-the-queued-one"),
        ],
    )
    def test_the_action(
        self,
        policy: overlap.ConcurrencyPolicy,
        active: int,
        queued: int,
        max_queued: int,
        action: overlap.Action,
    ) -> None:
        decided = overlap.decide(
            policy,
            active=active,
            active_here=active,
            queued=queued,
            max_queued=max_queued,
            max_active=10,
            **ROOMY,
        )
        assert decided is action


class TestThePlatformsCapOnRunsInFlightIsAbovePolicy:
    @pytest.mark.parametrize(
        ("policy", "active", "queued", "max_queued", "action"),
        [
            pytest.param(ALLOW, 9, 0, 1, START, id="allow-starts-below-the-cap"),
            pytest.param(ALLOW, 10, 0, 1, SKIP_AT_LIMIT, id="allow-at-the-cap-skips"),
            pytest.param(ALLOW, 2228, 0, 1, SKIP_AT_LIMIT, id="allow-past-the-cap-skips"),
            pytest.param(FORBID, 10, 0, 1, SKIP, id="forbid-skips-as-ever"),
            pytest.param(
                REPLACE, 10, 0, 1, overlap.Action.REPLACE, id="replace-cancels-them-all-first"
            ),
            pytest.param(QUEUE, 10, 0, 1, ENQUEUE, id="queue-waits-behind-them"),
        ],
    )
    def test_the_action(
        self,
        policy: overlap.ConcurrencyPolicy,
        active: int,
        queued: int,
        max_queued: int,
        action: overlap.Action,
    ) -> None:
        decided = overlap.decide(
            policy,
            active=active,
            active_here=active,
            queued=queued,
            max_queued=max_queued,
            max_active=10,
            **ROOMY,
        )
        assert decided is action

    @pytest.mark.parametrize("policy", list(overlap.ConcurrencyPolicy), ids=str)
    def test_an_idle_job_starts_whatever_the_cap(self, policy: overlap.ConcurrencyPolicy) -> None:
        decided = overlap.decide(
            policy, active=0, active_here=0, queued=0, max_queued=1, max_active=1, **ROOMY
        )
        assert decided is START


class TestTheCapOnANamespacesRunsInFlightHereIsAbovePolicyToo:
    """A namespace with 100 runs in flight on this replica (its cap): a slot that would add one
    more is skipped, one that takes the place of its job's run here is not."""

    @pytest.mark.parametrize(
        ("policy", "active", "active_here", "namespace_active", "action"),
        [
            pytest.param(ALLOW, 0, 0, 99, START, id="an-idle-job-starts-below-the-namespace-cap"),
            pytest.param(
                ALLOW, 0, 0, 100, SKIP_AT_NAMESPACE_LIMIT, id="an-idle-job-at-the-cap-skips"
            ),
            pytest.param(FORBID, 0, 0, 100, SKIP_AT_NAMESPACE_LIMIT, id="whatever-its-policy"),
            pytest.param(ALLOW, 0, 0, 5000, SKIP_AT_NAMESPACE_LIMIT, id="past-the-cap-skips-too"),
            pytest.param(ALLOW, 3, 3, 100, SKIP_AT_NAMESPACE_LIMIT, id="allow-alongside"),
            pytest.param(ALLOW, 10, 10, 100, SKIP_AT_LIMIT, id="the-jobs-own-cap-is-named-first"),
            pytest.param(FORBID, 1, 1, 100, SKIP, id="forbid-skips-by-its-policy-as-ever"),
            pytest.param(
                REPLACE,
                1,
                1,
                100,
                overlap.Action.REPLACE,
                id="replace-takes-the-place-of-its-run-here",
            ),
            pytest.param(
                REPLACE,
                1,
                0,
                100,
                SKIP_AT_NAMESPACE_LIMIT,
                id="replacing-runs-elsewhere-would-add-one-here",
            ),
            pytest.param(
                REPLACE, 1, 0, 99, overlap.Action.REPLACE, id="replace-elsewhere-with-room"
            ),
            pytest.param(QUEUE, 1, 1, 100, ENQUEUE, id="queue-waits-for-its-runs-place"),
            pytest.param(QUEUE, 1, 0, 100, ENQUEUE, id="queue-behind-runs-elsewhere-waits-too"),
        ],
    )
    def test_the_action(
        self,
        policy: overlap.ConcurrencyPolicy,
        active: int,
        active_here: int,
        namespace_active: int,
        action: overlap.Action,
    ) -> None:
        decided = overlap.decide(
            policy,
            active=active,
            active_here=active_here,
            queued=0,
            max_queued=1,
            max_active=10,
            namespace_active=namespace_active,
            max_namespace_active=100,
            **ROOMY_QUEUES,
        )
        assert decided is action


class TestTheCapOnANamespacesQueuedRunsHereIsAbovePolicyToo:
    """A namespace with 1,000 runs queued on this replica (its cap): a slot its job's policy
    would queue is skipped, whatever room its job's own queue has; a slot that would not be
    queued is decided as ever."""

    @pytest.mark.parametrize(
        ("policy", "active", "queued", "namespace_queued", "action"),
        [
            pytest.param(QUEUE, 1, 0, 999, ENQUEUE, id="queues-below-the-namespace-cap"),
            pytest.param(QUEUE, 1, 0, 1000, SKIP_AT_NAMESPACE_QUEUE_LIMIT, id="at-the-cap-skips"),
            pytest.param(
                QUEUE, 1, 0, 4000, SKIP_AT_NAMESPACE_QUEUE_LIMIT, id="past-the-cap-skips-too"
            ),
            pytest.param(
                QUEUE,
                0,
                1,
                1000,
                SKIP_AT_NAMESPACE_QUEUE_LIMIT,
                id="behind-its-own-queued-run-skips",
            ),
            pytest.param(QUEUE, 1, 5, 1000, SKIP, id="a-full-queue-of-its-own-is-its-policys"),
            pytest.param(QUEUE, 0, 0, 1000, START, id="an-idle-job-starts"),
            pytest.param(FORBID, 1, 0, 1000, SKIP, id="forbid-skips-by-its-policy-as-ever"),
            pytest.param(ALLOW, 1, 0, 1000, START, id="allow-starts-alongside"),
            pytest.param(REPLACE, 1, 0, 1000, overlap.Action.REPLACE, id="replace-queues-nothing"),
        ],
    )
    def test_the_action(
        self,
        policy: overlap.ConcurrencyPolicy,
        active: int,
        queued: int,
        namespace_queued: int,
        action: overlap.Action,
    ) -> None:
        decided = overlap.decide(
            policy,
            active=active,
            active_here=active,
            queued=queued,
            max_queued=5,
            max_active=10,
            namespace_active=active,
            max_namespace_active=100,
            namespace_queued=namespace_queued,
            max_namespace_queued=1000,
        )
        assert decided is action


class TestThePolicyNamesAreTheApiNames:
    def test_values(self) -> None:
        assert [policy.value for policy in overlap.ConcurrencyPolicy] == [
            "Forbid",
            "Allow",
            "Replace",
            "Queue",
        ]
