"""The checks of `runner validate` that are about the repository rather than one file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from runner_core.backends.registry import BACKENDS
from runner_core.iteration.preconditions import (
    INIT_HINT,
    RepoFacts,
    gitignore_problem,
    run_identity_problem,
)
from runner_core.run.agent_config import ROLE_TABLES
from runner_core.run.identity import BRANCH_PREFIX, PROTECTED_BRANCHES
from runner_core.run.programs import checked_programs
from runner_core.run.role_agents import role_config, role_configs
from runner_core.tree.bounds import TREE_MAX_BYTES
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.store.layout import Places, RunnerPaths
from runner_shell.store.state_files import (
    MissingStateFile,
    load_run_state,
    read_gitignore_lines,
    with_run_files,
)

# The tree's model and its canonical writer are a step's: `validate` asks neither.
if TYPE_CHECKING:
    from runner_core.run.config import Config
    from runner_core.tree.model import Node


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
            raise MissingStateFile(paths.relative(path))
    problem = gitignore_problem(read_gitignore_lines(paths))
    if problem is not None:
        raise UserFacingError(problem)


def branch_run_ids(repo: Repo) -> tuple[str, ...]:
    """The run ids of the repository's runner/* branches."""
    return tuple(name.removeprefix(BRANCH_PREFIX) for name in repo.branches(BRANCH_PREFIX))


def location_facts(repo: Repo, dirty_paths: tuple[str, ...], branch: str | None) -> RepoFacts:
    """Where the repository stands, before any state file is read (`location_problem`).

    `branch` is the checked-out branch (None when detached), as the caller already asked git.
    """
    return RepoFacts(
        branch=branch,
        dirty_paths=dirty_paths,
        gitignore_lines=None,
        run_id=None,
        goal_id=None,
        # Only main/master needs them: the message names the runs to go on with.
        run_branches=branch_run_ids(repo) if branch in PROTECTED_BRANCHES else (),
    )


def check_run_identity(paths: RunnerPaths, repo: Repo) -> str | None:
    """The run id when a run is started and consistent; None when none is started.

    The rule is the one `runner step` applies (run_identity_problem): the same state gives
    the same line from both commands.
    """
    state = load_run_state(paths)
    if state.run_id is None:
        return None
    problem = run_identity_problem(
        with_run_files(paths, location_facts(repo, (), repo.current_branch()), state.run_id)
    )
    if problem is not None:
        raise UserFacingError(problem)
    return state.run_id


def program_problem(program: str, root: Path, search_path: str | None) -> str | None:
    """Why `program` (argv[0], resolved as the spawn will: PATH, or relative to the repo root)
    cannot be started, or None."""
    if "/" not in program:
        if shutil.which(program, path=search_path) is not None:
            return None
        return f"program '{program}' was not found on PATH"
    candidate = root / program
    if not candidate.exists():
        return f"program '{program}' does not exist"
    if candidate.is_dir() or not os.access(candidate, os.X_OK):
        return f"program '{program}' is not executable"
    return None


def _agent_program(config: Config) -> str:
    """The agent's argv[0]: a CLI backend runs the program of its name unless a command
    replaces it."""
    return (config.agent_command or (config.agent_backend,))[0]


def check_programs(config: Config, root: Path, agent_key: str = "agent.command") -> None:
    """Fail before an iteration starts when its agent, guard or setup program cannot be
    started; `agent_key` is the key that names the agent (a role table's own, when it has one)."""
    search_path = os.environ.get("PATH", os.defpath)
    for key, program in checked_programs(config, [(agent_key, _agent_program(config))]):
        problem = program_problem(program, root, search_path)
        if problem is not None:
            raise UserFacingError(
                f"{key}: {problem}; {_install_hint(config, key)}fix {key} in "
                ".runner/state/config.toml"
            )


def _install_hint(config: Config, key: str) -> str:
    """`install it with `npm install -g …` or ` for a backend's own CLI, else `install it or `."""
    install = BACKENDS[config.agent_backend].install
    if key.startswith("agent.") and not config.agent_command and install:
        return f"install it with `{install}` or "
    return "install it or "


def check_role_programs(config: Config, root: Path) -> None:
    """`check_programs` for each role's agent (`[agent.decomposer]`, `[agent.executor]`, else
    `[agent]`), each problem naming the key to fix."""
    for role in ROLE_TABLES:
        own = getattr(config, f"agent_{role}") is not None
        key = f"agent.{role}.command" if own else "agent.command"
        check_programs(role_config(config, role), root, key)


def check_tree_writable(paths: Places, tree: Node) -> None:
    """Refuse a step on a tree the runner could not write back in canonical form."""
    from runner_core.tree.serialization import canonical_fits

    if not canonical_fits(tree):
        raise UserFacingError(
            f"{paths.relative(paths.tree)}: its canonical form (2-space indent per level) would "
            f"exceed {TREE_MAX_BYTES} bytes, which the runner cannot write and read back; "
            "flatten or split the tree before stepping"
        )


def missing_programs_problem(config: Config, root: Path) -> str | None:
    """Every program the loop would start (agent, guard, sandbox setup) that cannot be, in one
    line; None when all can. `runner start` refuses on it before it creates anything."""
    # Each role's agent: `[agent.decomposer]` and `[agent.executor]` may name their own.
    agents = dict.fromkeys(_agent_program(role) for role in role_configs(config))
    search_path = os.environ.get("PATH", os.defpath)
    problems = [
        f"{key}: {problem}"
        for key, program in checked_programs(config, [("agent.command", a) for a in agents])
        if (problem := program_problem(program, root, search_path)) is not None
    ]
    if not problems:
        return None
    return "; ".join(problems) + "; install them or fix .runner/state/config.toml"
