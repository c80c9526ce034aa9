"""The iteration's end as one ordered write-set and its commit, for a step and a recovery alike.

Decides which files are written, in which order (tree.json, meta, output, the guard logs,
tests.json, the error logs, the snapshots, run_state last), which snapshots are hard links to
bytes that already exist, the chain link and the commit message. Never writes a file: the
shell's store does.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import attrs

from runner_core.changes.import_rules import Change, ImportDecision, import_note
from runner_core.history.records import ExecutionRecord, record_to_meta
from runner_core.iteration.attempts import attempt_ref, judged_pass, split_changes
from runner_core.iteration.effects import Commit, FileWrite, Place
from runner_core.iteration.plan import IterationOutcome, commit_subject
from runner_core.iteration.recovery import PENDING_GUARD_LOG, Journal, JournalPhase
from runner_core.run.chain import chain_link, chain_seed
from runner_core.run.state import RunState, run_state_to_json
from runner_core.run.trailers import iteration_commit_message
from runner_core.tree.model import Node
from runner_core.tree.serialization import dumps_tree


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
    # on top of it (attempts.py); None keeps none.
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
