"""`runner runs` and the run-branch hints: gathering each run's facts from git and the log.

A run is a `runner/<id>` branch or a directory of iteration logs. For each, this reads its
latest tree and run_state (from the branch tip, else its newest `tree.after.json`), its last
activity and any journal naming it; runner_core.run.listing decides what that amounts to.
"""

from __future__ import annotations

import datetime

from runner_core import Node, parse_tree
from runner_core.iteration.recovery import Journal
from runner_core.run.identity import branch_for
from runner_core.run.listing import RunFacts, RunRow, run_rows
from runner_core.run.state import run_state_from_text
from runner_core.tree.serialization import TREE_MAX_BYTES, TreeValidationError
from runner_shell.git.repo import Repo
from runner_shell.step.lock_and_journal import read_journal, runner_alive
from runner_shell.step.repository_checks import branch_run_ids
from runner_shell.store.files import read_bytes_capped
from runner_shell.store.iteration_log import iteration_dirs, known_runs
from runner_shell.store.layout import RunnerPaths

BRANCH_PREFIX = "runner/"
TREE_PATH = ".runner/state/tree.json"
RUN_STATE_PATH = ".runner/state/run_state.json"


def existing_run_ids(paths: RunnerPaths, repo: Repo, goal_id: str | None) -> tuple[str, ...]:
    """Every run the repository knows: run branches first, then logs and GOAL.md's id."""
    branches = branch_run_ids(repo)
    others = (set(known_runs(paths)) | ({goal_id} if goal_id else set())) - set(branches)
    return (*branches, *sorted(others))


def _tree_at(repo: Repo, ref: str) -> Node | None:
    data = repo.file_at(ref, TREE_PATH)
    if data is None or len(data) > TREE_MAX_BYTES:
        return None
    try:
        return parse_tree(data)
    except TreeValidationError:
        return None


def _next_iter_at(repo: Repo, ref: str) -> int | None:
    data = repo.file_at(ref, RUN_STATE_PATH)
    try:
        return None if data is None else run_state_from_text(data).next_iter
    except ValueError:  # RunStateError and JSON errors alike
        return None


def _logged_facts(paths: RunnerPaths, run_id: str) -> tuple[Node | None, int | None, str | None]:
    """A run without a branch: its newest readable tree.after.json and iteration."""
    directories = iteration_dirs(paths, run_id)
    if not directories:
        return None, None, None
    number, newest = directories[-1]
    modified = datetime.datetime.fromtimestamp(newest.stat().st_mtime, datetime.UTC)
    activity = modified.astimezone().isoformat(timespec="seconds")
    for _, directory in reversed(directories):
        try:
            tree = parse_tree(read_bytes_capped(directory / "tree.after.json", TREE_MAX_BYTES))
        except (OSError, TreeValidationError):
            continue
        return tree, number + 1, activity
    return None, number + 1, activity


def _own_journal(repo: Repo, run_id: str) -> Journal | None:
    """The journal of a run that loops in its own checkout (one journal per run)."""
    from runner_shell.git.run_checkout import run_checkout_path

    own = run_checkout_path(repo, run_id)
    return read_journal(Repo(own)) if (own / ".git").is_file() else None


def gather_runs(paths: RunnerPaths, repo: Repo) -> tuple[RunRow, ...]:
    branches = set(branch_run_ids(repo))
    shared = read_journal(repo)
    facts: list[RunFacts] = []
    for run_id in sorted(branches | set(known_runs(paths))):
        alive = None
        journal = _own_journal(repo, run_id) or shared
        if journal is not None and journal.run_id == run_id:
            alive = runner_alive(journal.runner_pid)
        if run_id in branches:
            ref = branch_for(run_id)
            tree, next_iter = _tree_at(repo, ref), _next_iter_at(repo, ref)
            activity = repo.commit_date(ref)
        else:
            tree, next_iter, activity = _logged_facts(paths, run_id)
        facts.append(RunFacts(run_id, run_id in branches, tree, next_iter, activity, alive))
    return run_rows(facts)
