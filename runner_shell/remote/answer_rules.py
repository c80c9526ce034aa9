"""The import rules applied again, on the coordinator, to a remote answer's commit.

A worker says which changes its agent made; a local slot's changes are decided by the import
rules over a listing of the scratch checkout (runner_core/changes/import_rules.py). Here the
same rules decide over a listing of the answer's commit beside its start commit, under the
loop's own config: runner-owned files (`.runner/`, its config.toml among them), `.git` names
and nested repositories, symlinks out of the tree, notes that only grow, protected paths, and
the per-file import cap. The answer is taken only when that decision is exactly the changes
the commit holds; anything else is a worker's answer no honest worker makes (docs/temporal.md).
"""

from __future__ import annotations

from pyrsistent import pmap

from runner_core.changes.import_rules import (
    EXECUTABLE_MODE,
    FILE_MODE,
    GITLINK_MODE,
    NOTES_FILES,
    SYMLINK_MODE,
    BaseEntry,
    Change,
    EntryKind,
    ScratchEntry,
    ScratchListing,
    decide_import,
    guarded_import,
)
from runner_core.iteration.facts import IterationFacts
from runner_core.tree.model import AgentRole
from runner_shell.git.hardened import run_git
from runner_shell.git.repo import Repo
from runner_shell.scratch.listing import IMPORT_MAX_BYTES

_KINDS = {
    FILE_MODE: EntryKind.FILE,
    EXECUTABLE_MODE: EntryKind.EXECUTABLE,
    SYMLINK_MODE: EntryKind.SYMLINK,
    GITLINK_MODE: EntryKind.GIT,
}


def refused_import(
    repo: Repo, base: str, files: str, changes: dict[str, Change], facts: IterationFacts
) -> str | None:
    """Why the rules would not import `changes` (what commit `files` changed from `base`), or
    None when they import exactly those."""
    if not changes:
        return None
    base_tree = _tree(repo, base)
    answer = _tree(repo, files)
    entries = tuple(
        _entry(repo, path, mode, oid, size)
        for path, (mode, oid, size) in sorted(answer.items())
        # A submodule the start commit has is no agent's nested repository.
        if not (mode == GITLINK_MODE and base_tree.get(path) == (mode, oid, size))
    )
    notes = pmap(
        {path: (_blob(repo, base_tree, path), _blob(repo, answer, path)) for path in NOTES_FILES}
    )
    listing = ScratchListing(
        entries,
        pmap({path: BaseEntry(mode, oid, size) for path, (mode, oid, size) in base_tree.items()}),
        notes,
    )
    decision = decide_import(listing)
    if facts.role is AgentRole.EXECUTOR:
        decision = guarded_import(decision, facts.config.guard_protected, facts.node.acceptance)
    if decision.agent_error is not None:
        return decision.agent_error
    if decision.discarded:
        return "it changes runner-owned files: " + ", ".join(decision.discarded[:5])
    if {change.path: change for change in decision.changes} != changes:
        return "its changes are not what the import rules take from its commit"
    return None


def _tree(repo: Repo, commit: str) -> dict[str, tuple[str, str, int]]:
    """Each path of `commit` (recursively): its mode, oid and size (0 for a gitlink)."""
    said = run_git(("ls-tree", "-r", "-l", "-z", "--full-tree", commit), repo.root)
    found: dict[str, tuple[str, str, int]] = {}
    for item in said.stdout.decode("utf-8", errors="surrogateescape").split("\0"):
        if not item:
            continue
        meta, _, path = item.partition("\t")
        mode, _kind, oid, size = meta.split()
        found[path] = (mode, oid, int(size) if size.isdigit() else 0)
    return found


def _entry(repo: Repo, path: str, mode: str, oid: str, size: int) -> ScratchEntry:
    kind = _KINDS.get(mode, EntryKind.SPECIAL)
    if kind in (EntryKind.FILE, EntryKind.EXECUTABLE) and size > IMPORT_MAX_BYTES:
        return ScratchEntry(path, EntryKind.TOO_LARGE, size)
    if kind is EntryKind.SYMLINK:
        target = _cat(repo, oid).decode("utf-8", errors="surrogateescape")
        return ScratchEntry(path, kind, size, oid, target)
    return ScratchEntry(path, kind, size, oid if kind is not EntryKind.GIT else None)


def _blob(repo: Repo, tree: dict[str, tuple[str, str, int]], path: str) -> bytes | None:
    found = tree.get(path)
    if found is None or found[0] not in (FILE_MODE, EXECUTABLE_MODE):
        return None
    return _cat(repo, found[1])


def _cat(repo: Repo, oid: str) -> bytes:
    return run_git(("cat-file", "blob", oid), repo.root).stdout
