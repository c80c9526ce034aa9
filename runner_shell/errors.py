"""The one error type the CLI turns into a single stderr line and an exit code, and that line."""

from __future__ import annotations

import os

# An error is one line: a longer one (every node of a huge tree broken) is cut, not flooded.
MESSAGE_MAX_CHARS = 10_000


class UserFacingError(Exception):
    """A problem the user can see and usually fix; `str()` is the whole line to print."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def one_line(message: str) -> str:
    """`message` cut to MESSAGE_MAX_CHARS, with line breaks and control characters escaped."""
    if len(message) > MESSAGE_MAX_CHARS:
        cut = len(message) - MESSAGE_MAX_CHARS
        message = f"{message[:MESSAGE_MAX_CHARS]} [... {cut} more characters]"
    if message.isprintable():
        return message
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in message
    )


def os_error_message(error: OSError) -> str | None:
    """What to print for an OSError a user can cause, or None when RUNNER_DEBUG wants it raised."""
    if os.environ.get("RUNNER_DEBUG"):
        return None
    where = f" ({error.filename})" if error.filename else ""
    return f"{error.strerror or error}{where}"


def internal_error_line(error: Exception) -> str:
    """The stderr line for a runner bug (an exception nobody turned into a user error)."""
    return (
        f"runner: {one_line(f'internal error: {type(error).__name__}: {error}')} "
        "(rerun with RUNNER_DEBUG=1 for a traceback)"
    )
