"""What goes wrong between the loop and the machines that run its jobs, importable without the
Temporal SDK: each error's line is the one line a user reads."""

from __future__ import annotations


class RemoteError(Exception):
    """A remote job or its executor failed; `line` says what, in one line."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line


class JobRefused(RemoteError):
    """A job a worker will not run, or a result the coordinator will not merge: never retried."""


class JobFailed(RemoteError):
    """A job whose executor gave up on it."""


class TemporalUnavailable(RemoteError):
    """The Temporal server cannot be reached."""
