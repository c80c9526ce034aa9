"""What a finished job's agent left, kept beside its journal once its slot goes to another job.

A job that finished frees its slot before its turn to merge (docs/parallel.md), so the next
job's reset wipes the work tree its changes were listed from. The changes were listed already,
their blobs stored: the loop writes them here (`schemas/job_changes.schema.json`) before it
frees the slot, and `runner recover` takes them from here after a kill, as it takes a running
job's from its slot. Reading one back trusts nothing: each path must be one an import could
have taken (relative, no `.` or `..` part, no `.git`, not the runner's own), each blob a hex
id. Reads no file.
"""

from __future__ import annotations

from typing import Any

import attrs

from runner_core.changes.import_rules import (
    Change,
    ImportDecision,
    is_git_name,
    is_runner_owned,
)
from runner_core.validation.documents import JOB_CHANGES_SCHEMA_FILE, document_problem


class JobChangesError(ValueError):
    """A job's changes file that is not one the loop wrote; str() names the field."""


@attrs.frozen(slots=True)
class JobChanges:
    """Job `iteration`, started at commit `base`: what the import rules took of its work."""

    iteration: int
    base: str
    imported: ImportDecision


def job_changes_json(changes: JobChanges) -> dict[str, Any]:
    """The document the loop writes (canonical JSON is the shell's)."""
    imported = changes.imported
    return {
        "iter": changes.iteration,
        "base": changes.base,
        "changes": [
            {"path": change.path, "mode": change.mode, "oid": change.oid}
            for change in imported.changes
        ],
        "discarded": list(imported.discarded),
        "agent_error": imported.agent_error,
    }


def job_changes_from_json(obj: Any) -> JobChanges:
    """A job's changes from parsed JSON; `JobChangesError` names the field."""
    found = document_problem(JOB_CHANGES_SCHEMA_FILE, obj)
    if found is not None:
        where = f" field '{found.field}'" if found.field else ""
        raise JobChangesError(f"job changes{where} {found.problem}")
    if not _is_hex(obj["base"]):
        raise JobChangesError("job changes field 'base' must be a commit id")
    changes = []
    for index, item in enumerate(obj["changes"]):
        problem = _change_problem(item["path"], item["mode"], item["oid"])
        if problem is not None:
            raise JobChangesError(f"job changes field 'changes.{index}' {problem}")
        changes.append(Change(item["path"], item["mode"], item["oid"]))
    paths = [change.path for change in changes]
    if paths != sorted(set(paths)):
        raise JobChangesError("job changes field 'changes' must be sorted by path, each once")
    imported = ImportDecision(tuple(changes), tuple(obj["discarded"]), obj["agent_error"])
    return JobChanges(obj["iter"], obj["base"], imported)


def _change_problem(path: str, mode: str | None, oid: str | None) -> str | None:
    parts = path.split("/")
    if any(part in ("", ".", "..") or is_git_name(part) for part in parts) or "\0" in path:
        return f"names a path no import takes: {path!r}"
    if is_runner_owned(path):
        return f"names a runner-owned path: {path!r}"
    if (mode is None) != (oid is None):
        return "must have both a mode and a blob id, or neither (a deletion)"
    if oid is not None and not _is_hex(oid):
        return "must name its blob by its hex id"
    return None


def _is_hex(text: str) -> bool:
    return len(text) in (40, 64) and all(char in "0123456789abcdef" for char in text)
