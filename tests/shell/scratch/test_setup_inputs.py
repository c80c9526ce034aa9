"""`[sandbox] setup_inputs`: setup runs again, from nothing, when the files it reads change.

At a slot's reset, a base whose inputs are not those the slot's setup ran on; before a guard,
the agent's change to one (runner_shell.scratch.setup_runs). Real repositories, setup
unconfined (the sandboxed runs are tests/e2e/test_setup_inputs.py's).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner_shell.git.repo import Repo, open_repo
from runner_shell.scratch.setup_runs import SetupFailed, inputs_changed, set_up_again
from runner_shell.scratch.slots import prepare_slot, slot_path
from tests.helpers.git_repos import git, new_repo

# Counts its runs beside the slot and installs what deps.txt names into the ignored venv/.
SETUP = ("sh", "-c", "echo run >> ../setup-runs && mkdir -p venv && cp deps.txt venv/installed")
INPUTS = ("deps.txt",)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    root = tmp_path / "repo"
    new_repo(root, ignored="venv/\ncache/\n")
    (root / "deps.txt").write_text("a\n")
    (root / "other.txt").write_text("x\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "files")
    git(root, "checkout", "-qb", "runner/r")
    return open_repo(root)


def commit(repo: Repo, name: str, text: str) -> str:
    (repo.root / name).write_text(text)
    git(repo.root, "commit", "-qam", f"change {name}")
    return repo.head_sha()


def runs(repo: Repo) -> int:
    return (slot_path(repo).parent / "setup-runs").read_text().count("run")


def test_a_base_whose_inputs_differ_sets_the_slot_up_again(repo: Repo) -> None:
    prepare_slot(repo, repo.head_sha(), SETUP, inputs=INPUTS)
    changed = commit(repo, "deps.txt", "b\n")

    slot = prepare_slot(repo, changed, SETUP, inputs=INPUTS)

    assert (slot / "venv/installed").read_text() == "b\n"
    assert runs(repo) == 2


def test_a_base_whose_inputs_are_as_setup_saw_them_keeps_its_setup(repo: Repo) -> None:
    prepare_slot(repo, repo.head_sha(), SETUP, inputs=INPUTS)
    changed = commit(repo, "other.txt", "y\n")

    prepare_slot(repo, changed, SETUP, inputs=INPUTS)
    prepare_slot(repo, changed, SETUP, inputs=INPUTS)

    assert runs(repo) == 1


def test_without_setup_inputs_a_changed_base_keeps_the_setup(repo: Repo) -> None:
    prepare_slot(repo, repo.head_sha(), SETUP)

    slot = prepare_slot(repo, commit(repo, "deps.txt", "b\n"), SETUP)

    assert (slot / "venv/installed").read_text() == "a\n"
    assert runs(repo) == 1


def test_setting_up_again_starts_from_nothing_but_the_checkout(repo: Repo) -> None:
    slot = prepare_slot(repo, repo.head_sha(), SETUP, inputs=INPUTS)
    (slot / "venv/planted.pth").write_text("import os\n")  # unconfined: setup's output changed
    (slot / "cache").mkdir()
    (slot / "cache/plugin.py").write_text("x\n")  # an ignored leftover of the agent's
    (slot / "work.txt").write_text("the agent's\n")  # its work, imported: the guard's to see
    (slot / "deps.txt").write_text("c\n")
    assert inputs_changed(slot, INPUTS)

    set_up_again(slot, SETUP, INPUTS, None)

    assert (slot / "venv/installed").read_text() == "c\n"
    assert not (slot / "venv/planted.pth").exists() and not (slot / "cache").exists()
    assert (slot / "work.txt").read_text() == "the agent's\n"
    assert not inputs_changed(slot, INPUTS)


def test_a_failed_setup_again_says_how_and_the_next_reset_makes_the_slot_anew(
    repo: Repo,
) -> None:
    slot = prepare_slot(repo, repo.head_sha(), SETUP, inputs=INPUTS)
    failing = ("sh", "-c", "exit 4")
    log = slot.parent / "again.log"

    with pytest.raises(SetupFailed) as raised:
        set_up_again(slot, failing, INPUTS, None, log)

    assert raised.value.how == "exited 4" and raised.value.log == log
    slot = prepare_slot(repo, repo.head_sha(), SETUP, inputs=INPUTS)
    assert (slot / "venv/installed").read_text() == "a\n"
    assert runs(repo) == 2


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory", "absent"])
def test_an_input_made_something_else_counts_as_changed_and_is_never_followed(
    repo: Repo, tmp_path: Path, kind: str
) -> None:
    slot = prepare_slot(repo, repo.head_sha(), SETUP, inputs=INPUTS)
    outside = tmp_path / "outside"
    outside.write_text("a\n")  # the same bytes, reached through a symlink: not the file
    (slot / "deps.txt").unlink()
    if kind == "symlink":
        (slot / "deps.txt").symlink_to(outside)
    elif kind == "fifo":
        os.mkfifo(slot / "deps.txt")  # read, it would block: it is never opened for reading
    elif kind == "directory":
        (slot / "deps.txt").mkdir()

    assert inputs_changed(slot, INPUTS)


def test_an_input_below_a_symlinked_directory_is_never_read(repo: Repo, tmp_path: Path) -> None:
    inputs = ("app/deps.txt",)
    (repo.root / "app").mkdir()
    (repo.root / "app/deps.txt").write_text("a\n")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "app")
    slot = prepare_slot(repo, repo.head_sha(), SETUP, inputs=inputs)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "deps.txt").write_text("a\n")
    os.rename(slot / "app", slot / "app.moved")
    (slot / "app").symlink_to(outside)

    assert inputs_changed(slot, inputs)
