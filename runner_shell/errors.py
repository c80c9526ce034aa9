"""The one error type the CLI turns into a single stderr line and an exit code."""

from __future__ import annotations


class UserFacingError(Exception):
    """A problem the user can see and usually fix; `str()` is the whole line to print."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code
