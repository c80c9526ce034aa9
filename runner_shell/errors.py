"""The one error type the CLI turns into a single stderr line and an exit code, and that line."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from runner_core.run.exit_codes import ExitCode
from runner_core.views.text import error_line

# What a process killed by SIGPIPE reports (128 + 13), as git and rg do when their reader quits.
STDOUT_CLOSED_EXIT = 141


class UserFacingError(Exception):
    """A problem the user can see and usually fix; `str()` is the whole line to print."""

    def __init__(self, message: str, exit_code: int = ExitCode.ERROR) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def failure_line(message: str) -> str:
    """The one stderr line of an error a user can cause."""
    return f"runner: {error_line(message)}"


def os_error_message(error: OSError) -> str | None:
    """What to print for an OSError a user can cause, or None when RUNNER_DEBUG wants it raised."""
    if os.environ.get("RUNNER_DEBUG"):
        return None
    where = f" ({error.filename})" if error.filename else ""
    return f"{error.strerror or error}{where}"


def internal_error_line(error: Exception) -> str:
    """The stderr line for a runner bug (an exception nobody turned into a user error)."""
    return (
        f"{failure_line(f'internal error: {type(error).__name__}: {error}')} "
        "(rerun with RUNNER_DEBUG=1 for a traceback)"
    )


def exit_for_closed_stdout() -> NoReturn:
    """The reader of stdout went away (`runner status | head -4`): stop at once, silently.

    Python ignores SIGPIPE and raises BrokenPipeError instead; stdout is pointed at /dev/null
    so that the interpreter's last flush of what is still buffered finds a reader.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    sys.exit(STDOUT_CLOSED_EXIT)
