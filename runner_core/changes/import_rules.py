"""What of an agent's scratch checkout becomes the run's: the import rules, over a listing.

The agent works in its own checkout; the shell lists that work tree (each entry's kind, size
and git blob id, never through a symlink) beside the base commit's files, and this decides,
path by path, what the iteration's commit takes: changed files and symlinks that stay inside
the tree, deletions, and the notes files only grown. Runner-owned files are never taken (a
change to one is only noted); a nested repository, a FIFO, device or socket, a symlink out of
the tree, a note rewritten, or an executor's change to a protected path its node does not allow
is the agent's error, and then nothing is taken. Never reads a file or runs git.
"""

from __future__ import annotations

import enum
import posixpath
from collections.abc import Iterable, Mapping, Sequence

import attrs
from pyrsistent import PMap, pmap

from runner_core.guard.protected import protected_changes
from runner_core.run.config import IMPORT_LIMIT_BYTES, IMPORT_LIMIT_FILES, Config

# Under `.runner/` only these are the agent's, and only to append to.
NOTES_FILES = (".runner/state/assumptions.md", ".runner/state/questions.md")
# The tree the agent edits: read and validated by the iteration, written by the runner.
TREE_FILE = ".runner/state/tree.json"
RUNNER_DIR = ".runner"
# The modes git records for a file, an executable, a symlink and a submodule.
FILE_MODE, EXECUTABLE_MODE, SYMLINK_MODE, GITLINK_MODE = "100644", "100755", "120000", "160000"
# How many offending paths an agent error names before it counts the rest.
NAMED_PROBLEMS = 5
# The longest path (in bytes, from the repository's top) and the deepest directory an iteration
# imports: git could not check a longer one out below any real repository's location (PATH_MAX
# is 4,096 bytes), and no project nests its files 200 directories deep.
MAX_PATH_BYTES = 3000
MAX_DEPTH = 200


@attrs.frozen(slots=True)
class ImportLimits:
    """The most an iteration imports: new or changed files' bytes and their number; and the
    most its checkout may grow by (`[sandbox] disk_mb`, in bytes), measured as the same new
    or changed files' bytes: the smaller of the two byte caps is the one that holds."""

    bytes: int = IMPORT_LIMIT_BYTES
    files: int = IMPORT_LIMIT_FILES
    disk_bytes: int | None = None

    @property
    def stop_bytes(self) -> int:
        """The new or changed bytes past which nothing is imported."""
        return self.bytes if self.disk_bytes is None else min(self.bytes, self.disk_bytes)


def import_limits(config: Config) -> ImportLimits:
    """The import's caps and the checkout's growth cap of `config`: the one place they meet."""
    disk_bytes = config.sandbox.disk_mb * _MIB
    return ImportLimits(config.import_limit_bytes, config.import_limit_files, disk_bytes)


_MIB = 1024 * 1024


class EntryKind(enum.StrEnum):
    FILE = "file"
    EXECUTABLE = "executable"
    SYMLINK = "symlink"
    SPECIAL = "special"  # a FIFO, device or socket
    GIT = "git"  # an entry named .git below the root: a nested repository
    TOO_LARGE = "too-large"  # a regular file past the shell's read cap, not read
    TOO_DEEP = "too-deep"  # a directory MAX_DEPTH levels down: not entered


@attrs.frozen(slots=True)
class ScratchEntry:
    """One non-directory entry of the scratch work tree (path relative, `/`-separated);
    `oid` is the git blob id of its bytes (of its target, for a symlink) when it was read."""

    path: str
    kind: EntryKind
    size: int = 0
    oid: str | None = None
    target: str | None = None


@attrs.frozen(slots=True)
class BaseEntry:
    """A file of the base commit as `git ls-tree -l` says it."""

    mode: str
    oid: str
    size: int = 0


@attrs.frozen(slots=True)
class ScratchListing:
    """What the shell gathered: the scratch entries that are not ignored, the base commit's
    files, and each notes file's bytes in the base and in the scratch tree (None: absent)."""

    entries: tuple[ScratchEntry, ...]
    base: PMap[str, BaseEntry] = attrs.field(factory=pmap)
    notes: PMap[str, tuple[bytes | None, bytes | None]] = attrs.field(factory=pmap)
    # The shell stopped listing past a limit of ImportLimits: ("bytes" | "files", how many it
    # had seen by then); the entries are then only those seen.
    stopped: tuple[str, int] | None = None
    # What the slot's `.gitattributes` files give the runner's own files beyond what the
    # base's give them (`path: attribute: value` each): the runner's files take no attribute.
    runner_attributes: tuple[str, ...] = ()


@attrs.frozen(slots=True)
class Change:
    """A path of the commit: its new mode and blob, or (None, None) when it is deleted."""

    path: str
    mode: str | None
    oid: str | None


