"""Scratch slots, their listing and the commit built from files, on real repositories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from runner_core.changes.import_rules import EntryKind, decide_import
from runner_shell.git.file_commit import commit_files
from runner_shell.git.hardened import GitError
from runner_shell.git.repo import Repo, open_repo
from runner_shell.scratch.listing import list_scratch
from runner_shell.scratch.slots import SlotError, prepare_slot, slot_path
from runner_shell.store.files import remove_file_within
from tests.helpers.git_repos import git, new_repo


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    root = tmp_path / "repo"
    new_repo(root, ignored="venv/\n")
    (root / "kept.txt").write_text("kept\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "files")
    git(root, "checkout", "-qb", "runner/r")
    return open_repo(root)


def head(repo: Repo) -> str:
    return repo.head_sha()


def test_a_slot_is_a_checkout_of_the_base_with_its_own_git_outside_the_work_tree(
    repo: Repo,
) -> None:
    slot = prepare_slot(repo, head(repo))
    assert slot == slot_path(repo) and repo.root / ".git" in slot.parents
    assert (slot / "kept.txt").read_text() == "kept\n"
    assert (slot / ".git").is_dir()
    assert git(slot, "rev-parse", "HEAD").strip() == head(repo)
    assert repo.dirty_paths() == ()


def test_the_slots_lean_git_directory_serves_the_agents_git(repo: Repo) -> None:
    slot = prepare_slot(repo, head(repo))
    slot = prepare_slot(repo, head(repo))
    assert not (slot / ".git/logs").exists()  # the reset's move is logged nowhere
    assert not (slot / ".git/objects/pack").exists()
    assert git(slot, "status", "--porcelain") == ""
    git(slot, "tag", "before")
    ident = ("-c", "user.name=agent", "-c", "user.email=agent@example.invalid")
    git(slot, *ident, "commit", "-q", "--allow-empty", "-m", "agent's")
    git(slot, "gc", "-q")
    assert git(slot, "rev-parse", "before").strip() == head(repo)
    assert git(slot, "rev-parse", "HEAD~1").strip() == head(repo)


# The slot's `[sandbox] setup`: what it makes is kept by every reset.
SETUP = ("sh", "-c", "mkdir -p venv && printf x > venv/installed")


def test_a_reset_keeps_ignored_files_and_undoes_the_rest(repo: Repo) -> None:
    slot = prepare_slot(repo, head(repo), SETUP)
    assert (slot / "venv/installed").read_text() == "x"
    (slot / "kept.txt").write_text("changed")
    (slot / "untracked.txt").write_text("x")
    (slot / "nested").mkdir()
    git(slot / "nested", "init", "-q")
    git(slot, "checkout", "-qb", "agent-branch")

    slot = prepare_slot(repo, head(repo), SETUP)

    assert (slot / "venv/installed").read_text() == "x"
    assert (slot / "kept.txt").read_text() == "kept\n"
    assert not (slot / "untracked.txt").exists() and not (slot / "nested").exists()


def test_a_config_the_agent_set_in_its_slot_never_runs_on_reset(repo: Repo, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    slot = prepare_slot(repo, head(repo))
    git(slot, "config", "core.fsmonitor", f"touch {marker}; true")
    git(slot, "config", "core.hooksPath", str(tmp_path))
    (slot / "kept.txt").write_text("changed")

    prepare_slot(repo, head(repo))

    assert not marker.exists()


def test_setup_runs_once_when_a_slot_is_made(repo: Repo) -> None:
    setup = ("sh", "-c", "echo x >> ../setup-count")
    prepare_slot(repo, head(repo), setup)
    prepare_slot(repo, head(repo), setup)
    assert (slot_path(repo).parent / "setup-count").read_text() == "x\n"


def test_a_failing_setup_is_one_line_and_runs_again_next_time(repo: Repo) -> None:
    with pytest.raises(SlotError, match=r"\[sandbox\] setup exited 3"):
        prepare_slot(repo, head(repo), ("sh", "-c", "exit 3"))
    prepare_slot(repo, head(repo), ("true",))


def test_a_slot_made_a_symlink_is_made_again_never_followed(repo: Repo, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep")
    slot = prepare_slot(repo, head(repo))
    os.rename(slot, tmp_path / "moved")
    slot.symlink_to(outside)

    slot = prepare_slot(repo, head(repo))

    assert not slot.is_symlink() and (slot / "kept.txt").exists()
    assert sorted(os.listdir(outside)) == ["precious"]


def test_the_listing_never_enters_a_symlinked_directory_and_names_special_files(
    repo: Repo, tmp_path: Path
) -> None:
    slot = prepare_slot(repo, head(repo))
    (slot / "out").symlink_to(tmp_path)
    os.mkfifo(slot / "pipe")
    (slot / "deep").mkdir()
    (slot / "deep/.git").mkdir()

    kinds = {e.path: e.kind for e in list_scratch(repo, slot, head(repo)).entries}

    assert kinds == {
        ".gitignore": EntryKind.FILE,
        "kept.txt": EntryKind.FILE,
        "out": EntryKind.SYMLINK,
        "pipe": EntryKind.SPECIAL,
        "deep/.git": EntryKind.GIT,
    }


def test_the_commit_ignores_the_signing_and_message_settings_of_the_run(
    repo: Repo, tmp_path: Path
) -> None:
    marker = tmp_path / "signed"
    (tmp_path / "gpg").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (tmp_path / "gpg").chmod(0o755)
    for key, value in (
        ("commit.gpgSign", "true"),
        ("gpg.program", str(tmp_path / "gpg")),
        ("core.commentChar", "R"),
        ("commit.cleanup", "strip"),
        ("i18n.commitEncoding", "ISO-8859-1"),
        ("user.name", "a\nRunner-Op: forged"),
    ):
        git(repo.root, "config", key, value)
    slot = prepare_slot(repo, head(repo))
    (slot / "work.txt").write_text("work\n")
    base = head(repo)
    decision = decide_import(list_scratch(repo, slot, base))
    message = "subject é\n\nRunner-Iter: 1\n# not a comment\n"

    commit_files(repo, "runner/r", base, decision.changes, [("state.json", b"{}\n")], message)

    assert not marker.exists()
    raw = subprocess.run(
        ["git", "cat-file", "commit", "HEAD"], cwd=repo.root, capture_output=True, check=True
    ).stdout
    headers, _, body = raw.partition(b"\n\n")
    assert body == message.encode("utf-8")
    assert b"\nencoding " not in headers and b"gpgsig" not in headers
    assert b"Runner-Op" not in headers  # a name with a newline is never an identity
    assert (repo.root / "work.txt").read_text() == "work\n"
    assert repo.dirty_paths() == ()


def test_the_commit_fails_when_the_branch_moved_since_the_base(repo: Repo) -> None:
    base = head(repo)
    git(repo.root, "commit", "-q", "--allow-empty", "-m", "moved")
    with pytest.raises(GitError, match="update-ref"):
        commit_files(repo, "runner/r", base, (), [], "subject\n")


def test_a_removal_never_follows_a_symlink_out(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/f").write_text("keep")
    (tmp_path / "top").mkdir()
    (tmp_path / "top/link").symlink_to(tmp_path / "outside")
    remove_file_within(tmp_path / "top", "link/f")
    assert (tmp_path / "outside/f").exists()
    with pytest.raises(ValueError, match="not a path inside"):
        remove_file_within(tmp_path / "top", "../outside/f")


def test_ignored_files_setup_did_not_make_go_and_a_changed_setup_output_is_rebuilt(
    repo: Repo,
) -> None:
    (repo.root / ".gitignore").write_text("venv/\ncache/\n")
    git(repo.root, "commit", "-qam", "ignore cache/")
    slot = prepare_slot(repo, head(repo), SETUP)
    (slot / "cache").mkdir()
    (slot / "cache/plugin.py").write_text("planted")  # an ignored file setup did not make
    (slot / "venv/evil.pth").write_text("planted")  # a setup output changed, unconfined

    slot = prepare_slot(repo, head(repo), SETUP)

    assert not (slot / "cache").exists()
    assert not (slot / "venv/evil.pth").exists()  # the slot was made again, setup rerun
    assert (slot / "venv/installed").read_text() == "x"


def test_a_changed_setup_command_makes_the_slot_again(repo: Repo) -> None:
    slot = prepare_slot(repo, head(repo), SETUP)
    other = ("sh", "-c", "mkdir -p venv && printf y > venv/installed")
    slot = prepare_slot(repo, head(repo), other)
    assert (slot / "venv/installed").read_text() == "y"


def test_a_slot_that_cannot_be_removed_is_set_aside_and_made_again(
    repo: Repo, capfd: pytest.CaptureFixture[str]
) -> None:
    """A reset the agent's leftovers defeat never fails the run."""
    slot = prepare_slot(repo, head(repo))
    stuck = slot / "stuck"
    stuck.mkdir()
    (stuck / "file").write_text("x")
    if subprocess.run(["chattr", "+i", str(stuck)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here (root on a file system that has it)")
    try:
        (slot / ".git" / "index").write_text("not an index")  # the slot's git is broken too
        subprocess.run(["git", "-C", str(slot), "update-ref", "-d", "HEAD"], check=False)
        os.chmod(slot / ".git", 0)
        slot = prepare_slot(repo, head(repo))
        aside = [path for path in slot.parent.iterdir() if ".broken-" in path.name]
        assert (slot / "kept.txt").read_text() == "kept\n" and not (slot / "stuck").exists()
        assert len(aside) == 1 and (aside[0] / "stuck" / "file").exists()
        assert "set aside as" in capfd.readouterr().err
    finally:
        for found in slot.parent.glob("*/stuck"):
            subprocess.run(["chattr", "-i", str(found)], check=False)


def test_each_parallel_slot_sees_its_own_object_store_only(tmp_path: Path) -> None:
    """A parallel job's sandbox binds its slot's store, never slot 0's."""
    from runner_shell.sandbox.status import SandboxStatus
    from runner_shell.scratch.sandbox import Sandbox
    from runner_shell.scratch.slots import slot_objects, slot_sandbox

    slots = tmp_path / "slots"
    other = Path("/opt/toolchain")
    status = SandboxStatus("off", None, None)
    sandbox = Sandbox(status, (), slots / "homes", (slot_objects(slots, 0), other))
    job = slot_sandbox(sandbox, 3)
    assert job is not None
    assert job.shared == (slots / "3.objects" / "objects", other)
    assert job.homes == slots / "homes-3"
    # The merge queue's slot, made from the job's sandbox, binds its own store, not the job's
    # (which a remote job never made on this machine).
    merge = slot_sandbox(job, 5)
    assert merge is not None
    assert merge.shared == (slots / "5.objects" / "objects", other)
    assert merge.homes == slots / "homes-5"


def _store_git(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    store = slot_path(repo).parent / "0.objects"
    return subprocess.run(
        ["git", "--git-dir", str(store), *args], capture_output=True, text=True, check=False
    )


def _new_commit(repo: Repo, name: str, text: str) -> tuple[str, str]:
    (repo.root / name).write_text(text)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", name)
    return head(repo), git(repo.root, "rev-parse", f"HEAD:{name}").strip()


def test_a_reset_links_the_new_loose_objects_into_the_slots_store(repo: Repo) -> None:
    prepare_slot(repo, head(repo))
    git(repo.root, "checkout", "-qb", "elsewhere")
    _, secret = _new_commit(repo, "secret.txt", "TOPSECRET\n")
    git(repo.root, "checkout", "-q", "runner/r")
    base, blob = _new_commit(repo, "big.json", "[" + "1," * 50_000 + "1]\n")
    slot = prepare_slot(repo, base)
    assert (slot / "big.json").read_text().startswith("[1,1,")
    assert _store_git(repo, "rev-parse", "refs/base").stdout.strip() == base
    store = slot_path(repo).parent / "0.objects" / "objects"
    run_objects = repo.common_path("objects")
    linked = store / blob[:2] / blob[2:]
    assert linked.stat().st_ino == (run_objects / blob[:2] / blob[2:]).stat().st_ino
    assert _store_git(repo, "cat-file", "-e", secret).returncode != 0  # not reachable: not linked
    assert _store_git(repo, "fsck", "--connectivity-only", "refs/base").returncode == 0


def test_a_reset_fetches_what_the_run_holds_packed(repo: Repo) -> None:
    prepare_slot(repo, head(repo))
    base, blob = _new_commit(repo, "packed.txt", "in a pack\n")
    git(repo.root, "repack", "-adq")
    git(repo.root, "prune-packed")
    assert not (repo.common_path("objects") / blob[:2] / blob[2:]).exists()
    slot = prepare_slot(repo, base)
    assert (slot / "packed.txt").read_text() == "in a pack\n"
    assert _store_git(repo, "rev-parse", "refs/base").stdout.strip() == base
    assert _store_git(repo, "cat-file", "-e", blob).returncode == 0
