"""What must hold around a step in the run's repository: whether it may start.

Decides the precondition failures of `runner step`/`loop`, each one line naming the problem and
its fix, the checks of `runner validate`, and which runner files are put back before the
commit. What git moving under an iteration comes to is runner_core.run.outside_change. Never
asks git itself.
"""

from __future__ import annotations

import attrs

from runner_core.run.identity import (
    PROTECTED_BRANCHES,
    RunIdentityError,
    branch_for,
    goal_run_id,
    ways_on,
    with_run_id,
)

REQUIRED_GITIGNORE_LINES = ("context/", "iterations/")
# The fix a message ends with, when the fix is a runner command.
START_HINT = "(run 'runner start')"
INIT_HINT = "(run 'runner init')"


def missing_state_file_problem(name: str, in_head: bool) -> str:
    """A missing runner file: restore it from git when HEAD still has it (`init --force` would
    wipe the tree and config), else scaffold with `runner init`."""
    if in_head:
        return f"{name} is missing but git still has it (run 'git checkout -- {name}')"
    return f"{name} is missing {INIT_HINT}"


@attrs.frozen(slots=True)
class RepoFacts:
    """What the shell saw in the repository before a step."""

    branch: str | None  # None on a detached HEAD
    dirty_paths: tuple[str, ...]
    gitignore_lines: tuple[str, ...] | None  # None when .runner/.gitignore is missing
    run_id: str | None  # run_state.run_id
    goal_id: str | None  # GOAL.md frontmatter id
    # Run ids of the repository's runner/* branches; gathered only on a protected branch,
    # where they say which way leads on.
    run_branches: tuple[str, ...] = ()


def gitignore_problem(lines: tuple[str, ...] | None) -> str | None:
    if lines is None:
        return f".runner/.gitignore is missing {START_HINT}"
    stripped = {line.strip() for line in lines}
    missing = [line for line in REQUIRED_GITIGNORE_LINES if line not in stripped]
    if missing:
        return f".runner/.gitignore lacks the line(s) {', '.join(missing)} {START_HINT}"
    return None


# The same ephemeral directories for git's repository-wide exclude file: `.runner/.gitignore`
# exists only on run branches, and back on main the iteration logs and context stay behind.
GIT_EXCLUDE_LINES = tuple(f"/.runner/{line}" for line in REQUIRED_GITIGNORE_LINES)


def with_git_exclude_lines(text: str) -> str | None:
    """`.git/info/exclude`'s text with the runner's lines added, or None when it has them."""
    present = {line.strip() for line in text.splitlines()}
    missing = [line for line in GIT_EXCLUDE_LINES if line not in present]
    if not missing:
        return None
    kept = text if not text or text.endswith("\n") else text + "\n"
    return kept + "".join(f"{line}\n" for line in missing)


def no_run_checked_out_problem(branch: str | None, run_ids: tuple[str, ...]) -> str:
    """Why there is no run to show where the run state is missing but run branches exist."""
    where = "HEAD is detached" if branch is None else f"branch '{branch}' holds no run"
    return f"{where} (.runner/state/run_state.json is missing): {ways_on(run_ids)}"


def branch_problem(facts: RepoFacts) -> str | None:
    """A branch no run runs on: a detached HEAD, or main/master (naming the runs to go on with)."""
    if facts.branch is None:
        return f"HEAD is detached; check out the run branch {START_HINT}"
    if facts.branch in PROTECTED_BRANCHES:
        if facts.run_branches:
            return f"refusing to run on branch '{facts.branch}': {ways_on(facts.run_branches)}"
        return f"refusing to run on branch '{facts.branch}' {START_HINT}"
    return None


def location_problem(facts: RepoFacts) -> str | None:
    """What a run command checks before it reads a state file: that it stands on a run branch.

    Only `branch`, `dirty_paths` and `run_branches` are used: on main the state files may not
    exist at all, and the way on is the run branch, not `runner init`. Off a run branch a dirty
    tree is reported first. On a run branch it is left to
    `step_precondition_problem`, which reports it first once the files are read, so a deleted
    state file gets its own hint.
    """
    where = branch_problem(facts)
    if where is None:
        return None
    return dirty_tree_problem(facts.dirty_paths) or where


def run_identity_problem(facts: RepoFacts) -> str | None:
    """Run-identity failures, each ending with the hint to run 'runner start'."""
    where = branch_problem(facts)
    if where is not None:
        return where
    gitignore = gitignore_problem(facts.gitignore_lines)
    if gitignore is not None:
        return gitignore
    if not facts.run_id:
        return f"no run started: run_state.json has no run_id {START_HINT}"
    if facts.run_id != facts.goal_id:
        return (
            f"run_state.json run_id '{facts.run_id}' does not match GOAL.md id "
            f"'{facts.goal_id or ''}' {START_HINT}"
        )
    expected = branch_for(facts.run_id)
    if facts.branch != expected:
        return (
            f"on branch '{facts.branch}' but run '{facts.run_id}' runs on '{expected}' {START_HINT}"
        )
    return None


def dirty_tree_problem(dirty_paths: tuple[str, ...], shown: int = 10) -> str | None:
    if not dirty_paths:
        return None
    paths = sorted(dirty_paths)
    listed = ", ".join(paths[:shown]) + (
        f" (+{len(paths) - shown} more)" if len(paths) > shown else ""
    )
    return f"working tree is not clean: {listed}; commit, stash or discard these changes first"


def step_precondition_problem(facts: RepoFacts) -> str | None:
    """The first reason a step must not start, or None (clean tree first)."""
    return dirty_tree_problem(facts.dirty_paths) or run_identity_problem(facts)


# Runner files taken from the committed state at step start and put back immediately before
# the commit (paths relative to `.runner/`): a daemon the agent left that rewrites them after
# it exits changes nothing. GOAL.md is the user's except its id (restored_goal).
PROTECTED_FILES = (
    "state/config.toml",
    ".gitignore",
    "state/schema.json",
    "state/decomposer_output.schema.json",
    "state/executor_output.schema.json",
)


def restored_goal(text: str, run_id: str) -> str | None:
    """GOAL.md's text with its frontmatter id put back to `run_id`, or None if it holds it."""
    try:
        if goal_run_id(text) == run_id:
            return None
    except RunIdentityError:
        pass  # a broken id is replaced like a wrong one
    try:
        return with_run_id(text, run_id)
    except RunIdentityError:
        return None
