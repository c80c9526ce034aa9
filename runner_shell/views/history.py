"""The history commands: `runner audit`, `runner diff`, `runner logs restore`, `runner show`
from git, and `runner validate`'s warning about hand-edited runner-owned fields.

Gathers commits, snapshots and archived files and prints what runner_core.history (audit),
runner_core.tree.diff and runner_core.views (show, diff) decide. Never takes the runner lock;
only `logs restore` writes, and only under `.runner/iterations/<run>/`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import typer

from runner_core.audit.audit import audit_run
from runner_core.audit.commit_facts import TREE_PATH, CommitFacts
from runner_core.audit.findings import audit_to_json
from runner_core.audit.judged_checks import AttemptFacts
from runner_core.history.records import ExecutionRecord
from runner_core.iteration.record import attempt_ref
from runner_core.json_form import json_form
from runner_core.run.trailers import DamagedTrailer, parse_trailers, record_from_trailers
from runner_core.tree.diff import TreeDiff, tree_diff
from runner_core.tree.model import Node
from runner_core.tree.serialization import TREE_MAX_BYTES, TreeValidationError
from runner_core.validation.loading import parse_tree
from runner_core.views.diff import DiffDocument, diff_lines
from runner_core.views.show import CommitFacet, IterationFiles, ShowDocument, render_show
from runner_shell.errors import UserFacingError
from runner_shell.git.attempt_refs import read_attempt, run_attempts
from runner_shell.git.history import NoStartCommit
from runner_shell.git.history_sources import agent_diff_stat, iteration_commit, run_commits
from runner_shell.git.log_archive import (
    ARCHIVED_NAMES,
    ArchiveError,
    archive_tip,
    archived_dir,
    logs_ref,
    read_archived,
    restore,
)
from runner_shell.git.repo import GitError, Repo
from runner_shell.store.files import read_bytes_capped
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_run_state
from runner_shell.views.iteration_files import read_iteration, read_iteration_at
from runner_shell.views.reading import print_json, print_lines, warn


def _run_id(paths: RunnerPaths, requested: str | None) -> str:
    """`--run`, else the run in run_state.json; a run need not be on disk to be read from git."""
    if requested is not None:
        from runner_core.run.identity import run_id_problem

        problem = run_id_problem(requested)
        if problem is not None:
            raise UserFacingError(f"--run: {problem}")
        return requested
    state = load_run_state(paths)
    if state.run_id is None:
        raise UserFacingError("no run started in run_state.json (pass --run or run 'runner start')")
    return state.run_id


def _commits(repo: Repo, run_id: str) -> tuple[CommitFacts, tuple[CommitFacts, ...]]:
    try:
        return run_commits(repo, run_id)
    except NoStartCommit as error:
        raise UserFacingError(f"{error} (is this run's branch checked out or fetched?)") from None


# ---------------------------------------------------------------- runner audit


def show_audit(paths: RunnerPaths, repo: Repo, run: str | None, as_json: bool) -> int:
    """`runner audit`: replay the run from git alone; 0 when clean, 1 with any finding."""
    run_id = _run_id(paths, run)
    start, commits = _commits(repo, run_id)
    report = audit_run(run_id, start, commits, _attempts(repo, run_id))
    if as_json:
        print_json(audit_to_json(report))
    else:
        print_lines(report.lines())
    return 0 if report.clean else 1


def _attempts(repo: Repo, run_id: str) -> dict[int, AttemptFacts] | None:
    """The run's attempt refs for the audit; None, with a warning, in a clone that fetched
    none of the run's refs (its log archive is missing too): they cannot be checked there."""
    found = run_attempts(repo.root, run_id)
    if not found and archive_tip(repo.root, run_id) is None:
        warn(
            f"{logs_ref(run_id)} is missing: the attempt refs are not checked "
            "(fetch 'refs/runner/*' to check them)"
        )
        return None
    return {number: AttemptFacts(*facts) for number, facts in found.items()}


# ---------------------------------------------------------------- runner diff


def _parsed(data: bytes, where: str) -> Node:
    try:
        return parse_tree(data)
    except TreeValidationError as error:
        raise UserFacingError(f"{where}: {error}") from None


def _snapshots(paths: RunnerPaths, run_id: str, iteration: int) -> tuple[bytes, bytes, str] | None:
    """tree.before.json and tree.after.json of the iteration, from its directory or archive."""
    directory = paths.iter_dir(run_id, iteration)
    try:  # an agent's symlink or FIFO in its place is never read: the archive has the snapshot
        before = read_bytes_capped(directory / "tree.before.json", TREE_MAX_BYTES)
        after = read_bytes_capped(directory / "tree.after.json", TREE_MAX_BYTES)
        return before, after, paths.relative(directory)
    except OSError:
        pass
    names = frozenset({"tree.before.json", "tree.after.json"})
    found = read_archived(paths.root, run_id, names, iteration) or {}
    if len(found) == len(names):
        where = f"{logs_ref(run_id)}:{archived_dir(iteration)}"
        return found[(iteration, "tree.before.json")], found[(iteration, "tree.after.json")], where
    return None


def _from_commits(repo: Repo, run_id: str, iteration: int) -> tuple[bytes, bytes, str]:
    """The iteration's trees from git: tree.json before and after its commit."""
    start, commits = _commits(repo, run_id)
    found = iteration_commit(commits, iteration)
    if found is None:
        raise UserFacingError(f"no iteration {iteration} in run {run_id}'s commits")
    chain = (start, *commits)
    previous = chain[chain.index(found) - 1]
    where = f"commit {found.sha[:8]}"
    return (
        _require(previous.tree_json, f"{TREE_PATH} before {where}"),
        _require(found.tree_json, f"{TREE_PATH} at {where}"),
        where,
    )


