"""Atomic writes below a repository's top: the top remembered never lets a planted `.git`
lower down stand in for it, and a write that skips its fsyncs still replaces a file whole."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from runner_shell.store.files import UnsafePath, atomic_write_bytes, atomic_write_text


def _repository(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def test_a_symlink_to_a_planted_repository_is_refused_after_the_top_is_known(
    tmp_path: Path,
) -> None:
    repo = _repository(tmp_path / "repo")
    atomic_write_text(repo / ".runner" / "state" / "a.json", "{}\n")  # the top is known now
    planted = _repository(tmp_path / "elsewhere")
    (repo / ".runner" / "iterations").mkdir()
    (repo / ".runner" / "iterations" / "run-1").symlink_to(planted)
    with pytest.raises(UnsafePath):
        atomic_write_text(repo / ".runner" / "iterations" / "run-1" / "meta.json", "{}\n")
    assert not (planted / "meta.json").exists()


def test_a_top_whose_git_directory_went_is_looked_for_again(tmp_path: Path) -> None:
    outer = _repository(tmp_path / "outer")
    inner = _repository(outer / "inner")
    atomic_write_text(inner / "x" / "a.txt", "1\n")  # the outer repository is the top
    subprocess.run(["rm", "-rf", str(outer / ".git")], check=True)
    (inner / "link").symlink_to(tmp_path)
    with pytest.raises(UnsafePath):
        atomic_write_text(inner / "link" / "b.txt", "2\n")
    atomic_write_text(inner / "x" / "a.txt", "3\n")
    assert (inner / "x" / "a.txt").read_text(encoding="utf-8") == "3\n"


def test_a_write_without_fsyncs_replaces_the_file_whole(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    target = repo / ".runner" / "context" / "goal.md"
    atomic_write_bytes(target, b"old\n")
    atomic_write_bytes(target, b"new\n" * 1000, durable=False)
    assert target.read_bytes() == b"new\n" * 1000
    assert [p.name for p in target.parent.iterdir()] == ["goal.md"]


def test_files_written_without_their_directory_synced_are_there_once_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runner_shell.store import files

    repo = _repository(tmp_path / "repo")
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    directory = repo / ".runner" / "iterations" / "run-1" / "1"
    for name in ("meta.json", "output.json", "tree.after.json"):
        atomic_write_text(directory / name, "{}\n", sync_directory=False)
    assert len(synced) == 3  # each file, no directory
    files.sync_directories([directory, directory, directory.parent])
    assert len(synced) == 5  # each directory once
    assert sorted(p.name for p in directory.iterdir()) == [
        "meta.json",
        "output.json",
        "tree.after.json",
    ]
