"""A slot lock with no extra infrastructure: compare-and-swap on the object's status.

Claiming a slot writes ``status.lastScheduleTime = slot`` with the object's resourceVersion as
precondition; the replica whose write lands owns the slot. A conflict only says the object
changed (a status write, another claim): re-read, and the slot belongs to another replica only
if ``lastScheduleTime`` has reached it; otherwise try again.
"""

from punctual.kube import objects, resources, status
from punctual.runtime import seams
from punctual.scheduling import timeline


class KubernetesLock:
    def __init__(
        self, *, api: status.StatusApi, cache: objects.ObjectCache, attempts: int = 8
    ) -> None:
        self._api = api
        self._cache = cache
        self._attempts = attempts

    async def claim(self, claim: seams.Claim) -> bool:
        try:
            body = self._cache.get(claim.job) or await self._read(claim)
            for _ in range(self._attempts):
                if not _is_ahead(claim, body):
                    return False
                try:
                    body = await self._api.patch(
                        claim.job,
                        {"lastScheduleTime": timeline.rfc3339(claim.slot)},
                        resource_version=body["metadata"]["resourceVersion"],
                    )
                except status.ConflictError:
                    body = await self._read(claim)
                    continue
                self._cache.remember(body)
                return True
        except status.GoneError:
            return False
        except status.UnavailableError as error:
            raise seams.LockUnavailableError(str(error)) from error
        raise seams.LockUnavailableError(f"{self._attempts} conflicting writes in a row")

    async def _read(self, claim: seams.Claim) -> resources.Body:
        body = await self._api.read(claim.job)
        self._cache.remember(body)
        return body


def _is_ahead(claim: seams.Claim, body: resources.Body) -> bool:
    """Whether the slot is newer than the object's high-water mark."""
    last = body.get("status", {}).get("lastScheduleTime")
    return last is None or claim.slot > timeline.parse_rfc3339(last)
