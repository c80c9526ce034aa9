"""`runner recover`: finishing an iteration a killed runner left behind, deterministically.

The agent's file changes are kept in a commit (never discarded), the runner-owned state files
come back from the last commit (the last good iteration), the interrupted iteration is logged as
a runner error `interrupted` with every attempt unchanged, and orphaned agent or guard process
groups are terminated. What to do is runner_core.iteration.recovery's decision.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import sys
from pathlib import Path
from typing import Protocol

import attrs
from pyrsistent import pmap

from runner_core import parse_config, parse_tree
from runner_core.changes.import_rules import (
    ImportDecision,
    ImportLimits,
    decide_import,
    import_limits,
)
from runner_core.iteration.plan import PlanKind, plan_step
from runner_core.iteration.record import Measured, final_write_set, interrupted_end
from runner_core.iteration.recovery import (
    PENDING_GUARD_LOG,
    Journal,
    JournalPhase,
    RecoveryKind,
    job_committed,
    recovery_kind,
)
from runner_core.json_text import toml_value
from runner_core.run import trailers
from runner_core.run.role_agents import role_config
from runner_core.run.state import run_state_from_text
from runner_core.tree.model import nodes_by_id
from runner_shell.errors import UserFacingError
from runner_shell.git.file_commit import follow_commit
from runner_shell.git.log_archive import ArchiveError, NothingToArchive, archive_iteration
from runner_shell.git.merging import carry_onto
from runner_shell.git.repo import GitError, Repo
from runner_shell.sandbox.processes import terminate_process_group
from runner_shell.scratch.listing import list_scratch
from runner_shell.scratch.slots import slot_path
from runner_shell.step.iteration_commit import commit_iteration
from runner_shell.step.lock_and_journal import (
    DamagedJournal,
    clear_journal,
    job_changes_path,
    job_journal_path,
    job_journals,
    job_place_path,
    job_request_path,
    job_worker_path,
    journal_path,
    read_job_changes,
    read_journal,
)
from runner_shell.store.directories import open_existing_directory
from runner_shell.store.files import atomic_write_bytes, make_directory
from runner_shell.store.iteration_log import count_executions, utc_now
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_config, load_run_state, load_tree


@attrs.frozen(slots=True)
class Recovered:
    kind: RecoveryKind | None  # None: there was nothing to recover
    journal: Journal | None = None
    killed_groups: tuple[int, ...] = ()
    # A parallel job's changed paths not kept: work merged since its start changed them too.
    dropped: tuple[str, ...] = ()
    # A remote job's answer not taken (recorded as interrupted instead): why.
    not_taken: str | None = None


def _remove_stale_index_lock(repo: Repo) -> None:
    # A runner killed inside `git add` or `git commit` leaves index.lock, or the lock of the ref
    # the commit was moving; we hold the runner lock, so no runner git command is in flight.
    branch = repo.current_branch()
    names = ["index.lock", "HEAD.lock", *([f"refs/heads/{branch}.lock"] if branch else [])]
    for name in names:
        repo.git_path(name).unlink(missing_ok=True)


def _remove_stale_temp_files(paths: RunnerPaths, iter_dir: Path) -> None:
    # A kill or a full disk between an atomic write's temp file and its rename leaves
    # `.<name>.<random>.tmp` beside the file; untracked, it would be committed with the recovery.
    # Each directory is reached from the repository's top without following a symlink, and
    # each temp file unlinked through it: nothing outside the repository is ever removed.
    for directory in (paths.runner_dir, paths.state_dir, paths.context_dir, iter_dir):
        fd = open_existing_directory(directory)
        if fd is None:
            continue
        try:
            for name in os.listdir(fd):
                if name.startswith(".") and name.endswith(".tmp"):
                    with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                        os.unlink(name, dir_fd=fd)
        finally:
            os.close(fd)


def kill_orphans(journal: Journal, iter_dir: Path) -> tuple[int, ...]:
    """Terminate the process groups of the iteration's processes, and nothing else.

    The agent's and guard's environment names the iteration directory (RUNNER_ITER_DIR): a
    group is signalled only when one of its processes carries it, so a journal's group id that
    a reboot or PID reuse gave to an unrelated process is left alone; that also finds a group
    started in the instant before the journal recorded it, and a daemon detached into a session
    of its own. Without /proc nothing is signalled.
    """
    carriers = _processes_with_env(b"RUNNER_ITER_DIR=" + os.fsencode(iter_dir))
    found: list[int] = []
    for pid in carriers:
        with contextlib.suppress(ProcessLookupError):
            pgid = os.getpgid(pid)
            if pgid not in found and pgid > 1 and pgid != os.getpgrp():
                found.append(pgid)
    groups = [pgid for pgid in journal.process_groups if pgid in found]
    groups += [pgid for pgid in found if pgid not in groups]
    return tuple(pgid for pgid in groups if terminate_process_group(pgid, 1.0))


def _processes_with_env(entry: bytes) -> list[int]:
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            environ = (proc / "environ").read_bytes()
        except OSError:  # gone, or not ours to read
            continue
        if entry in environ.split(b"\0") and int(proc.name) != os.getpid():
            found.append(int(proc.name))
    return sorted(found)


def _journal_from_last_commit(paths: RunnerPaths, repo: Repo) -> Journal | None:
    """What a damaged journal must have said, from the last commit: the iteration it runs next.

    None when that iteration never started (no directory of its own): nothing to recover.
    Its process groups are unknown, so none can be terminated.
    """
    committed = [repo.file_at_head(paths.relative(p)) for p in (paths.tree, paths.run_state)]
    config_text = repo.file_at_head(paths.relative(paths.config))
    if committed[0] is None or committed[1] is None or config_text is None:
        return None
    try:
        tree = parse_tree(committed[0])
        state = run_state_from_text(committed[1])
        config = parse_config(toml_value(config_text.decode("utf-8")))
    except ValueError:  # the caller reports the damage instead
        return None
    plan = plan_step(tree, state, config.max_iterations)
    if plan.kind is not PlanKind.RUN or state.run_id is None:
        return None
    if not paths.iter_dir(state.run_id, plan.iteration).is_dir():
        return None
    return Journal(
        run_id=state.run_id,
        iteration=plan.iteration,
        node_id=plan.node.id,
        role=plan.role,
        phase=JournalPhase.RUNNING,
        started_at=utc_now(),
        runner_pid=0,
        command="unknown: its journal was damaged",
    )


def _journal_to_recover(paths: RunnerPaths, repo: Repo) -> Journal | None:
    try:
        return read_journal(repo)
    except DamagedJournal:
        journal = _journal_from_last_commit(paths, repo)
        if journal is None:
            if repo.dirty_paths():
                raise UserFacingError(
                    f"{journal_path(repo)} is damaged and the last commit does not say which "
                    "iteration was running; delete it, then commit or discard what "
                    "'git status' shows"
                ) from None
            clear_journal(repo)
        return journal


class Answers(Protocol):
    """Where a killed loop's remote job's answer is taken from: `take` commits it as the loop
    would, else says why it did not (runner_shell.loop.remote_recovery)."""

    def take(self, number: int) -> str | None: ...


def recover_all(
    paths: RunnerPaths, repo: Repo, answers: Answers | None = None
) -> tuple[Recovered, ...]:
    """The run's interrupted iteration, then every parallel job's, in iteration order: a
    remote job's answer taken from `answers` when it is there and valid, any other recorded
    as interrupted; a job whose iteration was already committed leaves only its journal,
    which goes."""
    recovered = [found] if (found := recover(paths, repo)).kind is not None else []
    for iteration, path in job_journals(repo):
        place = job_place_path(repo, iteration)
        left = (
            path,
            place,
            job_changes_path(repo, iteration),
            job_request_path(repo, iteration),
            job_worker_path(repo, iteration),
        )
        if job_committed(iteration, load_run_state(paths).next_iter):
            _account_for(paths, repo, iteration)
            for other in left:
                other.unlink(missing_ok=True)
            continue
        not_taken = None
        journal = _job_journal(repo, path)
        if (
            answers is not None
            and journal is not None
            and job_request_path(repo, iteration).is_file()
        ):
            _remove_stale_index_lock(repo)
            not_taken = answers.take(iteration)
            if not_taken is None:
                recovered.append(Recovered(RecoveryKind.ANSWER_TAKEN, journal))
                for other in left:
                    other.unlink(missing_ok=True)
                continue
        job = _job_place(place)
        os.replace(path, journal_path(repo))
        recovered.append(attrs.evolve(recover(paths, repo, job), not_taken=not_taken))
        for other in left:
            other.unlink(missing_ok=True)
    return tuple(recovered)


def _job_journal(repo: Repo, path: Path) -> Journal | None:
    try:
        return read_journal(repo, path)
    except DamagedJournal:
        return None


def _account_for(paths: RunnerPaths, repo: Repo, iteration: int) -> None:
    """A job's journal left behind an iteration the run went past: the iteration's commit
    must be there (it was merged, only its files were left); one the run skipped is never
    taken for merged in silence."""
    state = load_run_state(paths)
    if state.run_id is None:
        return
    for message in repo.messages(f"^{trailers.ITER}: {iteration}$"):
        if f"{trailers.RUN}: {state.run_id}" in message.splitlines():
            return
    raise UserFacingError(
        f"iteration {iteration} of run {state.run_id} has a job journal "
        f"({job_journal_path(repo, iteration)}) but no commit, and the run is past it; "
        "inspect 'git log' and the journal by hand"
    )


def _job_place(path: Path) -> tuple[int, str]:
    """A job's slot number and start commit, as its loop wrote them; slot -1 when its slot
    holds another job's work by now, or the file cannot be read: nothing is taken from it."""
    try:
        slot, base = path.read_text(encoding="ascii").split()
        return int(slot), base
    except (OSError, ValueError):
        return -1, ""


