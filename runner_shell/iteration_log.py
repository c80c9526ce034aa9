"""The iteration log (SPEC §6) on disk: writing one iteration's record, reading a run's history.

Writes in SPEC §6's order (meta → output → guard.log → snapshots), every file atomically, then
run_state and the commit, advancing the journal so a kill at any point is recoverable. Reading
rebuilds the execution history from the iteration directories alone; a damaged or missing
file is reported and skipped, never fatal.
"""

from __future__ import annotations

import datetime
import json
import os
import time
from pathlib import Path

import attrs

from runner_core import (
    IterationOutcome,
    Node,
    RunState,
    advance_run_state,
    commit_message,
    dumps_tree,
    iter_preorder,
)
from runner_core.history import (
    DamagedRecord,
    ErrorKind,
    ExecutionHistory,
    ExecutionRecord,
    TokenUsage,
    record_from_meta,
    record_to_meta,
)
from runner_core.iteration import commit_subject
from runner_core.model import AgentRole
from runner_core.recovery import Journal
from runner_shell.errors import UserFacingError
from runner_shell.files import atomic_write_text
from runner_shell.git import GitError, Repo
from runner_shell.layout import RunnerPaths
from runner_shell.lock_and_journal import clear_journal, write_journal
from runner_shell.store import canonical_json, write_run_state, write_tree

PENDING_GUARD_LOG = ".guard.log.pending"


@attrs.frozen(slots=True)
class IterationFacts:
    """What the shell measured during an iteration, beside the core's outcome."""

    run_id: str
    iteration: int
    node: Node  # the selected node as it was before the iteration
    role: AgentRole
    prev_tree: Node
    prev_state: RunState
    started_at: str
    ended_at: str
    duration_ms: int
    backend: str
    tokens: TokenUsage | None = None
    cost_usd: float | None = None


def _attempts_after(tree: Node, node: Node) -> int:
    found = next((n for n, _ in iter_preorder(tree) if n.id == node.id), None)
    return node.attempts if found is None else found.attempts


def execution_number(paths: RunnerPaths, run_id: str, node_id: str, iteration: int) -> int:
    history, _ = load_history(paths, run_id)
    earlier = [r for r in history.records_for(node_id) if r.iteration < iteration]
    return len(earlier) + 1


def build_record(
    paths: RunnerPaths, facts: IterationFacts, outcome: IterationOutcome
) -> ExecutionRecord:
    kind = outcome.error_kind
    return ExecutionRecord(
        run_id=facts.run_id,
        node_id=facts.node.id,
        execution=execution_number(paths, facts.run_id, facts.node.id, facts.iteration),
        iteration=facts.iteration,
        role=facts.role,
        started_at=facts.started_at,
        ended_at=facts.ended_at,
        status=outcome.status,
        guard=outcome.guard,
        error_kind=ErrorKind(kind) if kind is not None else None,
        error=outcome.runner_error if outcome.runner_error is not None else outcome.agent_error,
        tokens=facts.tokens,
        cost_usd=facts.cost_usd,
        duration_ms=facts.duration_ms,
        attempts_before=facts.node.attempts,
        attempts_after=_attempts_after(outcome.tree, facts.node),
        backend=facts.backend,
    )


def record_iteration(
    paths: RunnerPaths,
    repo: Repo,
    facts: IterationFacts,
    outcome: IterationOutcome,
    journal: Journal,
) -> None:
    """Write the iteration's files and state, then commit; the journal tracks each phase."""
    write_journal(repo, attrs.evolve(journal, phase="writing"))
    iter_dir = paths.iter_dir(facts.run_id, facts.iteration)
    write_tree(paths, outcome.tree)
    meta = record_to_meta(build_record(paths, facts, outcome))
    atomic_write_text(iter_dir / "meta.json", canonical_json(meta))
    output = {"status": outcome.status.value, "summary": outcome.summary}
    atomic_write_text(iter_dir / "output.json", canonical_json(output))
    pending_guard = iter_dir / PENDING_GUARD_LOG
    if pending_guard.exists():
        os.replace(pending_guard, iter_dir / "guard.log")
    if outcome.agent_error is not None:
        atomic_write_text(iter_dir / "agent_error.log", f"agent error: {outcome.agent_error}\n")
    if outcome.runner_error is not None:
        atomic_write_text(iter_dir / "runner_error.log", f"runner error: {outcome.runner_error}\n")
    atomic_write_text(iter_dir / "tree.before.json", dumps_tree(facts.prev_tree))
    atomic_write_text(iter_dir / "tree.after.json", dumps_tree(outcome.tree))
    write_run_state(paths, advance_run_state(facts.prev_state, outcome))
    subject = commit_subject(facts.run_id, facts.iteration, facts.node.id, outcome)
    write_journal(repo, attrs.evolve(journal, phase="committing", commit_subject=subject))
    try:
        repo.commit_all(commit_message(facts.run_id, facts.iteration, facts.node.id, outcome))
    except GitError as error:
        raise UserFacingError(
            f"iteration {facts.iteration} was logged but not committed: {error} "
            "(fix the problem, then run 'runner recover')"
        ) from None
    clear_journal(repo)


def utc_now() -> str:
    """ISO-8601 UTC with milliseconds, the timestamps of meta.json."""
    moment = datetime.datetime.now(datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def monotonic_ms(since: float) -> int:
    return int((time.monotonic() - since) * 1000)


# ---------------------------------------------------------------- reading it back


def iteration_dirs(paths: RunnerPaths, run_id: str) -> list[tuple[int, Path]]:
    run_dir = paths.run_dir(run_id)
    if not run_dir.is_dir():
        return []
    found = [(int(entry.name), entry) for entry in run_dir.iterdir() if entry.name.isdigit()]
    return sorted(found)


def load_history(paths: RunnerPaths, run_id: str) -> tuple[ExecutionHistory, tuple[str, ...]]:
    """The run's history from its meta.json files, and a line for each one that was skipped."""
    records: list[ExecutionRecord] = []
    problems: list[str] = []
    seen: set[int] = set()
    for number, directory in iteration_dirs(paths, run_id):
        meta_path = directory / "meta.json"
        where = paths.relative(meta_path)
        try:
            record = record_from_meta(json.loads(meta_path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            problems.append(f"{where}: missing (iteration interrupted?)")
            continue
        except (OSError, UnicodeDecodeError, ValueError) as error:
            reason = str(error) if isinstance(error, DamagedRecord) else f"unreadable: {error}"
            problems.append(f"{where}: {reason}")
            continue
        if record.iteration != number or record.run_id != run_id or record.iteration in seen:
            problems.append(f"{where}: names run {record.run_id} iter {record.iteration}")
            continue
        seen.add(record.iteration)
        records.append(record)
    return ExecutionHistory.of(records), tuple(problems)


def known_runs(paths: RunnerPaths) -> tuple[str, ...]:
    if not paths.iterations_dir.is_dir():
        return ()
    return tuple(sorted(entry.name for entry in paths.iterations_dir.iterdir() if entry.is_dir()))