@attrs.frozen(slots=True)
class ImportDecision:
    changes: tuple[Change, ...] = ()  # sorted by path; empty on an agent error
    discarded: tuple[str, ...] = ()  # runner-owned paths the agent changed, sorted
    agent_error: str | None = None
    # The changes of an import refused though each could be taken (a protected path changed):
    # never the run's, kept only on the iteration's attempt ref.
    set_aside: tuple[Change, ...] = ()


def is_runner_owned(path: str) -> bool:
    """Whether `path` is the runner's: all of `.runner/` but the notes files."""
    inside = path == RUNNER_DIR or path.startswith(RUNNER_DIR + "/")
    return inside and path not in NOTES_FILES


def decide_import(listing: ScratchListing, limits: ImportLimits | None = None) -> ImportDecision:
    """The commit's changes against the base, the runner-owned changes set aside, or the
    agent's error naming every offending path (sorted, the first NAMED_PROBLEMS of them), or
    the limit of `limits` the import is past (then nothing of it is taken)."""
    limits = ImportLimits() if limits is None else limits
    if listing.stopped is not None:
        return ImportDecision((), (), _over_limit(limits, *listing.stopped))
    decision = _decide(listing)
    if decision.agent_error is None and listing.runner_attributes:
        given = "; ".join(listing.runner_attributes[:NAMED_PROBLEMS])
        error = _agent_error(
            [
                f".gitattributes: gives the runner's files attributes ({given}); the runner's "
                "files are written byte for byte (keep .runner/ out of its patterns)"
            ]
        )
        return ImportDecision((), decision.discarded, error)
    if decision.agent_error is None:
        sizes = {entry.path: entry.size for entry in listing.entries}
        written = [change for change in decision.changes if change.oid is not None]
        total = sum(sizes.get(change.path, 0) for change in written)
        if len(written) > limits.files:
            return ImportDecision(
                (), decision.discarded, _over_limit(limits, "files", len(written))
            )
        if total > limits.stop_bytes:
            return ImportDecision((), decision.discarded, _over_limit(limits, "bytes", total))
    return decision


def _over_limit(limits: ImportLimits, which: str, seen: int) -> str:
    """The agent error of an import past `import_limit_<which>`, or of a checkout grown past
    `[sandbox] disk_mb` when that is the smaller cap."""
    if which == "bytes" and limits.stop_bytes < limits.bytes:
        return (
            f"the sandbox's disk_mb ({limits.stop_bytes // _MIB}) was reached: the checkout grew "
            f"by {seen:,} bytes or more of new or changed files; nothing of it is imported "
            "(write less, or raise [sandbox] disk_mb in .runner/state/config.toml)"
        )
    limit = limits.files if which == "files" else limits.bytes
    return (
        f"the iteration's import is over import_limit_{which} ({limit:,} {which}; "
        f"{seen:,} or more new or changed): nothing of it is imported (import less, or raise "
        f"import_limit_{which} in .runner/state/config.toml)"
    )


def _decide(listing: ScratchListing) -> ImportDecision:
    changes: list[Change] = []
    problems: list[str] = []
    discarded: list[str] = []
    seen = {entry.path for entry in listing.entries}
    for entry in listing.entries:
        base = listing.base.get(entry.path)
        if is_runner_owned(entry.path):
            if _differs(entry, base):
                discarded.append(entry.path)
            continue
        problem = _entry_problem(entry, base, listing.notes)
        if problem is not None:
            problems.append(f"{_named(entry.path)}: {problem}")
            continue
        change = _change(entry, base)
        if change is not None:
            changes.append(change)
    for path, base in listing.base.items():
        if path in seen or base.mode == GITLINK_MODE or _through_git(path):
            continue  # a submodule, or a path git itself would never have let in
        if is_runner_owned(path):
            discarded.append(path)
        elif path in NOTES_FILES:
            problems.append(f"{shown(path)}: deleted; it may only grow")
        else:
            changes.append(Change(path, None, None))
    if problems:
        return ImportDecision((), tuple(sorted(discarded)), _agent_error(problems))
    return ImportDecision(
        tuple(sorted(changes, key=lambda c: c.path)), tuple(sorted(discarded)), None
    )


def _differs(entry: ScratchEntry, base: BaseEntry | None) -> bool:
    if entry.path == TREE_FILE:
        return False  # the iteration validates it; never imported, never noted here
    return base is None or base.mode != _mode(entry) or base.oid != entry.oid


def _mode(entry: ScratchEntry) -> str | None:
    return {
        EntryKind.FILE: FILE_MODE,
        EntryKind.EXECUTABLE: EXECUTABLE_MODE,
        EntryKind.SYMLINK: SYMLINK_MODE,
    }.get(entry.kind)


