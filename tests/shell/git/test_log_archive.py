"""The iteration log archive on refs/runner/logs/<run>: plumbing only, survives git clean and
travels with a fetch of refs/runner/*; restore refuses what the runner never archives."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from runner_shell.git import log_archive
from runner_shell.git.log_archive import (
    ArchiveError,
    archive_after_commit,
    archive_iteration,
    logs_ref,
    restore,
)
from tests.helpers.git_repos import git, new_repo

RUN = "run-0001"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    new_repo(tmp_path / "repo")
    return tmp_path / "repo"


def write_iteration(root: Path, iteration: int, extra: str = "") -> Path:
    directory = root / ".runner" / "iterations" / RUN / str(iteration)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "meta.json").write_text(f'{{"iter": {iteration}}}\n')
    (directory / "executor.log").write_text("=== stdout ===\nok\n" + extra)
    (directory / "tree.after.json").write_text('{"id": "root"}\n')
    return directory


def snapshot(run_dir: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(run_dir)): path.read_bytes()
        for path in sorted(run_dir.rglob("*"))
        if path.is_file()
    }


def test_archiving_leaves_index_and_work_tree_alone_and_survives_git_clean(repo: Path) -> None:
    for iteration in (1, 2):
        archive_iteration(repo, RUN, iteration, write_iteration(repo, iteration))
    run_dir = repo / ".runner" / "iterations" / RUN
    before = snapshot(run_dir)
    assert git(repo, "status", "--porcelain") == ""
    git(repo, "clean", "-fdxq")
    assert not run_dir.exists()
    assert restore(repo, RUN, run_dir) == (1, 2)
    assert snapshot(run_dir) == before


def test_one_commit_per_iteration_parented_on_the_previous_one(repo: Path) -> None:
    first = archive_iteration(repo, RUN, 1, write_iteration(repo, 1))
    second = archive_iteration(repo, RUN, 2, write_iteration(repo, 2))
    assert first is not None and second is not None
    assert git(repo, "rev-parse", f"{second}^").strip() == first
    assert git(repo, "rev-list", "--count", logs_ref(RUN)).strip() == "2"


def test_archiving_the_same_iteration_twice_adds_nothing(repo: Path) -> None:
    directory = write_iteration(repo, 1)
    tip = archive_iteration(repo, RUN, 1, directory)
    assert archive_iteration(repo, RUN, 1, directory) is None
    assert git(repo, "rev-parse", logs_ref(RUN)).strip() == tip


def test_identical_bytes_are_one_blob(repo: Path) -> None:
    archive_iteration(repo, RUN, 1, write_iteration(repo, 1))
    archive_iteration(repo, RUN, 2, write_iteration(repo, 2))
    listing = git(repo, "ls-tree", "-r", logs_ref(RUN))
    snapshots = {line.split()[2] for line in listing.splitlines() if "tree.after.json" in line}
    assert len(snapshots) == 1


def test_a_clone_with_the_fetched_refs_restores_identical_bytes(repo: Path, tmp_path: Path) -> None:
    for iteration in (1, 2, 3):
        archive_iteration(repo, RUN, iteration, write_iteration(repo, iteration, "x" * iteration))
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "fetch", "-q", "origin", "refs/runner/*:refs/runner/*")
    run_dir = clone / ".runner" / "iterations" / RUN
    restore(clone, RUN, run_dir)
    assert snapshot(run_dir) == snapshot(repo / ".runner" / "iterations" / RUN)


def test_restore_without_an_archive_names_the_ref(repo: Path) -> None:
    with pytest.raises(ArchiveError, match="refs/runner/logs/run-0001 does not exist"):
        restore(repo, RUN, repo / ".runner" / "iterations" / RUN)


def nested_tree(repo: Path, files: dict[str, str]) -> str:
    """A tree holding `files` (path: text), directories made as the paths say."""
    entries: list[str] = []
    below: dict[str, dict[str, str]] = {}
    for path, text in files.items():
        first, _, rest = path.partition("/")
        if rest:
            below.setdefault(first, {})[rest] = text
        else:
            blob = git(repo, "hash-object", "-w", "--stdin", stdin=text).strip()
            entries.append(f"100644 blob {blob}\t{first}\n")
    for name, inner in below.items():
        entries.append(f"040000 tree {nested_tree(repo, inner)}\t{name}\n")
    return git(repo, "mktree", stdin="".join(entries)).strip()


def forge_archive(repo: Path, files: dict[str, str]) -> None:
    """A ref holding `files` (path in its tree: text), as a hostile push or an older runner
    could have left it."""
    top = nested_tree(repo, files)
    git(repo, "update-ref", logs_ref(RUN), git(repo, "commit-tree", top, "-m", "forged").strip())


@pytest.mark.parametrize(
    ("path_in_tree", "problem"),
    [
        ("01/meta.json", "is not under an iteration number"),
        ("x/meta.json", "is not under an iteration number"),
        ("1/evil.sh", "is not a known iteration file"),
        ("0/meta.json", "is not a known iteration file"),
        ("0-99/01/meta.json", "is not under an iteration number"),
        ("0-99/1/x/meta.json", "is not under an iteration number"),
        ("meta.json", "is not under an iteration number"),
        ("100-199/5/meta.json", "is not in its iteration's shard"),
        ("1/1500/meta.json", "is not in its iteration's shard"),
        ("1500-1599/1500/x/meta.json", "is not under an iteration number"),
        ("0-99/1/evil.sh", "is not a known iteration file"),
    ],
)
def test_restore_refuses_names_the_runner_never_archives(
    repo: Path, path_in_tree: str, problem: str
) -> None:
    forge_archive(repo, {path_in_tree: ""})
    with pytest.raises(ArchiveError, match=problem):
        restore(repo, RUN, repo / ".runner" / "iterations" / RUN)


def test_restore_never_follows_a_symlink_it_did_not_create(repo: Path, tmp_path: Path) -> None:
    archive_iteration(repo, RUN, 1, write_iteration(repo, 1))
    run_dir = repo / ".runner" / "iterations" / RUN
    git(repo, "clean", "-fdxq")
    outside = tmp_path / "outside"
    outside.mkdir()
    run_dir.mkdir(parents=True)
    (run_dir / "1").symlink_to(outside)
    with pytest.raises(ArchiveError, match="symbolic link"):
        restore(repo, RUN, run_dir)
    assert list(outside.iterdir()) == []


def test_symlinks_in_an_iteration_directory_are_not_archived(repo: Path, tmp_path: Path) -> None:
    directory = write_iteration(repo, 1)
    secret = tmp_path / "secret"
    secret.write_text("secret")
    (directory / "guard.log").symlink_to(secret)
    archive_iteration(repo, RUN, 1, directory)
    assert "guard.log" not in git(repo, "ls-tree", "-r", "--name-only", logs_ref(RUN))


ARCHIVERS = [archive_iteration, archive_after_commit]


@pytest.mark.parametrize("archive", ARCHIVERS, ids=["plumbing", "fast-import"])
@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_a_link_or_fifo_at_an_archived_name_is_left_out_unread(
    repo: Path, tmp_path: Path, archive: Callable[[Path, str, int, Path], object], plant: str
) -> None:
    directory = write_iteration(repo, 1)
    secret = tmp_path / "secret"
    secret.write_text("secret")
    if plant == "symlink":
        (directory / "guard.log").symlink_to(secret)
    else:
        os.mkfifo(directory / "guard.log")  # a read would block: no writer ever comes

    archive(repo, RUN, 1, directory)

    names = git(repo, "ls-tree", "-r", "--name-only", logs_ref(RUN)).split()
    assert names == ["0-99/1/executor.log", "0-99/1/meta.json", "0-99/1/tree.after.json"]


@pytest.mark.parametrize("archive", ARCHIVERS, ids=["plumbing", "fast-import"])
def test_a_file_past_the_largest_an_iteration_writes_is_left_out_unread(
    repo: Path, monkeypatch: pytest.MonkeyPatch, archive: Callable[[Path, str, int, Path], object]
) -> None:
    monkeypatch.setattr(log_archive, "ARCHIVED_FILE_MAX_BYTES", 100, raising=False)
    directory = write_iteration(repo, 1)
    (directory / "guard.log").write_bytes(b"x" * 101)

    archive(repo, RUN, 1, directory)

    names = git(repo, "ls-tree", "-r", "--name-only", logs_ref(RUN)).split()
    assert "0-99/1/guard.log" not in names and "0-99/1/meta.json" in names


def big_snapshot(seed: str) -> bytes:
    """A tree snapshot of some size: one git would deltify if it were sent again."""
    return (f'{{"id": "{seed}"}}\n' * 8192).encode()


def test_snapshots_git_already_holds_are_named_and_restore_to_identical_bytes(
    repo: Path, tmp_path: Path
) -> None:
    first, second = big_snapshot("a"), big_snapshot("b")
    stored = git(repo, "hash-object", "-w", "--stdin", stdin=second.decode()).strip()
    one = write_iteration(repo, 1)
    (one / "tree.after.json").write_bytes(first)
    archive_after_commit(repo, RUN, 1, one)
    two = write_iteration(repo, 2)
    (two / "tree.after.json").write_bytes(second)
    os.link(one / "tree.after.json", two / "tree.before.json")
    archive_after_commit(repo, RUN, 2, two, {"tree.after.json": stored})
    before = snapshot(repo / ".runner" / "iterations" / RUN)

    tree = git(repo, "ls-tree", "-r", logs_ref(RUN))
    restored_dir = tmp_path / "restored"
    restore(repo, RUN, restored_dir)

    blobs = {line.split("\t")[1]: line.split()[2] for line in tree.splitlines()}
    assert blobs["0-99/2/tree.after.json"] == stored
    assert blobs["0-99/2/tree.before.json"] == blobs["0-99/1/tree.after.json"]
    assert snapshot(restored_dir) == before


def test_a_named_blob_is_archived_by_its_id_without_the_file_being_read(repo: Path) -> None:
    stored = git(repo, "hash-object", "-w", "--stdin", stdin="the committed bytes\n").strip()
    one = write_iteration(repo, 1)
    (one / "tree.after.json").unlink()
    os.mkfifo(one / "tree.after.json")  # read, it would block or be left out

    archive_after_commit(repo, RUN, 1, one, {"tree.after.json": stored})

    archived = git(repo, "show", f"{logs_ref(RUN)}:0-99/1/tree.after.json")
    assert archived == "the committed bytes\n"


def test_a_snapshot_that_is_no_link_of_the_last_one_is_archived_as_it_is(repo: Path) -> None:
    one = write_iteration(repo, 1)
    (one / "tree.after.json").write_bytes(big_snapshot("a"))
    archive_after_commit(repo, RUN, 1, one)
    two = write_iteration(repo, 2)
    (two / "tree.before.json").write_bytes(big_snapshot("c"))  # a copy that differs, not a link
    archive_after_commit(repo, RUN, 2, two)

    archived = git(repo, "show", f"{logs_ref(RUN)}:0-99/2/tree.before.json")

    assert archived.encode() == big_snapshot("c")


@pytest.mark.parametrize("archive", ARCHIVERS, ids=["plumbing", "fast-import"])
def test_iterations_are_kept_a_hundred_to_a_directory(
    repo: Path, tmp_path: Path, archive: Callable[[Path, str, int, Path], object]
) -> None:
    for iteration in (998, 999, 1000, 1001):
        archive(repo, RUN, iteration, write_iteration(repo, iteration))

    shards = git(repo, "ls-tree", "--name-only", logs_ref(RUN)).split()
    assert shards == ["1000-1099", "900-999"]
    assert git(repo, "ls-tree", "--name-only", f"{logs_ref(RUN)}:900-999").split() == ["998", "999"]
    assert git(repo, "ls-tree", "--name-only", f"{logs_ref(RUN)}:1000-1099").split() == [
        "1000",
        "1001",
    ]
    restored = tmp_path / "restored"
    assert restore(repo, RUN, restored) == (998, 999, 1000, 1001)
    assert snapshot(restored) == snapshot(repo / ".runner" / "iterations" / RUN)


def test_an_archive_an_older_runner_kept_flat_is_read_and_grows_in_shards(
    repo: Path, tmp_path: Path
) -> None:
    one = write_iteration(repo, 1)
    flat = {f"1/{path.name}": path.read_text() for path in one.iterdir()}
    forge_archive(repo, flat)
    two = write_iteration(repo, 2)
    os.link(one / "tree.after.json", two / "tree.before.json")

    archive_after_commit(repo, RUN, 2, two)

    names = git(repo, "ls-tree", "-r", "--name-only", logs_ref(RUN)).split()
    assert "1/meta.json" in names and "0-99/2/tree.before.json" in names
    restored = tmp_path / "restored"
    assert restore(repo, RUN, restored) == (1, 2)
    assert snapshot(restored) == snapshot(repo / ".runner" / "iterations" / RUN)


def test_an_iteration_held_both_flat_and_in_its_shard_reads_as_the_shards(
    repo: Path, tmp_path: Path
) -> None:
    forge_archive(repo, {"1/meta.json": "old\n", "0-99/1/meta.json": "new\n"})
    restored = tmp_path / "restored"
    assert restore(repo, RUN, restored) == (1,)
    assert (restored / "1" / "meta.json").read_text() == "new\n"


def test_a_snapshot_linked_across_two_shards_is_copied_from_the_earlier_one(repo: Path) -> None:
    archive_iteration(repo, RUN, 98, write_iteration(repo, 98))
    one = write_iteration(repo, 99)
    (one / "tree.after.json").write_bytes(big_snapshot("a"))
    archive_after_commit(repo, RUN, 99, one)
    two = write_iteration(repo, 100)
    os.link(one / "tree.after.json", two / "tree.before.json")

    archive_after_commit(repo, RUN, 100, two)

    tree = git(repo, "ls-tree", "-r", logs_ref(RUN))
    blobs = {line.split("\t")[1]: line.split()[2] for line in tree.splitlines()}
    assert blobs["100-199/100/tree.before.json"] == blobs["0-99/99/tree.after.json"]
    # By fast-import's copy: its fallback, a failed fast-import, would have left a crash report.
    assert not list((repo / ".git").glob("fast_import_crash_*"))
