"""tree.before.json / tree.after.json cost no new disk when their bytes already exist.

An iteration whose tree.json is the previous iteration's tree.after.json links its
tree.before.json to that snapshot; a reader sees the same bytes. Once the archive holds them,
the previous iteration's snapshots leave its directory: only the last keeps a copy on disk.
Snapshots are read-only and linked only among themselves, never to tree.json, so editing
tree.json in place (as an agent may) never reaches a snapshot. A link is made only while its
source holds the bytes the runner compared (an agent may have rewritten or replaced it);
otherwise the snapshot is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from runner_shell.git.log_archive import read_archived
from runner_shell.store.files import READ_ONLY, link_if_sha256
from tests.helpers.e2e import Project, node

DONE = 'printf \'{"status": "done", "summary": "ok"}\' > "$RUNNER_OUTPUT_PATH"'


def two_steps(project: Project) -> None:
    project.prepare(
        node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)]),
        guard_command=["true"],
        agent_command=["sh", "-c", DONE],
    )
    for _ in range(2):
        result = project.runner("step")
        assert result.returncode == 0, result.stderr


def test_the_next_before_snapshot_is_the_previous_after_snapshot(project: Project) -> None:
    project.prepare(
        node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)]),
        guard_command=["true"],
        agent_command=["sh", "-c", DONE],
    )
    assert project.runner("step").returncode == 0
    after_1 = project.iter_dir(1) / "tree.after.json"
    kept = os.stat(after_1)
    assert project.runner("step").returncode == 0
    before_2 = project.iter_dir(2) / "tree.before.json"

    assert (before_2.stat().st_dev, before_2.stat().st_ino) == (kept.st_dev, kept.st_ino)
    for snapshot in (before_2, project.iter_dir(2) / "tree.after.json"):
        assert stat.S_IMODE(snapshot.stat().st_mode) == 0o444


def test_only_the_last_iteration_keeps_its_snapshots_the_archive_holds_every_one(
    project: Project,
) -> None:
    two_steps(project)
    names = frozenset({"tree.before.json", "tree.after.json"})
    archived = read_archived(project.root, project.run_id, names) or {}

    assert not any((project.iter_dir(1) / name).exists() for name in names)
    assert sorted(archived) == [(n, name) for n in (1, 2) for name in sorted(names)]
    for name in names:
        assert archived[(2, name)] == (project.iter_dir(2) / name).read_bytes()
    assert archived[(1, "tree.after.json")] == archived[(2, "tree.before.json")]
    shown = project.runner("diff", "1", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["source"] == f"refs/runner/logs/{project.run_id}:0-99/1"


def test_tree_json_is_never_linked_to_a_snapshot(project: Project) -> None:
    two_steps(project)
    after_2 = project.iter_dir(2) / "tree.after.json"

    assert project.tree_path.stat().st_nlink == 1
    assert project.tree_path.read_bytes() == after_2.read_bytes()
    with project.tree_path.open("r+b") as handle:  # an agent editing tree.json in place
        handle.write(b"X")
    assert after_2.read_bytes() != project.tree_path.read_bytes()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_snapshot_is_linked_only_while_it_holds_the_bytes_named(tmp_path: Path) -> None:
    source, target = tmp_path / "1.json", tmp_path / "2.json"
    source.write_bytes(b'{"id": "root"}')

    assert not link_if_sha256(source, target, sha256(b'{"id": "other"}'), READ_ONLY)
    assert not target.exists()
    assert link_if_sha256(source, target, sha256(b'{"id": "root"}'), READ_ONLY)
    assert target.stat().st_ino == source.stat().st_ino
    assert stat.S_IMODE(target.stat().st_mode) == READ_ONLY


def test_a_snapshot_that_is_not_a_regular_file_is_never_linked_nor_waited_on(
    tmp_path: Path,
) -> None:
    fifo, link, target = tmp_path / "fifo", tmp_path / "link", tmp_path / "target"
    os.mkfifo(fifo)
    (tmp_path / "real").write_bytes(b"x")
    link.symlink_to(tmp_path / "real")

    assert not link_if_sha256(fifo, target, sha256(b""))
    assert not link_if_sha256(link, target, sha256(b"x"))
    assert not link_if_sha256(tmp_path / "gone", target, sha256(b""))
    assert not target.exists() and (tmp_path / "real").stat().st_nlink == 1
