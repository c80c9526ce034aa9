"""The files of iterations not judged a pass, on `refs/runner/attempts/<run>/<iter>`: read back.

Reads an attempt's commit (its parent and the changes it made from it), carries those changes
onto the run branch's head (a file changed on both sides merged line by line, as a parallel
job's are) into a commit no branch points to, which the node's next attempt starts from, and
lists a run's attempt refs for the audit. Which attempt a node starts from, and what its
prompt says of it, is runner_core.iteration.record' decision; this reads and writes git
objects only.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from runner_core.changes.import_rules import Change
from runner_core.iteration.record import ATTEMPTS_PREFIX, attempt_ref
from runner_shell.git.merging import carry_onto, merged_commit
from runner_shell.git.plumbing import ZERO_OID, git_bytes
from runner_shell.git.repo import Repo


@attrs.frozen(slots=True)
class AttemptFiles:
    """An attempt's commit, its parent and what it changed from that parent."""

    commit: str
    parent: str
    changes: tuple[Change, ...]


def _commit_of(root: Path, ref: str) -> str | None:
    out = git_bytes(root, ["rev-parse", "--verify", "--quiet", ref + "^{commit}"], ok_codes=(0, 1))
    return out.decode("ascii").strip() or None


def changes_between(root: Path, parent: str, commit: str) -> tuple[Change, ...]:
    """What `commit` changed from `parent`, path by path (a deletion has no mode or blob)."""
    out = git_bytes(root, ["diff-tree", "-r", "-z", "--no-renames", "--raw", parent, commit])
    tokens = out.split(b"\0")
    changes: list[Change] = []
    for meta, raw_path in zip(tokens[0::2], tokens[1::2], strict=False):
        if not meta.startswith(b":"):
            continue
        _, mode, _, oid, _ = meta[1:].decode("ascii").split(" ", 4)
        path = os.fsdecode(raw_path)
        deleted = oid == ZERO_OID or mode == "000000"
        changes.append(Change(path, None if deleted else mode, None if deleted else oid))
    return tuple(sorted(changes, key=lambda change: change.path))


def read_attempt(repo: Repo, run_id: str, iteration: int) -> AttemptFiles | None:
    """Iteration `iteration`'s attempt, None when its ref is not there (or holds no commit
    with a parent)."""
    commit = _commit_of(repo.root, attempt_ref(run_id, iteration))
    if commit is None:
        return None
    parent = _commit_of(repo.root, commit + "^1")
    if parent is None:
        return None
    return AttemptFiles(commit, parent, changes_between(repo.root, parent, commit))


def start_from_attempt(
    repo: Repo, attempt: AttemptFiles, head: str
) -> tuple[str | None, tuple[str, ...]]:
    """The commit a node's next attempt starts from: the run branch's `head` with the
    attempt's files carried onto it, or (None, the paths that conflict)."""
    changes, conflicts = carry_onto(repo, attempt.parent, head, attempt.changes)
    if conflicts:
        return None, conflicts
    message = f"runner: the files of the attempt {attempt.commit[:12]} onto {head[:12]}"
    return merged_commit(repo, head, changes, message), ()


def run_attempts(root: Path, run_id: str) -> dict[int, tuple[str, str | None]]:
    """Each attempt ref of the run by iteration: its commit and that commit's first parent."""
    prefix = f"{ATTEMPTS_PREFIX}{run_id}/"
    out = git_bytes(
        root, ["for-each-ref", "--format=%(objectname) %(parent) %(refname)", prefix]
    ).decode("utf-8", "replace")
    found: dict[int, tuple[str, str | None]] = {}
    for line in out.splitlines():
        parts = line.split(" ")
        if len(parts) < 2:
            continue
        commit, name = parts[0], parts[-1]
        parents = parts[1:-1]
        number = name[len(prefix) :]
        if number.isascii() and number.isdigit() and str(int(number)) == number:
            found[int(number)] = (commit, parents[0] if parents and parents[0] else None)
    return found
