"""A merge session: the agent joins a job's files that neither git nor `additions` could join.

When a finished job's files conflict with the work merged since it started, and every conflict
is one of lines in a regular file both sides changed (not a file added, removed or retyped on
a side, not `tree.json`), the runner may start a short session of the agent, role `merger`, on
the merged head instead of throwing the job away (`[parallel] merge_sessions`). The session's
checkout holds the job's files merged onto the head, each conflicted file with its conflicts
marked in the diff3 style (the head's lines, the base's, the job's) by markers longer than any
line of the three sides begins with. It answers `resolved` or `gave_up` (its own schema), may
change only the conflicted files, each left a regular file with no marker in it; what it
changed replaces those files' merges, and the guard judges the result as any merge's. A
session that gave up, broke a rule, or whose result fails the guard leaves the job to be run
again on the new head, as a conflict (docs/parallel.md). Decides all of that from values the
shell hands in; never runs the agent, reads a file or runs git.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import attrs

from runner_core.changes.import_rules import (
    EXECUTABLE_MODE,
    FILE_MODE,
    Change,
    ImportDecision,
)
from runner_core.history.records import TokenUsage
from runner_core.iteration.machine import IterationMachine
from runner_core.json_text import json_value
from runner_core.tree.model import Node
from runner_core.validation.documents import document_problem

MERGER_OUTPUT_SCHEMA_FILE = "merger_output.schema.json"
# The role's word: its agent log, its prompt's file and what the views show.
MERGER = "merger"
MERGER_PROMPT = "merger.prompt.md"
MERGER_OUTPUT = "merger_output.json"
MERGER_LOG = "merger.log"
# The most conflicted files one session is offered: past it the job runs again, as before.
MAX_SESSION_FILES = 10
# The most bytes of one marked file the session is offered (a larger one runs again).
MAX_SESSION_FILE_BYTES = 256 * 1024


class SessionEnd(enum.StrEnum):
    """How a merge session ended; only `resolved` keeps the job's work."""

    RESOLVED = "resolved"  # its files replaced the conflicts and the guard passed on them
    GAVE_UP = "gave_up"  # it said so, or gave no answer of its schema
    REJECTED = "rejected"  # it changed more than the conflicted files, or left a marker
    GUARD_FAILED = "guard_failed"  # its result did not pass the guard


@attrs.frozen(slots=True)
class MergerAnswer:
    """The session's output file, read: `resolved` or `gave_up`, and its summary."""

    resolved: bool
    summary: str


@attrs.frozen(slots=True)
class MarkedFile:
    """A conflicted file as the session gets it: its path, its mode, and its bytes with the
    conflicts marked by markers `marker_length` long."""

    path: str
    mode: str
    marked: bytes
    marker_length: int


def may_offer(enabled: bool, conflicts: Sequence[str]) -> bool:
    """Whether `conflicts` may go to a merge session at all, before any is marked: sessions
    on, and between one and MAX_SESSION_FILES of them."""
    return enabled and 0 < len(conflicts) <= MAX_SESSION_FILES


def offered(enabled: bool, conflicts: Sequence[str], line_conflicts: Sequence[MarkedFile]) -> bool:
    """Whether the conflicts go to a merge session: `may_offer`, every conflicted path one of
    lines (marked) and none too large."""
    if not may_offer(enabled, conflicts):
        return False
    marked = {item.path for item in line_conflicts}
    small = all(len(item.marked) <= MAX_SESSION_FILE_BYTES for item in line_conflicts)
    return small and marked == set(conflicts)


def read_answer(text: str | None) -> MergerAnswer | str:
    """The session's answer, or the one line saying why its output is none (it gave up)."""
    if text is None:
        return "the merge session wrote no output"
    try:
        data = json_value(text)
    except ValueError:
        return "the merge session's output is not JSON"
    problem = document_problem(MERGER_OUTPUT_SCHEMA_FILE, data)
    if problem is not None:
        where = problem.field or "output"
        return f"the merge session's output does not match its schema: {where}: {problem.problem}"
    return MergerAnswer(data["status"] == SessionEnd.RESOLVED.value, data["summary"])


