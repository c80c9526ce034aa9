"""The checks of `runner validate` that are about the repository rather than one file."""

from __future__ import annotations

from runner_core import branch_for
from runner_core.preconditions import gitignore_problem
from runner_shell.errors import UserFacingError
from runner_shell.git import Repo
from runner_shell.layout import RunnerPaths
from runner_shell.store import load_goal_id, load_run_state, read_gitignore_lines

INIT_HINT = "(run 'runner init')"


def check_layout(paths: RunnerPaths) -> None:
    if not paths.runner_dir.is_dir():
        raise UserFacingError(f"{paths.relative(paths.runner_dir)}/ is missing {INIT_HINT}")
    required = (
        paths.goal,
        paths.tree,
        paths.schema,
        paths.config,
        paths.run_state,
        paths.decomposer_schema,
        paths.executor_schema,
    )
    for path in required:
        if not path.is_file():
            raise UserFacingError(f"{paths.relative(path)} is missing {INIT_HINT}")
    problem = gitignore_problem(read_gitignore_lines(paths))
    if problem is not None:
        raise UserFacingError(problem)


def check_run_identity(paths: RunnerPaths, repo: Repo) -> str | None:
    """The run id when a run is started and consistent; None when none is started."""
    state = load_run_state(paths)
    goal_id = load_goal_id(paths)
    if state.run_id is None:
        return None
    if goal_id != state.run_id:
        raise UserFacingError(
            f"run_state.json run_id '{state.run_id}' does not match GOAL.md id '{goal_id or ''}' "
            "(run 'runner start')"
        )
    branch = repo.current_branch()
    if branch != branch_for(state.run_id):
        raise UserFacingError(
            f"on branch '{branch or '(detached HEAD)'}' but run '{state.run_id}' runs on "
            f"'{branch_for(state.run_id)}' (run 'runner start')"
        )
    return state.run_id
