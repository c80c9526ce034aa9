"""A slot reset works from the runner's own index beside the slot, never the slot's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner_shell.git.repo import Repo, open_repo
from runner_shell.scratch.slots import prepare_slot
from tests.helpers.git_repos import git, new_repo


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    root = tmp_path / "repo"
    new_repo(root, ignored="venv/\n")
    (root / "kept.txt").write_text("kept\n")
    (root / "other.txt").write_text("other\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "files")
    git(root, "checkout", "-qb", "runner/r")
    return open_repo(root)


def test_a_file_changed_with_its_size_and_times_put_back_is_still_reset(repo: Repo) -> None:
    base = repo.head_sha()
    slot = prepare_slot(repo, base)
    kept = slot / "kept.txt"
    facts = kept.stat()
    kept.write_text("KEPT\n")
    os.utime(kept, ns=(facts.st_atime_ns, facts.st_mtime_ns))

    slot = prepare_slot(repo, base)

    assert (slot / "kept.txt").read_text() == "kept\n"


def test_the_slots_own_index_is_never_what_a_reset_trusts(repo: Repo) -> None:
    base = repo.head_sha()
    slot = prepare_slot(repo, base)
    (slot / "kept.txt").write_text("changed\n")
    (slot / "new.txt").write_text("new\n")
    git(slot, "add", "-A")
    git(slot, "update-index", "--assume-unchanged", "kept.txt")
    git(slot, "update-index", "--skip-worktree", "other.txt")
    (slot / "other.txt").write_text("changed too\n")
    (slot / ".git/index").write_bytes(b"garbage")

    slot = prepare_slot(repo, base)

    assert (slot / "kept.txt").read_text() == "kept\n"
    assert (slot / "other.txt").read_text() == "other\n"
    assert not (slot / "new.txt").exists()
    assert git(slot, "status", "--porcelain") == ""


def test_a_reset_to_a_new_base_keeps_ignored_files_and_leaves_the_agent_a_clean_index(
    repo: Repo,
) -> None:
    first = repo.head_sha()
    setup = (
        "sh",
        "-c",
        "mkdir -p venv && printf x > venv/installed",
    )  # kept: what setup made (docs/sandbox.md)
    slot = prepare_slot(repo, first, setup)
    (repo.root / "kept.txt").write_text("next\n")
    git(repo.root, "commit", "-qam", "next")

    slot = prepare_slot(repo, repo.head_sha(), setup)

    assert (slot / "kept.txt").read_text() == "next\n"
    assert (slot / "venv/installed").read_text() == "x"
    assert git(slot, "status", "--porcelain") == ""
    assert git(slot, "rev-parse", "HEAD").strip() == repo.head_sha() != first
