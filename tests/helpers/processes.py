"""What the process runner's tests ask of a finished process."""

from __future__ import annotations

from runner_shell.sandbox.processes import ProcessResult


def succeeded(result: ProcessResult) -> bool:
    """Whether the process exited 0 within its time."""
    return result.exit_code == 0 and not result.timed_out
