"""A slot lock wrapper that counts claims: won, lost, forgot (won only to be counted missed: the
backend cannot prove the slot unclaimed), or error (the backend gave no answer)."""

from punctual import metrics
from punctual.contracts import protocols, records


class MeteredLock:
    """``protocols.SlotLock`` around ``inner``, counting into ``punctual_lock_claims_total``."""

    def __init__(self, inner: protocols.SlotLock, *, meters: metrics.Metrics, backend: str) -> None:
        self._inner = inner
        self._backend = backend
        meters.claim_outcomes(backend)
        # Bound once: ``labels()`` takes a lock and parses its arguments on every call.
        self._counters = {
            outcome: meters.lock_claims.labels(backend=backend, outcome=outcome)
            for outcome in metrics.CLAIM_OUTCOMES
        }

    def __repr__(self) -> str:
        return f"MeteredLock({self._inner!r})"

    async def claim(self, claim: records.Claim) -> bool:
        try:
            won = await self._inner.claim(claim)
        except protocols.LockForgotError:
            self._count("forgot")
            raise
        except Exception:
            # Any exception, not only LockUnavailableError: either way the claim got no
            # answer, and a backend bug should show on the dashboard too. Cancellation
            # (a BaseException) is not a claim outcome and is not counted.
            self._count("error")
            raise
        self._count("won" if won else "lost")
        return won

    def _count(self, outcome: str) -> None:
        self._counters[outcome].inc()


class MeteredNotices:
    """``protocols.ClaimNotices`` around ``inner``, counting into
    ``punctual_claim_notices_total``."""

    def __init__(self, inner: protocols.ClaimNotices, *, meters: metrics.Metrics) -> None:
        self._inner = inner
        self._counters = {
            outcome: meters.claim_notices.labels(outcome=outcome)
            for outcome in metrics.NOTICE_OUTCOMES
        }

    def claimed(self, notice: records.ClaimNotice) -> bool:
        taken = self._inner.claimed(notice)
        self._counters["taken" if taken else "ignored"].inc()
        return taken

    def malformed(self) -> None:
        self._counters["malformed"].inc()
        self._inner.malformed()
