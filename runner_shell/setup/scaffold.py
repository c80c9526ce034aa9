"""`runner init` and `runner start`: scaffolding `.runner/` and establishing a run's identity.

Writes the files of `.runner/` (docs/internals.md) and creates or checks out the run branch;
the id rules, the frontmatter rewrite and the default tree come from runner_core.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import attrs

from runner_core import Config, Node, NodeNext
from runner_core.iteration.preconditions import (
    REQUIRED_GITIGNORE_LINES,
    dirty_tree_problem,
    with_git_exclude_lines,
)
from runner_core.json_text import json_value
from runner_core.run.chain import chain_seed
from runner_core.run.config import render_config
from runner_core.run.finish import start_message
from runner_core.run.identity import GOAL_PLACEHOLDER, branch_for, generate_run_id, with_run_id
from runner_core.run.listing import start_on_protected_problem
from runner_core.run.project_kinds import ProjectKind, project_kind
from runner_core.run.questions import QUESTIONS_HEADER
from runner_core.run.state import RunState
from runner_core.validation.schema import (
    DECOMPOSER_OUTPUT_SCHEMA_FILE,
    EXECUTOR_OUTPUT_SCHEMA_FILE,
    TREE_SCHEMA_FILE,
    schema_text,
)
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.step.prompt_templates import check_templates
from runner_shell.step.run_branches import existing_run_ids
from runner_shell.store.files import atomic_write_text, read_bytes_capped
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import (
    load_config,
    load_goal_id,
    load_run_state,
    load_tree,
    read_goal,
    write_run_state,
    write_tree,
)

ASSUMPTIONS_HEADER = "# Assumptions\n\nAgents append the assumptions they made here.\n"


def root_node(config: Config) -> Node:
    return Node(
        id="root",
        order=0,
        title="Project goal",
        goal="Achieve the goal described in .runner/GOAL.md.",
        acceptance=("The goal in .runner/GOAL.md is met and the guard command passes.",),
        next=NodeNext.DECOMPOSE,
        passes=False,
        attempts=0,
        max_attempts=config.max_attempts_default,
        children=(),
    )


def write_schemas(paths: RunnerPaths) -> None:
    for target, name in (
        (paths.schema, TREE_SCHEMA_FILE),
        (paths.decomposer_schema, DECOMPOSER_OUTPUT_SCHEMA_FILE),
        (paths.executor_schema, EXECUTOR_OUTPUT_SCHEMA_FILE),
    ):
        atomic_write_text(target, schema_text(name))


def write_gitignore(paths: RunnerPaths) -> None:
    existing = paths.gitignore.read_text(encoding="utf-8") if paths.gitignore.exists() else ""
    lines = existing.splitlines()
    missing = [line for line in REQUIRED_GITIGNORE_LINES if line not in {x.strip() for x in lines}]
    if missing or not existing:
        atomic_write_text(paths.gitignore, "\n".join([*lines, *missing]) + "\n")


def write_git_exclude(repo: Repo) -> None:
    """Ignore the runner's ephemeral directories on every branch, main included.

    `.runner/.gitignore` is committed on the run branch only, and a commit on the branch the
    user started from is not the runner's to make; the repository's own exclude file applies
    on every branch and in every worktree, and is never committed.
    """
    exclude = repo.common_path("info/exclude")
    text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    updated = with_git_exclude_lines(text)
    if updated is not None:
        exclude.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(exclude, updated)


# The most of package.json read to learn its scripts (a larger one is read as having none).
_PACKAGE_JSON_MAX_BYTES = 1024 * 1024


def recognised_project(root: Path) -> ProjectKind | None:
    """The kind of the project at `root` by the regular files at its top (runner_core.run.
    project_kinds), its package.json's scripts read when it has one."""
    with os.scandir(root) as entries:
        files = frozenset(e.name for e in entries if e.is_file(follow_symlinks=False))
    scripts: frozenset[str] = frozenset()
    if "package.json" in files:
        with contextlib.suppress(OSError, ValueError):
            found = json_value(read_bytes_capped(root / "package.json", _PACKAGE_JSON_MAX_BYTES))
            listed = found.get("scripts") if isinstance(found, dict) else None
            scripts = frozenset(listed) if isinstance(listed, dict) else frozenset()
    return project_kind(files, scripts)


def init_runner(paths: RunnerPaths, force: bool, config: Config) -> None:
    """Scaffold `.runner/`; refuses to overwrite without `force`. An existing GOAL.md is kept."""
    if paths.runner_dir.exists() and not force:
        raise UserFacingError(
            f"{paths.relative(paths.runner_dir)} already exists; "
            "use 'runner init --force' to overwrite its state files"
        )
    if not paths.goal.exists():
        atomic_write_text(paths.goal, GOAL_PLACEHOLDER)
    write_gitignore(paths)
    write_tree(paths, root_node(config))
    write_schemas(paths)
    atomic_write_text(paths.config, render_config(config))
    write_run_state(paths, RunState())
    atomic_write_text(paths.assumptions, ASSUMPTIONS_HEADER)
    atomic_write_text(paths.questions, QUESTIONS_HEADER)


@attrs.frozen(slots=True)
class Started:
    run_id: str
    branch: str
    already: bool = False  # the run existed and had its identity: nothing was started


