"""The run branch holds only judged work: what an iteration not judged a pass keeps, and where.

Decides which of an iteration's imported changes its commit on the run branch takes (all of
them after `status=done guard=pass`, else only those under `.runner/`, the notes), which go to
a commit of their own on `refs/runner/attempts/<run>/<iter>` (parented on the commit the
agent's checkout started from), whether the next iteration of a node starts from its previous
attempt's files, and what its prompt is told of them. Never reads or writes git: the shell
makes the commits, resolves the refs and resets the checkout.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from runner_core.changes.import_rules import RUNNER_DIR, Change, ImportDecision
from runner_core.history.execution import ErrorKind, ExecutionRecord
from runner_core.iteration.effects import AttemptCommit
from runner_core.iteration.plan import IterationOutcome
from runner_core.tree.model import AgentStatus, GuardOutcome

ATTEMPTS_PREFIX = "refs/runner/attempts/"
# How many conflicting paths the prompt names when an attempt's files do not carry over.
NAMED_CONFLICTS = 10


def attempt_ref(run_id: str, iteration: int) -> str:
    """The ref holding the files of iteration `iteration` when it was not judged a pass."""
    return f"{ATTEMPTS_PREFIX}{run_id}/{iteration}"


def is_runner_path(path: str) -> bool:
    """Whether `path` is under `.runner/`: the only files a commit not judged a pass changes."""
    return path == RUNNER_DIR or path.startswith(RUNNER_DIR + "/")


def judged_pass(outcome: IterationOutcome) -> bool:
    """Whether the iteration's files may join the run branch: done, and its guard passed."""
    return (
        outcome.status is AgentStatus.DONE
        and outcome.guard is GuardOutcome.PASS
        and outcome.agent_error is None
        and outcome.runner_error is None
    )


@attrs.frozen(slots=True)
class CommitSplit:
    """What the run branch's commit takes, and the attempt's commit, when there is one."""

    line: tuple[Change, ...]
    attempt: AttemptCommit | None = None

    @property
    def attempt_files(self) -> int:
        """How many of the attempt's changed paths are outside `.runner/`."""
        if self.attempt is None:
            return 0
        return sum(1 for change in self.attempt.changes if not is_runner_path(change.path))


def split_changes(
    imported: ImportDecision,
    passed: bool,
    ref: str,
    base: str | None,
    subject: str,
    line_notes: Sequence[Change] | None = None,
) -> CommitSplit:
    """The run branch's changes and the attempt's commit of an iteration's import (its changes
    made from `base`). A pass takes them all onto the line; otherwise the line takes only the
    notes (`line_notes` when the shell carried them onto a later head), and every change, or
    every one a refused import set aside, goes to the attempt's commit when one of them is
    outside `.runner/`."""
    changes = imported.changes
    if passed:
        return CommitSplit(changes)
    notes = tuple(change for change in changes if is_runner_path(change.path))
    line = notes if line_notes is None else tuple(line_notes)
    kept = changes or imported.set_aside
    if base is None or all(is_runner_path(change.path) for change in kept):
        return CommitSplit(line)
    message = f"runner attempt: {subject.removeprefix('chore(loop): ')}\n"
    return CommitSplit(line, AttemptCommit(ref, base, kept, message))


# ---------------------------------------------------------------- the next attempt


def resume_from(node_id: str, previous: ExecutionRecord | None) -> int | None:
    """The iteration whose attempt's files the node's next iteration starts from: the node's
    previous iteration, when it left files on its attempt ref; else None (start from the line)."""
    if previous is None or previous.node_id != node_id or previous.attempt_files == 0:
        return None
    return previous.iteration


@attrs.frozen(slots=True)
class Resumed:
    """What the shell made of the previous attempt's files: carried into the checkout, or not
    (the paths that conflict with the run branch as it is now)."""

    iteration: int
    reason: str
    conflicts: tuple[str, ...] = ()


def failure_reason(record: ExecutionRecord) -> str:
    """Why an iteration was not judged a pass, as the next attempt's prompt says it."""
    if record.error is not None and record.error_kind is ErrorKind.AGENT:
        return record.error
    if record.error is not None:
        return f"the runner stopped it: {record.error}"
    if record.status is AgentStatus.DONE and record.guard is GuardOutcome.FAIL:
        return "the guard failed on them (its failure is below)"
    if record.status is AgentStatus.RETRY:
        return "you answered retry (your summary is below)"
    return f"it ended with status={record.status.value} guard={record.guard.value}"


def resumed_note(resumed: Resumed) -> str:
    """The prompt's words on the previous attempt's files."""
    where = f"iteration {resumed.iteration}"
    if not resumed.conflicts:
        return (
            f"Your previous attempt's files ({where}) are in your checkout; it was not "
            f"committed to the run because {resumed.reason}. Keep what is right, fix what "
            "is not.\n"
        )
    shown = ", ".join(resumed.conflicts[:NAMED_CONFLICTS])
    more = len(resumed.conflicts) - NAMED_CONFLICTS
    tail = f" and {more} more" if more > 0 else ""
    return (
        f"Your previous attempt's files ({where}) are not in your checkout: they conflict "
        f"with work merged since ({shown}{tail}); you start from the run as it is now. It "
        f"was not committed because {resumed.reason}.\n"
    )
