"""Interrupted iterations, and the word every view shows for an iteration's status.

Decides, from the journal an iteration left behind and the subject of HEAD, whether the
iteration had already committed (only the journal is stale) or must be recorded as a runner
error `interrupted` with the previous tree and every attempt kept; and what an iteration's
status is called where it is shown (`shown_status`), apart from the plan's tree rules so the
views show the words without importing them. Reads nothing itself.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from runner_core.run.identity import run_id_problem
from runner_core.tree.model import AgentRole, AgentRoleValue
from runner_core.validation.documents import JOURNAL_SCHEMA_FILE, document_problem


class JournalPhase(enum.StrEnum):
    """Where an iteration stands: the agent or guard may be running, its log is being written,
    or its commit is being made."""

    RUNNING = "running"
    WRITING = "writing"
    COMMITTING = "committing"


# The logs an iteration in progress writes: its agent's (named by its role), then the guard's,
# moved to guard.log when the iteration commits.
PENDING_GUARD_LOG = ".guard.log.pending"
DECOMPOSER_LOG = "planner_executor.log"
EXECUTOR_LOG = "executor.log"


def agent_log_name(role: str) -> str:
    """The log of the agent with this role (an AgentRole value)."""
    return DECOMPOSER_LOG if role == "decomposer" else EXECUTOR_LOG


def running_log_names(journal: Journal) -> tuple[str, str]:
    """The logs the journal's iteration writes while it runs: its agent's, then its guard's."""
    return agent_log_name(journal.role), PENDING_GUARD_LOG


class JournalError(ValueError):
    """A journal file that cannot be understood."""


def _role(value: AgentRole | AgentRoleValue) -> AgentRole:
    return AgentRole(value)


@attrs.frozen(slots=True)
class Journal:
    """The iteration in progress, written durably before the agent starts (`role` an
    `AgentRole` or its value)."""

    run_id: str
    iteration: int
    node_id: str
    role: AgentRole = attrs.field(converter=_role)
    phase: JournalPhase
    started_at: str
    runner_pid: int
    command: str
    process_groups: tuple[int, ...] = ()
    commit_subject: str | None = None


def journal_to_json(journal: Journal) -> dict[str, Any]:
    return {
        "run_id": journal.run_id,
        "iter": journal.iteration,
        "node_id": journal.node_id,
        "role": journal.role.value,
        "phase": journal.phase.value,
        "started_at": journal.started_at,
        "runner_pid": journal.runner_pid,
        "command": journal.command,
        "process_groups": list(journal.process_groups),
        "commit_subject": journal.commit_subject,
    }


def journal_from_json(obj: Any) -> Journal:
    """A journal from parsed JSON; `JournalError` names the field (schemas/journal)."""
    found = document_problem(JOURNAL_SCHEMA_FILE, obj)
    if found is not None:
        if not found.field:
            raise JournalError(f"journal {found.problem}")
        raise JournalError(f"journal field '{found.field}' {found.problem}")
    # Recovery deletes and renames under the run's directory: a run id, never a path.
    problem = run_id_problem(obj["run_id"])
    if problem is not None:
        raise JournalError(f"journal field 'run_id': {problem}")
    return Journal(
        run_id=obj["run_id"],
        iteration=obj["iter"],
        node_id=obj["node_id"],
        role=obj["role"],
        phase=JournalPhase(obj["phase"]),
        started_at=obj["started_at"],
        runner_pid=obj["runner_pid"],
        command=obj["command"],
        process_groups=tuple(obj["process_groups"]),
        commit_subject=obj.get("commit_subject"),
    )


# Every runner error of an iteration a signal or a dead runner stopped starts with this word
# (the machine's `interrupted by SIGTERM`, recovery's `interrupted: the runner ...`).
INTERRUPTED = "interrupted"


class RecoveryKind(enum.StrEnum):
    ALREADY_COMMITTED = "already-committed"
    INTERRUPTED = "interrupted"
    # A killed loop's remote job whose answer was there: taken and committed as the loop would.
    ANSWER_TAKEN = "answer-taken"


def recovery_kind(journal: Journal, head_subject: str | None) -> RecoveryKind:
    """The commit is the iteration's last act: if HEAD is it, nothing was lost."""
    if journal.commit_subject is not None and head_subject == journal.commit_subject:
        return RecoveryKind.ALREADY_COMMITTED
    return RecoveryKind.INTERRUPTED


def interrupted_message(journal: Journal) -> str:
    return (
        f"{INTERRUPTED}: the runner (pid {journal.runner_pid}, '{journal.command}') stopped during "
        f"iteration {journal.iteration} ({journal.phase.value}) of node '{journal.node_id}'"
    )


def job_committed(iteration: int, next_iter: int) -> bool:
    """Whether a parallel job's journal is of an iteration already committed (its loop died
    before removing it): the journal is stale, the job neither runs nor needs recovering."""
    return iteration < next_iter


def interrupted_problem(journal: Journal) -> str:
    """The line step/loop/validate print while an interrupted iteration waits for recovery."""
    return (
        f"iteration {journal.iteration} of run {journal.run_id} (node '{journal.node_id}') was "
        f"interrupted while {journal.phase.value}; run 'runner recover' to record it and continue"
    )


RUNNER_ERROR = "runner_error"
RATE_LIMITED = "rate_limited"
CONFLICT = "conflict"
# A parallel job whose conflicting files a merge session joined, judged a pass on the result.
MERGED = "merged"
# What each kind of runner error is called where an iteration is shown: an
# agent's own retry is `retry`; the runner's failing is never called one.
STATUS_WORDS = (
    "done",
    "retry",
    "decomposed",
    MERGED,
    RUNNER_ERROR,
    INTERRUPTED,
    RATE_LIMITED,
    CONFLICT,
)
_LIMIT_PREFIXES = ("rate_limited:", "usage_limited:")


def shown_status(
    status: str,
    error_kind: str | None,
    error: str | None,
    merge_rerun: bool = False,
    merge_session: str | None = None,
) -> str:
    """The status every view shows of an iteration: the agent's own (`done`, `retry`,
    `decomposed`), `merged` for a `done` whose conflicting files a merge session joined
    (meta.json keeps `done`, with `merge_session = "resolved"`), or for a runner error the
    word of its kind: `interrupted` (stopped by a signal), `rate_limited` (the agent hit a
    usage or rate limit), `conflict` (a parallel job's work met another's and runs again) or
    `runner_error`. meta.json keeps `retry` for all of them, with `error_kind = "runner"` and
    the reason in `error`."""
    if error_kind != "runner":
        resolved = merge_session == "resolved" and status == "done"
        return MERGED if resolved else status
    text = error or ""
    if merge_rerun:
        return CONFLICT
    if text.startswith(INTERRUPTED):
        return INTERRUPTED
    if text.startswith(_LIMIT_PREFIXES):
        return RATE_LIMITED
    return RUNNER_ERROR
