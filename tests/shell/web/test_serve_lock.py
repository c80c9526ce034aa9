"""Whether a runner holds the lock, as `runner serve` and `runner follow` ask it without taking
it: /proc/locks by device and inode, and on btrfs (whose stat names another device than
/proc/locks does) by inode and the pid the lock file names.

A real lock held by this process is found in a /proc/locks written as btrfs shows it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner_shell.git.repo import Repo
from runner_shell.step import lock_and_journal
from runner_shell.step.lock_and_journal import (
    PID_LIMIT,
    exclusive_lock,
    holder_line,
    holder_pid,
    lock_held,
    lock_path,
)
from tests.helpers.e2e import Project, ProjectFactory
from tests.helpers.serve import leaves_tree


@pytest.fixture
def project(tmp_path: Path, make_project: ProjectFactory) -> Project:
    started = make_project(tmp_path, "started")
    started.prepare(leaves_tree())
    return started


def proc_locks_line(path: Path, device: str, pid: int) -> str:
    return f"1: FLOCK  ADVISORY  WRITE {pid} {device}:{path.stat().st_ino} 0 EOF\n"


def test_a_lock_on_the_same_inode_of_another_device_held_by_the_named_runner_is_held(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """btrfs: /proc/locks prints the filesystem's device, stat the subvolume's."""
    repo = Repo(project.root)
    proc_locks = tmp_path / "locks"
    monkeypatch.setattr(lock_and_journal, "PROC_LOCKS", proc_locks)
    with exclusive_lock(repo):
        lock = lock_path(repo)
        proc_locks.write_text(proc_locks_line(lock, "00:99", os.getpid()), encoding="ascii")
        held = lock_held(repo)
        proc_locks.write_text(proc_locks_line(lock, "00:99", os.getpid() + 1), encoding="ascii")
        another_process = lock_held(repo)
        proc_locks.write_text("", encoding="ascii")
        no_line = lock_held(repo)

    assert held
    # The same inode number on another device, locked by a process the file does not name, is
    # some other file; no line at all is no lock, though the file still names a live process.
    assert not another_process
    assert not no_line


def test_a_lock_is_held_while_a_runner_holds_it_and_not_after(project: Project) -> None:
    repo = Repo(project.root)
    with exclusive_lock(repo):
        during = lock_held(repo)

    assert during
    assert not lock_held(repo)


def test_without_proc_locks_the_process_the_lock_file_names_must_be_alive(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = Repo(project.root)
    monkeypatch.setattr(lock_and_journal, "PROC_LOCKS", tmp_path / "no-proc-locks")
    with exclusive_lock(repo):
        pass
    alive = lock_held(repo)
    lock_path(repo).write_text(holder_line(PID_LIMIT, "runner loop"), encoding="utf-8")

    assert alive  # this process, named in the file
    assert not lock_held(repo)


@pytest.mark.parametrize(
    ("text", "pid"),
    [
        (holder_line(4242, "runner loop --night"), 4242),
        ("pid 4242: runner loop\n", 4242),
        ("pid 4242 runner loop\n", None),
        ("pid 0: runner loop\n", None),
        ("pid -5: runner loop\n", None),
        (f"pid {PID_LIMIT + 1}: runner loop\n", None),
        ("pid 99999999999999999999999: runner\n", None),  # os.kill would overflow
        ("pid \u0664\u0662: runner\n", None),  # Arabic-Indic digits: int() takes them
        ("", None),
        ("runner loop\n", None),
    ],
)
def test_the_lock_file_names_its_holder_in_one_line_read_back_by_one_parser(
    text: str, pid: int | None
) -> None:
    assert holder_pid(text) == pid