def _entry_problem(
    entry: ScratchEntry,
    base: BaseEntry | None,
    notes: Mapping[str, tuple[bytes | None, bytes | None]],
) -> str | None:
    if entry.kind is EntryKind.GIT or _through_git(entry.path):
        return "a nested repository (.git) is never imported"
    if entry.kind is EntryKind.TOO_DEEP:
        return f"nested more than {MAX_DEPTH} directories deep; never imported"
    length = len(entry.path.encode("utf-8", "surrogateescape"))
    if length > MAX_PATH_BYTES and _differs(entry, base):
        return f"a path of {length:,} bytes, over the limit of {MAX_PATH_BYTES:,}"
    if entry.kind is EntryKind.SPECIAL:
        return "a FIFO, device or socket cannot be imported"
    if entry.kind is EntryKind.TOO_LARGE:
        regular = base is not None and base.mode in (FILE_MODE, EXECUTABLE_MODE)
        if regular and base is not None and base.size == entry.size:
            return None  # kept as the base has it: _change takes nothing
        return f"{entry.size} bytes, over the import limit"
    if entry.path in NOTES_FILES:
        return _notes_problem(entry, notes.get(entry.path, (None, None)))
    if entry.kind is EntryKind.SYMLINK and _differs(entry, base):
        return _symlink_problem(entry.path, entry.target or "")
    return None


def _notes_problem(entry: ScratchEntry, texts: tuple[bytes | None, bytes | None]) -> str | None:
    if entry.kind not in (EntryKind.FILE, EntryKind.EXECUTABLE):
        return "must stay a regular file; it may only grow"
    before, after = texts
    if before is not None and (after is None or not after.startswith(before)):
        return "earlier text was changed or removed; it may only grow (append at its end)"
    return None


def _symlink_problem(path: str, target: str) -> str | None:
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    outside = (
        not target
        or target.startswith("/")
        or resolved == ".."
        or resolved.startswith("../")
        or is_git_name(resolved.split("/")[0])
    )
    if outside:
        return f"a symbolic link to '{shown(target)}' points outside the repository"
    return None


def _change(entry: ScratchEntry, base: BaseEntry | None) -> Change | None:
    mode = _mode(entry)
    if mode is None or entry.oid is None:
        return None  # a large file kept as the base has it
    if base is not None and base.mode == mode and base.oid == entry.oid:
        return None
    return Change(entry.path, mode, entry.oid)


def _through_git(path: str) -> bool:
    return any(is_git_name(part) for part in path.split("/"))


def is_git_name(name: str) -> bool:
    """Whether git would take a path component for its own directory (`.git` in any case,
    with trailing dots or spaces, or its short name `git~1`)."""
    folded = name.rstrip(". ").lower()
    return folded in (".git", "git~1")


def shown(text: str) -> str:
    """`text` printable on one line: control, bidi and undecodable characters escaped."""
    if text.isprintable():  # format characters (bidi overrides among them) are not
        return text
    return text.encode("unicode_escape", "backslashreplace").decode("ascii")


def _named(path: str) -> str:
    """`path` as an error names it: shown, and cut after NAMED_PATH_CHARS characters."""
    text = shown(path)
    return text if len(text) <= NAMED_PATH_CHARS else text[:NAMED_PATH_CHARS] + "..."


NAMED_PATH_CHARS = 200


def _agent_error(problems: Iterable[str]) -> str:
    ordered = sorted(problems)
    named = "; ".join(ordered[:NAMED_PROBLEMS])
    more = len(ordered) - NAMED_PROBLEMS
    suffix = f"; and {more} more" if more > 0 else ""
    return f"the scratch checkout holds what is never imported: {named}{suffix}"


def guarded_import(
    decision: ImportDecision, protected: Sequence[str], acceptance_before: Sequence[str]
) -> ImportDecision:
    """An executor's import, refused when it changes a protected path its node does not allow
    (`[guard] protected`, `may-edit:`): a weakened test is never taken into the run."""
    if decision.agent_error is not None or not protected:
        return decision
    lines = protected_changes(
        (change.path for change in decision.changes), protected, acceptance_before
    )
    if not lines:
        return decision
    more = len(lines) - NAMED_PROBLEMS
    error = "; ".join(lines[:NAMED_PROBLEMS]) + (f"; and {more} more" if more > 0 else "")
    return ImportDecision(
        discarded=decision.discarded, agent_error=error, set_aside=decision.changes
    )


def import_note(decision: ImportDecision) -> str | None:
    """The iteration log's note of the runner-owned files the agent changed (not imported)."""
    if not decision.discarded:
        return None
    lines = "".join(f"{path}\n" for path in decision.discarded)
    return f"runner-owned files the agent changed were not imported:\n{lines}"
