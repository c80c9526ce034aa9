"""How an iteration is recorded: its meta.json, the ordered write-set and commit it ends with
(for a step, and for `runner recover`'s end of an interrupted one), and what of its work the
run branch takes: only judged work (a pass), the rest kept on `refs/runner/attempts/<run>/<iter>`.

Decides the record's fields, which files are written in which order (run_state last), the chain
link and commit message, which changes go where, and whether a node's next iteration starts from
its previous attempt. Never reads a clock, writes a file or runs git: the shell does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from runner_core.changes.import_rules import RUNNER_DIR, Change, ImportDecision, import_note
from runner_core.guard.ratchet import TestFigures
from runner_core.history.records import ErrorKind, ExecutionRecord, TokenUsage, record_to_meta
from runner_core.iteration.effects import AttemptCommit, Commit, FileWrite, Place
from runner_core.iteration.plan import (
    IterationOutcome,
    advance_run_state,
    commit_subject,
    conclude_runner_error,
)
from runner_core.iteration.recovery import (
    PENDING_GUARD_LOG,
    Journal,
    JournalPhase,
    interrupted_message,
)
from runner_core.run.chain import chain_link, chain_seed
from runner_core.run.state import RunState, run_state_to_json, with_execution
from runner_core.run.trailers import iteration_commit_message
from runner_core.tree.model import AgentRole, AgentStatus, GuardOutcome, Node, nodes_by_id
from runner_core.tree.serialization import dumps_tree

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


@attrs.frozen(slots=True)
class Measured:
    """What the shell measured of an iteration, beside the core's outcome."""

    started_at: str
    ended_at: str
    duration_ms: int
    tokens: TokenUsage | None = None
    cost_usd: float | None = None


def execution_record(
    run_id: str,
    iteration: int,
    node: Node,
    role: AgentRole,
    outcome: IterationOutcome,
    counts: Mapping[str, int],
    measured: Measured,
    backend: str,
    tests: TestFigures | None = None,
    merge_rerun: bool = False,
    merge_session: str | None = None,
    job_base: str | None = None,
    prompt_template: str | None = None,
) -> ExecutionRecord:
    """meta.json of the iteration; `node` is the selected node as it was before it."""
    return ExecutionRecord(
        run_id=run_id,
        node_id=node.id,
        execution=counts.get(node.id, 0) + 1,
        iteration=iteration,
        role=role,
        started_at=measured.started_at,
        ended_at=measured.ended_at,
        status=outcome.status,
        guard=outcome.guard,
        error_kind=_error_kind(outcome),
        error=outcome.runner_error if outcome.runner_error is not None else outcome.agent_error,
        tokens=measured.tokens,
        cost_usd=measured.cost_usd,
        duration_ms=measured.duration_ms,
        attempts_before=node.attempts,
        attempts_after=attempts_after(outcome.tree, node),
        backend=backend,
        tests=tests,
        merge_rerun=merge_rerun,
        merge_session=merge_session,
        job_base=job_base,
        prompt_template=prompt_template,
    )


def _error_kind(outcome: IterationOutcome) -> ErrorKind | None:
    return None if outcome.error_kind is None else ErrorKind(outcome.error_kind)


def attempts_after(tree: Node, node: Node) -> int:
    found = nodes_by_id(tree).get(node.id)
    return node.attempts if found is None else found.attempts


@attrs.frozen(slots=True)
class IterationEnd:
    """What the final write-set is made of, for a step and for `runner recover` alike.

    `prev_snapshot_sha256`: tree.json's bytes were the previous iteration's tree.after.json,
    with this SHA-256, so tree.before.json links to that snapshot (while it still has those
    bytes) instead of being serialised again.
    """

    run_id: str
    iteration: int
    node_id: str
    prev_tree: Node
    prev_snapshot_sha256: str | None
    state: RunState
    outcome: IterationOutcome
    record: ExecutionRecord
    journal: Journal
    imported: ImportDecision = attrs.field(factory=ImportDecision)
    tests_json: str | None = None  # the guard's test outcomes, when it wrote a report
    guard_logs: tuple[tuple[str, str], ...] = ()  # baseline and rerun logs: (name, pending)
    # The commit `imported`'s changes were made from: an attempt not judged a pass is kept
    # on top of it (split_changes); None keeps none.
    attempt_base: str | None = None
    # The notes of an attempt not judged a pass carried onto a head that moved since its
    # start, when they were; None takes those of `imported` as they are.
    line_notes: tuple[Change, ...] | None = None


