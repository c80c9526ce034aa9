"""HEAD read from the files git keeps it in, without a git process, when they plainly say.

`HEAD` names a branch (`ref: refs/heads/<name>`) or holds a commit id; the branch's commit is
its loose ref file or its line in `packed-refs`, in the common git directory. Anything else (a
symlink, another ref storage, a name git would not write, no commit yet) is left to git:
the answer here is git's own or none at all.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from runner_shell.store.files import FileTooLarge, NotRegularFile, read_bytes_capped

if TYPE_CHECKING:  # attrs is imported by whoever builds one: `branch_from_files` needs none
    from runner_core.run.outside_change import GitHead

_OID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_BRANCH_PREFIX = "ref: refs/heads/"
_REF_MAX_BYTES = 4096
_PACKED_REFS_MAX_BYTES = 64 * 1024 * 1024


def head_from_files(git_dir: Path, common_dir: Path) -> GitHead | None:
    """HEAD's branch (None when detached) and commit, or None when git is to be asked."""
    from runner_core.run.outside_change import GitHead

    found = branch_from_files(git_dir, common_dir)
    return None if found is None else GitHead(*found)


def branch_from_files(git_dir: Path, common_dir: Path) -> tuple[str | None, str] | None:
    """`head_from_files` as a pair: the branch (None when detached) and the commit."""
    head = _text(git_dir / "HEAD", _REF_MAX_BYTES)
    if head is None:
        return None
    if _OID.fullmatch(head):
        return None, head
    branch = head.removeprefix(_BRANCH_PREFIX)
    if branch == head or not _plain(branch):
        return None
    ref = f"refs/heads/{branch}"
    loose = _text(common_dir / ref, _REF_MAX_BYTES)
    if loose is not None:
        return (branch, loose) if _OID.fullmatch(loose) else None
    packed = _text(common_dir / "packed-refs", _PACKED_REFS_MAX_BYTES)
    for line in (packed or "").splitlines():
        oid, _, name = line.partition(" ")
        if name == ref and _OID.fullmatch(oid):
            return branch, oid
    return None


def _plain(branch: str) -> bool:
    """A branch name git writes as a plain file path (none of `.`-led, empty or odd parts)."""
    parts = branch.split("/")
    return all(
        part and not part.startswith(".") and not part.endswith(".lock") for part in parts
    ) and not any(ch in branch for ch in "\\\0 ~^:?*[" + "".join(map(chr, range(32))))


def _text(path: Path, limit: int) -> str | None:
    """The regular file's text without its line end; None when it is not there, or not a
    regular file, or too large, or not ASCII."""
    try:
        data = read_bytes_capped(path, limit)
    except (OSError, NotRegularFile, FileTooLarge):
        return None
    try:
        return data.decode("ascii").removesuffix("\n")
    except UnicodeDecodeError:
        return None
