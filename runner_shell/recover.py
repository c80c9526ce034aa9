"""`runner recover`: finishing an iteration a killed runner left behind, deterministically.

The agent's file changes are kept in a commit (never discarded), the runner-owned state files
come back from the last commit (the last good iteration), the interrupted iteration is logged as
a runner error `interrupted` with every attempt unchanged, and orphaned agent or guard process
groups are terminated. What to do is runner_core.recovery's decision.
"""

from __future__ import annotations

import datetime

import attrs

from runner_core import conclude_runner_error, iter_preorder, parse_tree
from runner_core.recovery import (
    Journal,
    RecoveryKind,
    interrupted_message,
    recovery_kind,
)
from runner_core.step import AgentRole
from runner_shell.errors import UserFacingError
from runner_shell.files import atomic_write_bytes
from runner_shell.git import GitError, Repo
from runner_shell.guard_rails import clear_journal, read_journal
from runner_shell.iteration_log import (
    PENDING_GUARD_LOG,
    IterationFacts,
    record_iteration,
    utc_now,
)
from runner_shell.layout import RunnerPaths
from runner_shell.processes import terminate_process_group
from runner_shell.store import load_config, load_run_state


@attrs.frozen(slots=True)
class Recovered:
    kind: RecoveryKind | None  # None: there was nothing to recover
    journal: Journal | None = None
    killed_groups: tuple[int, ...] = ()


def _head_bytes(repo: Repo, path: str) -> bytes | None:
    result = repo.git("show", f"HEAD:{path}", check=False)
    if result.returncode != 0:
        return None
    return result.stdout.encode("utf-8")


def _remove_stale_index_lock(repo: Repo) -> None:
    # A runner killed inside `git commit` leaves index.lock; we hold the runner lock, so no
    # runner git command is in flight.
    lock = repo.root / repo.git("rev-parse", "--git-path", "index.lock").stdout.strip()
    lock.unlink(missing_ok=True)


def kill_orphans(journal: Journal) -> tuple[int, ...]:
    return tuple(pgid for pgid in journal.process_groups if terminate_process_group(pgid, 1.0))


def recover(paths: RunnerPaths, repo: Repo) -> Recovered:
    journal = read_journal(repo)
    if journal is None:
        return Recovered(None)
    killed = kill_orphans(journal)
    _remove_stale_index_lock(repo)
    head_subject = (
        repo.git("log", "-1", "--format=%s").stdout.strip() if repo.has_commits() else None
    )
    kind = recovery_kind(journal, head_subject)
    if kind is RecoveryKind.ALREADY_COMMITTED:
        clear_journal(repo)
        return Recovered(kind, journal, killed)
    for state_file in (paths.tree, paths.run_state, paths.config):
        relative = paths.relative(state_file)
        committed = _head_bytes(repo, relative)
        if committed is None:
            raise UserFacingError(f"{relative} is not in the last commit; cannot restore it")
        atomic_write_bytes(state_file, committed)
    tree = parse_tree(paths.tree.read_bytes())
    state = load_run_state(paths)
    config = load_config(paths)
    if state.run_id != journal.run_id or state.next_iter != journal.iteration:
        raise UserFacingError(
            f"the journal describes run {journal.run_id} iteration {journal.iteration}, but the "
            f"last commit is at run {state.run_id} next_iter {state.next_iter}; "
            "inspect the journal and git log by hand"
        )
    node = next((n for n, _ in iter_preorder(tree) if n.id == journal.node_id), None)
    if node is None:
        raise UserFacingError(f"node '{journal.node_id}' of the journal is not in tree.json")
    iter_dir = paths.iter_dir(journal.run_id, journal.iteration)
    iter_dir.mkdir(parents=True, exist_ok=True)
    pending = iter_dir / PENDING_GUARD_LOG
    if pending.exists():
        pending.rename(iter_dir / "guard.interrupted.log")
    outcome = conclude_runner_error(tree, interrupted_message(journal))
    facts = IterationFacts(
        run_id=journal.run_id,
        iteration=journal.iteration,
        node=node,
        role=AgentRole(journal.role),
        prev_tree=tree,
        prev_state=state,
        started_at=journal.started_at,
        ended_at=utc_now(),
        duration_ms=_elapsed_ms(journal.started_at),
        backend=config.agent_backend,
    )
    try:
        record_iteration(paths, repo, facts, outcome, journal)
    except GitError as error:
        raise UserFacingError(f"recovery could not commit: {error}") from None
    return Recovered(kind, journal, killed)


def _elapsed_ms(started_at: str) -> int:
    try:
        started = datetime.datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    except ValueError:
        return 0
    now = datetime.datetime.now(datetime.UTC)
    return max(int((now - started).total_seconds() * 1000), 0)
