"""The listing asks git little: one `check-ignore` for every level, notes read only changed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from runner_core.changes.import_rules import NOTES_FILES
from runner_shell.git.repo import Repo, open_repo
from runner_shell.scratch.listing import list_scratch
from runner_shell.scratch.slots import prepare_slot
from tests.helpers.git_repos import git, new_repo

IGNORE_RULES = "*.log\n!keep.log\nbuild/\ndeep/**/*.tmp\n"


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    root = tmp_path / "repo"
    new_repo(root, ignored=IGNORE_RULES)
    (root / "tracked.log").write_text("tracked though ignored\n")
    notes = root / NOTES_FILES[0]
    notes.parent.mkdir(parents=True)
    notes.write_text("# assumptions\n")
    git(root, "add", "-A")
    git(root, "add", "-f", "tracked.log")
    git(root, "commit", "-qm", "files")
    git(root, "checkout", "-qb", "runner/r")
    return open_repo(root)


def test_ignore_rules_hold_at_every_level_negations_and_tracked_files_included(
    repo: Repo,
) -> None:
    base = repo.head_sha()
    slot = prepare_slot(repo, base)
    for name in ("a.log", "keep.log", "build/out.o", "deep/a/b/c.tmp", "deep/a/b/c.txt"):
        (slot / name).parent.mkdir(parents=True, exist_ok=True)
        (slot / name).write_text(name)
    (slot / "deep/a/b/sub.log").write_text("x")
    (slot / "deep/a/b/keep.log").write_text("x")

    paths = {entry.path for entry in list_scratch(repo, slot, base).entries}

    assert paths == {
        ".gitignore",
        NOTES_FILES[0],
        "tracked.log",
        "keep.log",
        "deep/a/b/c.txt",
        "deep/a/b/keep.log",
    }


def test_the_notes_base_text_is_the_slots_when_unchanged_and_gits_when_grown(
    repo: Repo,
) -> None:
    base = repo.head_sha()
    slot = prepare_slot(repo, base)
    assert list_scratch(repo, slot, base).notes[NOTES_FILES[0]] == (
        b"# assumptions\n",
        b"# assumptions\n",
    )
    assert list_scratch(repo, slot, base).notes[NOTES_FILES[1]] == (None, None)

    (slot / NOTES_FILES[0]).write_text("# assumptions\nmore\n")
    (slot / NOTES_FILES[1]).write_text("new\n")
    notes = list_scratch(repo, slot, base).notes
    assert notes[NOTES_FILES[0]] == (b"# assumptions\n", b"# assumptions\nmore\n")
    assert notes[NOTES_FILES[1]] == (None, b"new\n")

    (slot / NOTES_FILES[0]).unlink()
    assert list_scratch(repo, slot, base).notes[NOTES_FILES[0]] == (b"# assumptions\n", None)


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The git commands the listing runs, by name, in order."""
    from runner_shell.git.hardened import run_git as real_run_git
    from runner_shell.scratch import listing

    names: list[str] = []

    def run_git(args: Sequence[str], cwd: Path) -> CompletedProcess[bytes]:
        names.append(args[0])
        return real_run_git(args, cwd)

    monkeypatch.setattr(listing, "run_git", run_git)
    return names


def test_a_commits_files_are_read_once_for_every_slot_listed_against_it(
    repo: Repo, asked: list[str]
) -> None:
    base = repo.head_sha()
    first = list_scratch(repo, prepare_slot(repo, base, number=0), base)
    second = list_scratch(repo, prepare_slot(repo, base, number=1), base)
    assert second.base == first.base and ".gitignore" in first.base
    assert asked.count("ls-tree") == 1
    list_scratch(repo, prepare_slot(repo, base, number=0), "HEAD")  # a name: it may move
    assert asked.count("ls-tree") == 2


def test_a_listing_past_the_file_budget_is_not_kept(
    repo: Repo, asked: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from runner_shell.scratch import listing

    monkeypatch.setattr(listing, "_BASE_LISTINGS_FILES", 0)
    base = repo.head_sha()
    list_scratch(repo, prepare_slot(repo, base, number=0), base)
    list_scratch(repo, prepare_slot(repo, base, number=1), base)
    assert asked.count("ls-tree") == 2