def recover(paths: RunnerPaths, repo: Repo, job: tuple[int, str] | None = None) -> Recovered:
    """The run's interrupted iteration recovered; a parallel `job`'s (its slot and start
    commit) keeps its agent's work only while the run branch is still at that commit."""
    journal = _journal_to_recover(paths, repo)
    if journal is None:
        return Recovered(None)
    killed = kill_orphans(journal, paths.iter_dir(journal.run_id, journal.iteration))
    operation = repo.operation_in_progress()
    if operation is not None:
        # Committing now would conclude the user's merge or rebase with the runner's files.
        raise UserFacingError(
            f"git is in the middle of {operation}; finish or abort it, then run 'runner recover'"
        )
    _remove_stale_index_lock(repo)
    _remove_stale_temp_files(paths, paths.iter_dir(journal.run_id, journal.iteration))
    head_subject = (
        repo.git("log", "-1", "--format=%s").stdout.strip() if repo.has_commits() else None
    )
    kind = recovery_kind(journal, head_subject)
    if kind is RecoveryKind.ALREADY_COMMITTED:
        _archive_committed(paths, journal)
        _follow_last_commit(repo)
        clear_journal(repo)
        return Recovered(kind, journal, killed)
    _restore_state_files(paths, repo)
    tree = load_tree(paths)
    state = load_run_state(paths)
    config = load_config(paths)
    if state.run_id != journal.run_id or state.next_iter != journal.iteration:
        raise UserFacingError(
            f"the journal describes run {journal.run_id} iteration {journal.iteration}, but the "
            f"last commit is at run {state.run_id} next_iter {state.next_iter}; "
            "inspect the journal and git log by hand"
        )
    if journal.node_id not in nodes_by_id(tree):
        raise UserFacingError(f"node '{journal.node_id}' of the journal is not in tree.json")
    iter_dir = _keep_interrupted_logs(paths.iter_dir(journal.run_id, journal.iteration))
    counts = state.known_executions()
    if counts is None:
        counts = pmap(count_executions(paths, journal.run_id))
    measured = Measured(
        started_at=journal.started_at,
        ended_at=utc_now(),
        duration_ms=_elapsed_ms(journal.started_at),
    )
    # The role's own backend (`[agent.<role>]`); a fallback the loop chose is not journaled.
    backend = role_config(config, journal.role).agent_backend
    end = interrupted_end(journal, tree, state, counts, measured, backend)
    try:
        head = repo.head()
        limits = import_limits(config)
        imported, dropped = _kept_work(repo, head.sha, journal.iteration, job, limits)
        end = attrs.evolve(end, imported=imported, attempt_base=head.sha)
        commit_iteration(paths, repo, journal.run_id, iter_dir, final_write_set(end), base=head)
    except GitError as error:
        raise UserFacingError(f"recovery could not commit: {error}") from None
    return Recovered(kind, journal, killed, dropped)


