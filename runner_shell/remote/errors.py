"""What can go wrong moving a job to a worker and its result back, as the rest of runner_shell
catches it without importing temporalio.

Each error carries the one line a user or the loop reports; none decides what happens next.
"""

from __future__ import annotations

from runner_core.run.exit_codes import ExitCode
from runner_shell.errors import UserFacingError


class TemporalUnavailable(UserFacingError):
    """The Temporal server did not answer; the line names its address."""

    def __init__(self, address: str, reason: str) -> None:
        super().__init__(f"temporal server at {address} is unavailable: {reason}", ExitCode.ERROR)
        self.address = address


class RemoteUnavailable(UserFacingError):
    """The git remote the loop and its workers share did not answer; the line names it."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"git remote {url} is unavailable: {reason}", ExitCode.ERROR)
        self.url = url


class TemporalRefused(UserFacingError):
    """The Temporal server answered a call with an error (an unknown namespace, say)."""

    def __init__(self, address: str, reason: str) -> None:
        super().__init__(f"temporal server at {address} refused: {reason}", ExitCode.ERROR)
        self.address = address


class JobFailed(Exception):
    """A job's workflow ended without a result; `str()` is the one-line reason."""

    def __init__(self, job_id: str, reason: str) -> None:
        super().__init__(f"job {job_id} failed: {reason}")
        self.job_id = job_id
        self.reason = reason


class JobRefused(Exception):
    """Raised by a job that must not be tried again (a bad request, not a lost worker); the
    worker reports it as a failure that Temporal does not retry."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line
