"""The runs in flight on this replica per namespace, and the cap on them."""


class NamespaceRuns:
    """The runs in flight on this replica per namespace, summed over its jobs, and the cap on
    them: one for every job of a supervisor, counted where a run starts and where it is
    recorded, so that a slot's decision reads its namespace's count in one look, whatever the
    number of jobs. A namespace leaves the count when its last run ends."""

    def __init__(self, *, limit: int) -> None:
        self.limit = limit
        self._counts: dict[str, int] = {}

    def active(self, namespace: str) -> int:
        return self._counts.get(namespace, 0)

    def has_room(self, namespace: str) -> bool:
        return self.active(namespace) < self.limit

    def started(self, namespace: str) -> None:
        self._counts[namespace] = self.active(namespace) + 1

    def ended(self, namespace: str) -> None:
        left = self.active(namespace) - 1
        if left > 0:
            self._counts[namespace] = left
        else:
            self._counts.pop(namespace, None)
