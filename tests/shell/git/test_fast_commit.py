"""Commits written by one git fast-import: the tree git's plumbing would make, whatever a
slot's index holds, names git must quote, no ref left behind, the blobs' ids."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from runner_core.changes.import_rules import FILE_MODE, Change
from runner_shell.git import file_commit
from runner_shell.git.file_commit import commit_files
from runner_shell.git.merging import merged_commit
from runner_shell.git.repo import Repo, open_repo
from runner_shell.scratch.slots import prepare_slot, slot_path
from tests.helpers.git_repos import git, new_repo


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    root = tmp_path / "repo"
    new_repo(root)
    (root / "kept.txt").write_text("kept\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "files")
    git(root, "checkout", "-qb", "runner/r")
    return open_repo(root)


def forge(repo: Repo) -> None:
    """An entry added to the slot's reset index behind the runner's back."""
    index = slot_path(repo).parent / "0.index"
    env = dict(os.environ, GIT_INDEX_FILE=str(index))
    blob = git(repo.root, "hash-object", "-w", "--stdin", stdin="forged\n").strip()
    args = ["git", "update-index", "--add", "--cacheinfo", f"100644,{blob},forged.txt"]
    subprocess.run(args, cwd=repo.root, env=env, check=True, timeout=60)


def test_a_commit_never_takes_an_entry_forged_into_the_slots_index(repo: Repo) -> None:
    base = repo.head_sha()
    prepare_slot(repo, base)
    forge(repo)

    commit = commit_files(repo, "runner/r", base, (), [("state.json", b"{}\n")], "s\n").commit

    files = git(repo.root, "ls-tree", "-r", "--name-only", commit).split()
    assert sorted(files) == [".gitignore", "kept.txt", "state.json"]


def plumbing_tree(repo: Repo, base: str, files: list[tuple[str, bytes]], index: Path) -> str:
    """The tree git's own plumbing makes of `base` with `files`: read-tree, update-index,
    write-tree through a private index."""
    env = dict(os.environ, GIT_INDEX_FILE=str(index))

    def run(*args: str, data: bytes | None = None) -> str:
        argv = ["git", *args]
        done = subprocess.run(
            argv, cwd=repo.root, env=env, input=data, capture_output=True, check=True, timeout=60
        )
        return done.stdout.decode().strip()

    run("read-tree", base)
    for path, data in files:
        blob = run("hash-object", "-w", "--stdin", data=data)
        run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    return run("write-tree")


def test_a_commit_has_the_tree_git_plumbing_gives(repo: Repo, tmp_path: Path) -> None:
    base = repo.head_sha()
    files = [("a/state.json", b"{}\n"), ("kept.txt", b"changed\n"), ('odd "name"\t.txt', b"x")]

    commit = commit_files(repo, "runner/r", base, (), files, "s\n").commit

    tree = git(repo.root, "rev-parse", f"{commit}^{{tree}}").strip()
    assert tree == plumbing_tree(repo, base, files, tmp_path / "index")


def blob_of(repo: Repo, data: bytes) -> str:
    hashed = ["git", "hash-object", "--stdin"]
    done = subprocess.run(hashed, cwd=repo.root, input=data, capture_output=True, check=True)
    return done.stdout.decode().strip()


def test_the_branch_moves_no_other_ref_is_written_and_each_files_blob_is_named(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_commit, "INLINE_LIMIT_BYTES", 8)
    base = repo.head_sha()
    files: list[tuple[str, bytes | str]] = [("small", b"tiny\n"), ("large", "é" * 64), ("s2", "")]

    made = commit_files(repo, "runner/r", base, (), files, "subject\n\nbody é\n")

    assert repo.head_sha() == made.commit
    assert git(repo.root, "rev-parse", f"{made.commit}^").strip() == base
    assert git(repo.root, "for-each-ref", "--format=%(refname)", "refs/runner").strip() == ""
    assert not list(repo.git_path("runner").glob("*.marks"))
    expected = [blob_of(repo, d if isinstance(d, bytes) else d.encode()) for _, d in files]
    assert list(made.blobs) == expected
    message = git(repo.root, "cat-file", "commit", made.commit).partition("\n\n")[2]
    assert message == "subject\n\nbody é\n"
    assert git(repo.root, "log", "-1", "--format=%an <%ae>", made.commit).strip() == "t <t@t>"


def test_names_git_must_quote_are_committed_exactly(repo: Repo) -> None:
    base = repo.head_sha()
    names = ['a "quoted" name', "back\\slash", "new\nline", "tab\there", "ünï", '"lead']
    files: list[tuple[str, bytes | str]] = [(name, name.encode()) for name in names]

    commit = commit_files(repo, "runner/r", base, (), files, "s\n").commit

    listed = git(repo.root, "ls-tree", "-r", "-z", "--name-only", commit).split("\0")
    assert sorted(filter(None, listed)) == sorted([".gitignore", "kept.txt", *names])


def test_a_removed_file_may_give_way_to_a_directory_of_its_name(repo: Repo) -> None:
    base = repo.head_sha()
    blob = blob_of(repo, b"inside\n")
    git(repo.root, "hash-object", "-w", "--stdin", stdin="inside\n")
    changes = [Change("kept.txt/inner", FILE_MODE, blob), Change("kept.txt", None, None)]

    commit = commit_files(repo, "runner/r", base, changes, [], "s\n").commit

    files = git(repo.root, "ls-tree", "-r", "--name-only", commit).split()
    assert sorted(files) == [".gitignore", "kept.txt/inner"]
    assert (repo.root / "kept.txt/inner").read_text() == "inside\n"


def test_a_merge_check_commit_moves_no_branch(repo: Repo) -> None:
    base = repo.head_sha()
    blob = git(repo.root, "hash-object", "-w", "--stdin", stdin="merged\n").strip()

    commit = merged_commit(repo, base, [Change("kept.txt", FILE_MODE, blob)], "merge\n")

    assert repo.head_sha() == base
    assert git(repo.root, "show", f"{commit}:kept.txt") == "merged\n"
    assert git(repo.root, "rev-parse", f"{commit}^").strip() == base
    assert git(repo.root, "for-each-ref", "--format=%(refname)", "refs/runner").strip() == ""


def test_commits_made_at_once_by_two_threads_never_meet_on_a_ref(repo: Repo) -> None:
    # Two runs of one repository (or a loop and its parallel merges) import at the same time:
    # a ref they shared would fail one of them with "cannot lock ref".
    base = repo.head_sha()
    blob = git(repo.root, "hash-object", "-w", "--stdin", stdin="merged\n").strip()
    made: list[str] = []

    def commit_some() -> None:
        for n in range(15):
            made.append(merged_commit(repo, base, [Change(f"f{n}", FILE_MODE, blob)], "m\n"))

    workers = [threading.Thread(target=commit_some) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)

    assert len(made) == 45
    trees = git(repo.root, "log", "--no-walk=unsorted", "--format=%T %P", *made).split("\n")
    assert len({line.split()[0] for line in trees if line}) == 15  # one tree per file added
    assert {line.split()[1] for line in trees if line} == {base}
    assert git(repo.root, "for-each-ref", "--format=%(refname)", "refs/runner").strip() == ""
