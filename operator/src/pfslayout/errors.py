"""One error type for bad input, so every entry point (CLI, operator, agent) reports it the same way."""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input: names the offending field and says how to fix it.

    ``str(err)`` is a single line such as ``--g: must be between 1 and n=8 (got 0); pass a divisor of n``
    so the CLI can print it as-is and the operator can put it into a status condition.
    """

    def __init__(self, field: str, problem: str, fix: str | None = None) -> None:
        self.field = field
        self.problem = problem
        self.fix = fix
        message = f"{field}: {problem}"
        if fix:
            message += f"; {fix}"
        super().__init__(message)