def _require(data: bytes | None, where: str) -> bytes:
    if data is None:
        raise UserFacingError(f"{where}: missing")
    return data


def iteration_diff(
    paths: RunnerPaths, repo: Repo, iteration: int, run_id: str
) -> tuple[TreeDiff, str]:
    """What the iteration did to the tree, and where its trees were read from: the snapshots
    of its directory, the archive ref, else its commit."""
    try:
        found = _snapshots(paths, run_id, iteration)
    except (ArchiveError, GitError) as error:
        warn(str(error))
        found = None
    before, after, source = found or _from_commits(repo, run_id, iteration)
    diff = tree_diff(_parsed(before, f"{source} before"), _parsed(after, f"{source} after"))
    return diff, source


def show_diff(
    paths: RunnerPaths, repo: Repo, iteration: int, run: str | None, as_json: bool
) -> None:
    """`runner diff ITER`: what the iteration did to the tree, node by node."""
    run_id = _run_id(paths, run)
    diff, source = iteration_diff(paths, repo, iteration, run_id)
    if as_json:
        print_json(json_form(DiffDocument(run_id, iteration, source, diff)))
    else:
        print_lines(diff_lines(run_id, iteration, diff, source))


# ---------------------------------------------------------------- runner logs restore


def restore_logs(paths: RunnerPaths, repo: Repo, run: str | None) -> None:
    run_id = _run_id(paths, run)
    try:
        restored = restore(repo.root, run_id, paths.run_dir(run_id))
    except ArchiveError as error:
        raise UserFacingError(str(error)) from None
    where = paths.relative(paths.run_dir(run_id))
    typer.echo(f"logs: restored run={run_id} iterations={len(restored)} dir={where}")


# ---------------------------------------------------------------- runner show, from git


def _archived_iteration(
    paths: RunnerPaths, run_id: str, iteration: int, scratch: Path
) -> IterationFiles | None:
    try:
        found = read_archived(paths.root, run_id, ARCHIVED_NAMES, iteration)
    except (ArchiveError, GitError) as error:
        warn(str(error))
        return None
    if not found:
        return None
    for (_, name), data in found.items():
        (scratch / name).write_bytes(data)
    where = f"{logs_ref(run_id)}:{archived_dir(iteration)}"
    return read_iteration_at(run_id, iteration, scratch, where)


def _trailer_iteration(commit: CommitFacts, run_id: str, iteration: int) -> IterationFiles:
    record: ExecutionRecord | None = None
    problem: str | None = None
    try:
        record = record_from_trailers(parse_trailers(commit.message))
    except DamagedTrailer as error:
        problem = str(error)
    return IterationFiles(
        run_id=run_id,
        iteration=iteration,
        directory=f"the commit trailers of {commit.sha[:8]}",
        meta=record,
        meta_problem=problem,
        output=None,
        output_problem="not on disk nor archived: only the commit trailers remain",
        files=(),
    )


def show_sourced_iteration(
    paths: RunnerPaths,
    repo: Repo,
    run_id: str,
    iteration: int,
    as_json: bool,
    with_tests: bool = False,
) -> None:
    """`runner show ITER` from the directory, else the archive, else the commit trailers."""
    shown, facet = sourced_iteration(paths, repo, run_id, iteration)
    if as_json:
        print_json(json_form(ShowDocument(shown, facet)))
    else:
        print_lines([*render_show(shown, with_tests), *facet.lines()])


def iteration_document(paths: RunnerPaths, repo: Repo, run_id: str, iteration: int) -> Any:
    """The `runner show ITER --json` document; `runner serve` sends it too."""
    shown, facet = sourced_iteration(paths, repo, run_id, iteration)
    return json_form(ShowDocument(shown, facet))


def sourced_iteration(
    paths: RunnerPaths, repo: Repo, run_id: str, iteration: int
) -> tuple[IterationFiles, CommitFacet]:
    """One iteration's files (directory, else archive, else trailers) and its commit facet."""
    try:
        commits: tuple[CommitFacts, ...] = _commits(repo, run_id)[1]
    except UserFacingError:
        commits = ()
    commit = iteration_commit(commits, iteration)
    with tempfile.TemporaryDirectory(prefix="runner-show-") as scratch:
        found = None
        if not paths.iter_dir(run_id, iteration).is_dir():
            found = _archived_iteration(paths, run_id, iteration, Path(scratch))
            if found is None and commit is not None:
                found = _trailer_iteration(commit, run_id, iteration)
        if found is not None:
            warn(
                f"{paths.relative(paths.iter_dir(run_id, iteration))}/ is missing: "
                f"read iteration {iteration} from {found.directory}"
            )
        # Neither on disk nor in git: read_iteration's error names what is on disk.
        shown = found or read_iteration(paths, run_id, iteration)
    return shown, _commit_facet(repo, run_id, iteration, commit)


def _commit_facet(
    repo: Repo, run_id: str, iteration: int, commit: CommitFacts | None
) -> CommitFacet:
    """The iteration's commit and the agent's diff stat: of its attempt's commit when its
    files are on its attempt ref instead of the run branch."""
    if commit is None:
        return CommitFacet(None, ())
    try:
        attempt = read_attempt(repo, run_id, iteration)
    except GitError:
        attempt = None
    if attempt is None:
        return CommitFacet(commit.sha, agent_diff_stat(repo, commit.sha))
    ref = attempt_ref(run_id, iteration)
    return CommitFacet(commit.sha, agent_diff_stat(repo, attempt.commit), (ref, attempt.commit))
