"""The one error type of the scheduling core: a spec field with an invalid value."""


class InvalidSpecError(ValueError):
    """A spec field holds a value the scheduler cannot use.

    ``field`` is the path users wrote (``spec.schedule``, ``spec.missedRuns.startingDeadline``),
    so the message can be shown as-is in a status condition, an Event or a CLI error.
    """

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem
