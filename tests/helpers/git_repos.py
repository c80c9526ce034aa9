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
