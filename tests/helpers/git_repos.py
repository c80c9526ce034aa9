"""Real git repositories for the archive and history tests: a runner for git, a fresh repo."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(root: Path, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=root,
        input=stdin,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout


def new_repo(root: Path, ignored: str = ".runner/iterations/\n") -> None:
    """A repository on `main` with one commit, identity set, `ignored` in .gitignore."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@t")
    (root / ".gitignore").write_text(ignored)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "before the run")


def started_run(root: Path, goal: str = "# Goal\n\nFinish the calculator.\n") -> str:
    """A repository at `root` with `.runner/` scaffolded and a run started on its branch, in
    this process (as `runner init` and `runner start` leave it); the run's id."""
    from runner_core import Config
    from runner_shell.git.repo import Repo
    from runner_shell.setup.scaffold import init_runner, start_run
    from runner_shell.store.layout import RunnerPaths

    new_repo(root)
    paths = RunnerPaths(root)
    init_runner(paths, force=False, config=Config())
    paths.goal.write_text(goal, encoding="utf-8")
    return start_run(paths, Repo(root)).run_id


def subjects(root: Path) -> list[str]:
    """The subjects of the current branch's commits, newest first."""
    return git(root, "log", "--format=%s").splitlines()