def reset_for_new_run(paths: RunnerPaths, config: Config, run_id: str) -> None:
    """A new run's state: a fresh root from GOAL.md, no questions; config, guidance and
    assumptions are kept."""
    write_tree(paths, root_node(config))
    atomic_write_text(paths.questions, QUESTIONS_HEADER)
    write_run_state(paths, RunState(run_id=run_id, chain=chain_seed(run_id)))


def start_run(paths: RunnerPaths, repo: Repo, new: bool = False) -> Started:
    """The run-identity flow: id, branch, GOAL.md frontmatter, run_state, commit.

    `new` starts another run beside the existing ones; without it, start on main/master
    refuses while a run exists rather than guess which one is meant.
    """
    head = repo.head_sha()
    operation = repo.operation_in_progress()
    if operation is not None:
        raise UserFacingError(f"git is in the middle of {operation}; finish or abort it first")
    problem = dirty_tree_problem(repo.dirty_paths(exclude_prefix=".runner/"))
    if problem is not None:
        raise UserFacingError(problem)
    goal_id = load_goal_id(paths) if paths.goal.exists() else None
    refusal = start_on_protected_problem(
        repo.current_branch(), existing_run_ids(paths, repo, goal_id), new
    )
    if refusal is not None:
        raise UserFacingError(refusal)
    if not paths.runner_dir.exists():
        init_runner(paths, force=False, config=Config())
    # A run must not start on a config or tree the first step would refuse.
    config = load_config(paths)
    load_tree(paths)
    check_templates(paths)
    goal_text = read_goal(paths)
    run_id = None if new else load_goal_id(paths, goal_text)
    if run_id is None:
        taken = {branch.removeprefix("runner/") for branch in repo.branches("runner/")}
        if paths.iterations_dir.is_dir():
            taken |= {entry.name for entry in paths.iterations_dir.iterdir()}
        run_id = generate_run_id(head, taken)
    branch = branch_for(run_id)
    base = None  # where `runner finish` merges the run: the branch it is created from
    if repo.current_branch() != branch:
        created = not repo.branch_exists(branch)
        base = repo.current_branch() if created else None
        repo.checkout(branch, create=created)
    if new:
        reset_for_new_run(paths, config, run_id)
    goal_text = read_goal(paths)
    if load_goal_id(paths, goal_text) != run_id:
        atomic_write_text(paths.goal, with_run_id(goal_text, run_id))
    state = load_run_state(paths) if paths.run_state.exists() else RunState()
    if state.run_id != run_id:
        write_run_state(paths, RunState(run_id=run_id, chain=chain_seed(run_id)))
    already = not new and state.run_id == run_id
    write_gitignore(paths)
    write_git_exclude(repo)
    write_schemas(paths)
    if repo.dirty_paths() or not repo.has_commits():
        repo.commit_all(start_message(run_id, base))
    return Started(run_id, branch, already)


def _copy_draft(draft: RunnerPaths, target: RunnerPaths) -> None:
    """The draft's files (never its logs or context) onto the run's checkout."""
    skip = {"iterations", "context"}
    for source in sorted(draft.runner_dir.rglob("*")):
        relative = source.relative_to(draft.runner_dir)
        if relative.parts[0] in skip or source.is_symlink():
            continue
        destination = target.runner_dir / relative
        if source.is_dir():
            destination.mkdir(parents=True, exist_ok=True)
        elif source.is_file():
            destination.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(destination, source.read_text(encoding="utf-8"))
            destination.chmod(source.stat().st_mode & 0o777)


def _draft_is_untracked(repo: Repo) -> bool:
    return not repo.git("ls-files", "--", ".runner").stdout.strip()


def start_beside(paths: RunnerPaths, repo: Repo) -> tuple[Started, RunnerPaths, Repo]:
    """`runner start` from any branch: checks everything the loop would, then creates
    `runner/<id>` at HEAD in the runner's own checkout, moves the draft there and commits it;
    the user's branch, index and work tree are never switched or read for anything else."""
    from runner_shell.git.repo import open_repo
    from runner_shell.git.run_checkout import ensure_run_checkout
    from runner_shell.step.repository_checks import missing_programs_problem

    if not repo.has_commits():
        raise UserFacingError("the repository has no commits yet; make a first commit")
    if not paths.runner_dir.exists():
        init_runner(paths, force=False, config=Config())
    config = load_config(paths)
    load_tree(paths)
    check_templates(paths)
    load_goal_id(paths)  # refuses an empty goal or init's placeholder
    problem = missing_programs_problem(config, paths.root)
    if problem is not None:
        raise UserFacingError(f"start: {problem}")
    head = repo.head_sha()
    taken = {branch.removeprefix("runner/") for branch in repo.branches("runner/")}
    run_id = generate_run_id(head, taken)
    branch = branch_for(run_id)
    base = repo.current_branch()
    repo.git("branch", "--quiet", branch, head)
    checkout = ensure_run_checkout(repo, run_id)
    run_paths, run_repo = RunnerPaths(checkout), open_repo(checkout)
    _copy_draft(paths, run_paths)  # its tree too: `node` commands and edits shape it
    write_run_state(run_paths, RunState(run_id=run_id, chain=chain_seed(run_id)))
    goal_text = read_goal(run_paths)
    atomic_write_text(run_paths.goal, with_run_id(goal_text, run_id))
    write_gitignore(run_paths)
    write_git_exclude(run_repo)
    write_schemas(run_paths)
    run_repo.commit_all(start_message(run_id, base))
    if _draft_is_untracked(repo):
        import shutil

        shutil.rmtree(paths.runner_dir)
    return Started(run_id, branch), run_paths, run_repo
