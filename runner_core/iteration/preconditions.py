"""What must hold around a step in the run's repository: whether it may start, and what git
moving under an iteration comes to (never the agent's fault).

Decides the precondition failures of `runner step`/`loop`, each one line naming the problem and
its fix, and the checks of `runner validate`; what a change of the run's checkout or branch made
during the agent or guard comes to (the operator's, never charged to an attempt), how it is
worded, and which runner files are put back before the commit. Never asks git itself.
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


@attrs.frozen(slots=True)
class GitHead:
    """The checked-out branch (None when HEAD is detached) and HEAD's commit."""

    branch: str | None
    sha: str


@attrs.frozen(slots=True)
class BranchSeen:
    """The run's checkout and branch as the shell finds them after the agent and guard: the
    checkout's HEAD, the branch's commit (None: the branch is gone), whether the commit before
    is an ancestor of it, and the paths the commits between changed (when it is)."""

    head: GitHead
    tip: str | None
    forward: bool = False
    changed: tuple[str, ...] = ()


@attrs.frozen(slots=True)
class Where:
    """What the lines about a change made outside the runner name: the iteration, the run's
    checkout, and whether the agent was confined away from the run's repository (only then
    is a commit on the run branch surely not the agent's)."""

    iteration: int
    checkout: str
    confined: bool


@attrs.frozen(slots=True)
class Adopted:
    """The operator's commits on the run branch, kept: the iteration is recorded on `onto` as
    interrupted (`error`), no attempt used, and `line` tells the operator once."""

    onto: GitHead
    error: str
    line: str
    merge_line: str = ""  # the line when a parallel loop's merge queue takes them instead


@attrs.frozen(slots=True)
class Refused:
    """A change the runner does not take (a reset, a rewrite, a switched checkout, a commit on
    the run's state): nothing is committed, no attempt used, `line` names what moved and the
    fix; the journal stays for `runner recover` once it is put back."""

    line: str


def outside_change(
    before: GitHead, seen: BranchSeen, where: Where, runner_dir: str
) -> Adopted | Refused | None:
    """What a change of the run's checkout or branch made outside the runner during the
    iteration comes to; None when nothing moved. The agent works in a scratch checkout of its
    own, so it is never the agent's: no attempt is ever charged for it. A commit on the run
    branch that only adds commits changing nothing under `runner_dir` is the operator's and
    kept (when the agent was confined); anything else is refused with the way back."""
    branch = before.branch
    if branch is None or (seen.head == before and seen.tip == before.sha):
        return None
    during = f"outside the runner during iteration {where.iteration}"
    nothing = "nothing was committed and no attempt used"
    recover = "then run 'runner recover'"
    if seen.head.branch != branch:
        now = seen.head.branch or f"a detached HEAD at {seen.head.sha[:12]}"
        return Refused(
            f"the run's checkout {where.checkout} was switched from {branch} to {now} {during}: "
            f"{nothing}; run 'git -C {where.checkout} checkout {branch}', {recover}"
        )
    if seen.tip is None:
        back = f"put it back with 'git update-ref refs/heads/{branch} {before.sha}'"
        return Refused(
            f"the run branch {branch} was deleted {during}: {nothing}; {back}, {recover}"
        )
    moved = f"the run branch {branch} moved from {before.sha[:12]} to {seen.tip[:12]} {during}"
    # The branch is checked out in the run's checkout: its files follow, local changes stay.
    back = f"put it back with 'git -C {where.checkout} reset --keep {before.sha}'"
    if not seen.forward:
        return Refused(
            f"{moved} (a reset or rewrite dropping the run's commits): {nothing}; {back}, {recover}"
        )
    state = [path for path in seen.changed if _under(path, runner_dir)]
    if state:
        return Refused(
            f"{moved} by commits changing the run's state ({state[0]}): {nothing}; {back}, "
            f"{recover}, and steer with 'runner node' or 'runner tell' instead"
        )
    if not where.confined:
        return Refused(
            f"{moved}, and the agent ran unsandboxed, so the commits may be its own: "
            f"{nothing}; {back}, {recover}, then merge {seen.tip[:12]} into {branch} if they "
            "are yours"
        )
    error = (
        f"interrupted: {moved} by commits outside {runner_dir}/, kept as the operator's; "
        "no attempt used, the leaf runs again on them"
    )
    kept = f"{moved} by commits outside {runner_dir}/: kept as yours"
    line = (
        f"{kept}, the iteration is recorded as interrupted on top of them and its leaf runs "
        "again (no attempt used)"
    )
    merge_line = (
        f"{kept}: the running jobs' work is merged onto them as onto each other's, their guards "
        "run again (no attempt used)"
    )
    return Adopted(GitHead(branch, seen.tip), error, line, merge_line)


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(f"{directory}/")


def carried_error(error: str, conflicts: tuple[str, ...]) -> str:
    """The adopted iteration's error, naming the agent's changes the operator's commits also
    changed, which are left out of its commit (the others are kept)."""
    if not conflicts:
        return error
    shown = ", ".join(conflicts[:5]) + (
        f" and {len(conflicts) - 5} more" if len(conflicts) > 5 else ""
    )
    return f"{error}; the agent's changes to {shown} were left out (the commits changed them too)"


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