def _kept_work(
    repo: Repo, head: str, iteration: int, job: tuple[int, str] | None, limits: ImportLimits
) -> tuple[ImportDecision, tuple[str, ...]]:
    """What the interrupted agent left, as the import rules take it, on the head: a one-slot
    iteration's or a running job's from its slot, a finished job's from beside its journal
    (its slot is another's by now); a job's carried onto the head from the commit it started
    at, as its merge would have, with the paths that conflict left out (and named)."""
    if job is None:
        return _scratch_import(repo, head, limits), ()
    slot, base = job
    if not base:
        return ImportDecision(), ()
    if slot >= 0:
        imported = _scratch_import(repo, base, limits, slot)
    else:
        found = read_job_changes(repo, iteration)
        if found is None or found.base != base:
            return ImportDecision(), ()
        imported = found.imported
    if base == head or not imported.changes:
        return imported, ()
    changes, conflicts = carry_onto(repo, base, head, imported.changes)
    return attrs.evolve(imported, changes=changes), conflicts


def _restore_state_files(paths: RunnerPaths, repo: Repo) -> None:
    """The runner-owned state files as the last commit has them: the last good iteration's."""
    for state_file in (paths.tree, paths.run_state, paths.config):
        relative = paths.relative(state_file)
        committed = repo.file_at_head(relative)
        if committed is None:
            raise UserFacingError(f"{relative} is not in the last commit; cannot restore it")
        atomic_write_bytes(state_file, committed)


