"""Whose error each failure inside an iteration is: the runner's or the agent's.

Decides, for every way an iteration can go wrong, whether it is a runner error (every attempt
kept, never shown to the agent) or an agent error (an attempt used, told to the next one).
Never detects a failure: the machine does, from the results fed back.
"""

from __future__ import annotations

import enum

from pyrsistent import PMap, pmap

from runner_core.history.records import ErrorKind


class Failure(enum.StrEnum):
    """What can go wrong inside an iteration; ERROR_KIND says whose error it is."""

    AGENT_NOT_STARTED = "agent process could not start"
    AGENT_PROCESS = "agent process exited non-zero, was killed or timed out"
    AGENT_OUTPUT = "agent output unparseable or not of its schema"
    GUARD_NOT_STARTED = "guard could not be spawned"
    GUARD_NO_TIME = "the iteration's deadline passed before the guard could run"
    IO = "I/O failure"
    TREE_REJECTED = "tree invalid after the agent, immutability, status or child additions"
    DECOMPOSITION_REJECTED = "decomposer's children rejected"
    OUTSIDE_CHANGE = "the operator's commits moved the run branch during the agent or guard"
    RATE_LIMITED = "agent hit a usage or rate limit"
    INTERRUPTED = "interrupted by a signal"
    IMPORT_REFUSED = "the scratch checkout held what is never imported"
    WAIT_FILE_REJECTED = "the agent's wait file is not a wait"
    OUTPUT_PLANTED = "the agent's output file is a symlink, FIFO or directory"
    MERGE_CONFLICT = "a parallel job's tree or files do not merge onto the run branch"
    MERGE_GUARD = "a parallel job's guard fails once the work merged meanwhile is in"
    SANDBOX_LIMIT = "the agent or its guard reached a limit of [sandbox]"
    SETUP_FAILED = "[sandbox] setup failed on the agent's change to one of its inputs"


# Beside state_update.TRANSITIONS: a runner error keeps every attempt and is never shown to
# the agent; an agent error costs an attempt and reaches the next one through history.md.
ERROR_KIND: PMap[Failure, ErrorKind] = pmap(
    {
        Failure.AGENT_NOT_STARTED: ErrorKind.RUNNER,
        Failure.AGENT_PROCESS: ErrorKind.RUNNER,
        Failure.AGENT_OUTPUT: ErrorKind.RUNNER,
        Failure.GUARD_NOT_STARTED: ErrorKind.RUNNER,
        Failure.GUARD_NO_TIME: ErrorKind.RUNNER,
        Failure.IO: ErrorKind.RUNNER,
        Failure.TREE_REJECTED: ErrorKind.AGENT,
        Failure.DECOMPOSITION_REJECTED: ErrorKind.AGENT,
        # The agent works in a scratch checkout of its own: what moved the run's is not it.
        Failure.OUTSIDE_CHANGE: ErrorKind.RUNNER,
        Failure.RATE_LIMITED: ErrorKind.RUNNER,
        Failure.INTERRUPTED: ErrorKind.RUNNER,
        Failure.IMPORT_REFUSED: ErrorKind.AGENT,
        Failure.WAIT_FILE_REJECTED: ErrorKind.AGENT,
        # The runner never makes one: the agent put it there, which no CLI failure explains.
        Failure.OUTPUT_PLANTED: ErrorKind.AGENT,
        # Another job's work met this one's: no attempt is used, the leaf runs again.
        Failure.MERGE_CONFLICT: ErrorKind.RUNNER,
        Failure.MERGE_GUARD: ErrorKind.RUNNER,
        # A fork bomb, a memory bomb, a full /tmp or a checkout grown past disk_mb: the agent's
        # work did it, also when its guard (running the agent's code) is what reached it.
        Failure.SANDBOX_LIMIT: ErrorKind.AGENT,
        # The agent changed what setup reads (package.json) so that setup no longer succeeds.
        Failure.SETUP_FAILED: ErrorKind.AGENT,
    }
)


# A parallel job whose work met another's: its leaf runs again on the new head. The loop does
# not count it as the runner failing, and the report totals what such reruns cost.
MERGE_RERUNS = frozenset({Failure.MERGE_CONFLICT, Failure.MERGE_GUARD})


def runner_error_text(failure: Failure, message: str) -> str:
    """What a runner error records: `message` on one line (whitespace runs collapsed), or the
    failure's own name when the message is blank."""
    return " ".join(message.split()) or failure.value