def final_write_set(end: IterationEnd) -> Commit:
    """The iteration log's files in order (meta, output, guard.log, snapshots), then run_state;
    the run branch's commit takes the iteration's files only when it was judged a pass."""
    outcome = end.outcome
    subject = commit_subject(end.run_id, end.iteration, end.node_id, outcome)
    split = split_changes(
        end.imported,
        judged_pass(outcome),
        attempt_ref(end.run_id, end.iteration),
        end.attempt_base,
        subject,
        end.line_notes,
    )
    end = attrs.evolve(end, record=attrs.evolve(end.record, attempt_files=split.attempt_files))
    after = dumps_tree(outcome.tree)  # text: the shell encodes it in slices as it writes
    files = [
        FileWrite(Place.STATE, "tree.json", after),
        FileWrite(Place.ITERATION, "meta.json", _json_bytes(record_to_meta(end.record))),
        FileWrite(
            Place.ITERATION,
            "output.json",
            _json_bytes({"status": outcome.status.value, "summary": outcome.summary}),
        ),
        FileWrite(Place.ITERATION, "guard.log", rename_from=PENDING_GUARD_LOG),
        *(FileWrite(Place.ITERATION, name, rename_from=source) for name, source in end.guard_logs),
    ]
    if end.tests_json is not None:
        files.append(FileWrite(Place.ITERATION, "tests.json", end.tests_json.encode("utf-8")))
    if outcome.agent_error is not None:
        text = f"agent error: {outcome.agent_error}\n"
        files.append(FileWrite(Place.ITERATION, "agent_error.log", text.encode("utf-8")))
    if outcome.runner_error is not None:
        text = f"runner error: {outcome.runner_error}\n"
        files.append(FileWrite(Place.ITERATION, "runner_error.log", text.encode("utf-8")))
    note = import_note(end.imported)
    if note is not None:
        files.append(FileWrite(Place.ITERATION, "import.log", note.encode("utf-8")))
    files.extend(_snapshots(end, after))
    # The chain links this commit to the last one through run_state: no git history is read.
    link = chain_link(end.state.chain or chain_seed(end.run_id), end.record, after)
    state = _json_bytes(run_state_to_json(attrs.evolve(end.state, chain=link)))
    files.append(FileWrite(Place.STATE, "run_state.json", state))
    return Commit(
        writing=attrs.evolve(end.journal, phase=JournalPhase.WRITING),
        files=tuple(files),
        committing=attrs.evolve(end.journal, phase=JournalPhase.COMMITTING, commit_subject=subject),
        message=iteration_commit_message(subject, end.record, link),
        changes=split.line,
        attempt=split.attempt,
    )


def _snapshots(end: IterationEnd, after: str) -> tuple[FileWrite, ...]:
    """tree.before.json and tree.after.json, read-only, sharing bytes that already exist.

    Only snapshots are ever linked, never tree.json: an agent editing tree.json in place
    cannot reach a snapshot through a link. A link names the SHA-256 its source must still have.
    """
    unchanged = end.outcome.tree is end.prev_tree
    if end.prev_snapshot_sha256 is not None:
        source = f"{end.iteration - 1}/tree.after.json"
        before = FileWrite(
            Place.ITERATION,
            "tree.before.json",
            read_only=True,
            link_from=source,
            fallback_tree=end.prev_tree,
            link_sha256=end.prev_snapshot_sha256,
        )
    else:
        before_bytes = after if unchanged else dumps_tree(end.prev_tree)
        before = FileWrite(Place.ITERATION, "tree.before.json", before_bytes, True)
    if not unchanged:
        return before, FileWrite(Place.ITERATION, "tree.after.json", after, True)
    # The tree is the one before: tree.after.json shares tree.before.json's bytes.
    sha256 = end.prev_snapshot_sha256 or hashlib.sha256(after.encode("utf-8")).hexdigest()
    link = f"{end.iteration}/tree.before.json"
    after_write = FileWrite(
        Place.ITERATION, "tree.after.json", after, True, link_from=link, link_sha256=sha256
    )
    return before, after_write


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def interrupted_end(
    journal: Journal,
    tree: Node,
    state: RunState,
    counts: Mapping[str, int],
    measured: Measured,
    backend: str,
) -> IterationEnd:
    """How `runner recover` ends an interrupted iteration: a runner error `interrupted`, the
    last commit's tree and every attempt kept."""
    node = nodes_by_id(tree)[journal.node_id]
    outcome = conclude_runner_error(tree, interrupted_message(journal))
    record = execution_record(
        journal.run_id,
        journal.iteration,
        node,
        journal.role,
        outcome,
        counts,
        measured,
        backend,
    )
    return IterationEnd(
        run_id=journal.run_id,
        iteration=journal.iteration,
        node_id=node.id,
        prev_tree=tree,
        prev_snapshot_sha256=None,
        state=with_execution(advance_run_state(state, outcome), node.id, counts),
        outcome=outcome,
        record=record,
        journal=journal,
    )