def _scratch_import(repo: Repo, base: str, limits: ImportLimits, number: int = 0) -> ImportDecision:
    """What the interrupted agent left in its scratch checkout, as the import rules take it:
    its work is kept as a finished iteration's would be (nothing, when they refuse it)."""
    slot = slot_path(repo, number)
    if not slot.is_dir() or slot.is_symlink():
        return ImportDecision()
    try:
        return decide_import(list_scratch(repo, slot, base, limits), limits)
    except OSError as error:
        raise GitError(f"the scratch checkout could not be read: {error}") from None


def _follow_last_commit(repo: Repo) -> None:
    """A kill between the commit and the work tree's update: bring the work tree to it."""
    parent = repo.git("rev-parse", "--verify", "--quiet", "HEAD^", check=False).stdout.strip()
    if parent:
        follow_commit(repo, parent, repo.head_sha(), index_at_old=False)


def _archive_committed(paths: RunnerPaths, journal: Journal) -> None:
    """A kill between an iteration's commit and its archive: archive it now. Logs that are gone
    cannot be archived; the commit holds the iteration's tree and record, so recovery ends."""
    iter_dir = paths.iter_dir(journal.run_id, journal.iteration)
    try:
        archive_iteration(paths.root, journal.run_id, journal.iteration, iter_dir)
    except NothingToArchive as error:
        line = f"{error}; iteration {journal.iteration}'s logs are not archived"
        print(f"runner: warning: {line}", file=sys.stderr)
    except (ArchiveError, GitError) as error:
        raise UserFacingError(f"recovery could not archive the iteration's logs: {error}") from None


def _keep_interrupted_logs(iter_dir: Path) -> Path:
    """What the killed iteration concluded never happened: its logs are kept under other
    names, so the directory reads the same wherever the kill landed. A symlink the agent put
    in its place is removed, never followed."""
    if iter_dir.is_symlink():
        iter_dir.unlink()
    make_directory(iter_dir)
    for name, kept_as in (
        (PENDING_GUARD_LOG, "guard.interrupted.log"),
        ("guard.log", "guard.interrupted.log"),
        ("agent_error.log", "agent_error.interrupted.log"),
    ):
        if (iter_dir / name).exists():
            (iter_dir / name).replace(iter_dir / kept_as)
    return iter_dir


def _elapsed_ms(started_at: str) -> int:
    try:
        started = datetime.datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    except ValueError:
        return 0
    now = datetime.datetime.now(datetime.UTC)
    return max(int((now - started).total_seconds() * 1000), 0)
