"""The iteration's commit has a deadline: a `git fast-import` that does not
finish is killed with its process group and the commit fails, the branch unmoved."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from runner_shell.git.fast_commit import import_commit
from runner_shell.git.hardened import GitTimeout
from runner_shell.git.repo import open_repo
from tests.helpers.git_repos import git, new_repo


def test_a_commit_past_its_deadline_is_killed_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    new_repo(root)
    repo = open_repo(root)
    base = repo.head_sha()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    real = shutil.which("git")
    wrapper.write_text(
        f'#!/bin/sh\ncase " $* " in *" fast-import "*) sleep 60;; esac\nexec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(shutil.which('git') or '').parent}")
    started = time.monotonic()
    with pytest.raises(GitTimeout, match=r"timed out after 0\.5 s"):
        import_commit(repo, base, [], [("new.txt", b"x\n")], ("t", "t@t"), "m\n", timeout=0.5)
    assert time.monotonic() - started < 5
    monkeypatch.undo()
    assert git(root, "rev-parse", "HEAD").strip() == base