def resolution_problem(
    decision: ImportDecision, files: Sequence[MarkedFile], written: Mapping[str, bytes]
) -> str | None:
    """Why the session's work is refused, or None: the import rules' own error, a runner-owned
    or other path changed besides the conflicted files, a conflicted file removed or made
    other than a regular file, or a marker left in one (`written`: each changed conflicted
    file's new bytes)."""
    if decision.agent_error is not None:
        return decision.agent_error
    allowed = {item.path: item for item in files}
    others = sorted(
        {*decision.discarded, *(c.path for c in decision.changes if c.path not in allowed)}
    )
    if others:
        return f"the merge session changed files that did not conflict: {', '.join(others[:5])}"
    changed = {change.path: change for change in decision.changes}
    for item in files:
        change = changed.get(item.path)
        if change is not None and change.mode not in (FILE_MODE, EXECUTABLE_MODE):
            return f"{item.path}: the merge session removed it or made it other than a file"
        text = item.marked if change is None else written.get(item.path, b"")
        line = marker_line(text, item.marker_length)
        if line is not None:
            return f"{item.path}: a conflict marker is left at line {line}"
    return None


def marker_line(text: bytes, length: int) -> int | None:
    """The first line (from 1) of `text` that is a conflict marker `length` long, or None."""
    for number, line in enumerate(text.split(b"\n"), 1):
        for mark in (b"<", b"|", b"=", b">"):
            start = mark * length
            if line.startswith(start) and line[length : length + 1] in (b" ", b"\r", b""):
                return number
    return None


def resolved_changes(
    changes: Sequence[Change], files: Sequence[MarkedFile], decision: ImportDecision
) -> tuple[Change, ...]:
    """The job's changes onto the head with each conflicted file the session's: its bytes as
    the session left them (unchanged marks are refused before), sorted by path."""
    session = {change.path: change for change in decision.changes}
    conflicted = {item.path for item in files}
    kept = [change for change in changes if change.path not in conflicted]
    kept += [session[path] for path in sorted(conflicted) if path in session]
    return tuple(sorted(kept, key=lambda change: change.path))


def session_prompt(template: str, node: Node, files: Sequence[MarkedFile], job_summary: str) -> str:
    """The session's prompt: the shipped template with the leaf's id and title, the job's own
    summary and the conflicted files named with their marker length, filled in."""
    listed = "\n".join(
        f"- `{item.path}` (markers of {item.marker_length} characters)" for item in files
    )
    values = {
        "node_id": node.id,
        "node_title": node.title,
        "node_goal": node.goal,
        "job_summary": job_summary or "(none)",
        "conflicted_files": listed,
    }
    out = template
    for name, value in values.items():
        out = out.replace("${" + name + "}", value)
    return out


_ENDED: Mapping[SessionEnd, str] = MappingProxyType(
    {
        SessionEnd.GAVE_UP: "gave up",
        SessionEnd.REJECTED: "was refused",
        SessionEnd.GUARD_FAILED: "joined them, but the guard fails on its result",
    }
)


def session_line(end: SessionEnd, reason: str) -> str:
    """What a session that did not resolve adds to its job's conflict line (`reason`: what
    it or the rule it broke said, on one line)."""
    assert end is not SessionEnd.RESOLVED
    said = " ".join(reason.split())
    return f"the merge session {_ENDED[end]}" + (f": {said}" if said else "")


def with_spent(
    machine: IterationMachine, tokens: TokenUsage | None, cost_usd: float | None
) -> IterationMachine:
    """The job's machine with its merge session's tokens and cost added to its agent's: the
    iteration's record counts what both agents spent."""
    if tokens is not None:
        machine = attrs.evolve(machine, tokens=tokens + (machine.tokens or TokenUsage()))
    if cost_usd is not None:
        machine = attrs.evolve(machine, cost_usd=cost_usd + (machine.cost_usd or 0.0))
    return machine
