"""One execution: the record of an iteration and its `meta.json` form, both ways.

Decides how a `meta.json` object reads as an `ExecutionRecord` (raising `DamagedRecord` naming
the bad key) and how a record writes back, keys in `META_FIELDS` order, with its token and test
figures. Never reads a file or the clock: the shell hands in parsed `meta.json` objects and the
timestamps it wrote there. What many records amount to is `records`'s.
"""

from __future__ import annotations

import enum
import functools
import math
import operator
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import attrs

from runner_core.history.meta_shape import (
    FIGURE_FIELDS,
    TOKEN_FIELDS,
    is_commit_id,
    is_sha256,
    plainly_valid,
)
from runner_core.json_form import json_form
from runner_core.tree.model import AgentRole, AgentStatus, GuardOutcome
from runner_core.validation.documents import META_SCHEMA_FILE, document_problem

# The guard's test figures are built only for an iteration whose guard wrote a report: a
# reader of records without any (`runner status` of most runs) imports no report model.
if TYPE_CHECKING:
    from runner_core.guard.ratchet import TestFigures

# ---------------------------------------------------------------- one execution


@attrs.frozen(slots=True)
class TokenUsage:
    input: int = 0
    output: int = 0
    cached: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input + other.input, self.output + other.output, self.cached + other.cached
        )


class ErrorKind(enum.StrEnum):
    AGENT = "agent"
    RUNNER = "runner"


@attrs.frozen(slots=True)
class ExecutionRecord:
    """One iteration of a run, as its `meta.json` tells it.

    `execution` numbers the node's executions 1, 2, ...; `iteration` is the run's counter.
    The timestamps are the ISO-8601 strings the shell wrote; nothing here reads a clock.
    """

    run_id: str
    node_id: str
    execution: int
    iteration: int
    role: AgentRole
    started_at: str
    ended_at: str
    status: AgentStatus
    guard: GuardOutcome
    error_kind: ErrorKind | None
    error: str | None
    tokens: TokenUsage | None
    cost_usd: float | None
    duration_ms: int
    attempts_before: int
    attempts_after: int
    backend: str
    tests: TestFigures | None = None  # the guard's test figures, when it wrote a report
    # A parallel job whose work met another's, run again on the new head: what parallelism cost.
    merge_rerun: bool = False
    # A parallel job's: the commit it started from, which the audit merges it from again.
    job_base: str | None = None
    # The SHA-256 of the repository's prompt template the prompt was made from; None: built-in.
    prompt_template: str | None = None
    # How many of its changed paths outside `.runner/` an iteration not judged a pass left on
    # its attempt ref (refs/runner/attempts/<run>/<iter>) instead of the run branch.
    attempt_files: int = 0
    # A parallel job whose files conflicted and went to a merge session (role `merger`): how
    # the session ended (runner_core.parallel.merge_session.SessionEnd); None: none ran.
    merge_session: str | None = None

    @property
    def successful(self) -> bool:
        """Guards passed on `done`, or a decomposition the runner accepted."""
        if self.status is AgentStatus.DONE:
            return self.guard is GuardOutcome.PASS and self.error is None
        return self.status is AgentStatus.DECOMPOSED and self.error is None

    @property
    def failed(self) -> bool:
        """Anything else: a failed guard, a retry, an agent or runner error."""
        return not self.successful

    @property
    def consumed_attempt(self) -> bool:
        return self.attempts_after > self.attempts_before


# ---------------------------------------------------------------- meta.json


# meta.json keys in the order the shell writes them.
META_FIELDS: tuple[str, ...] = (
    "run_id",
    "iter",
    "node_id",
    "role",
    "status",
    "guard",
    "execution",
    "started_at",
    "ended_at",
    "duration_ms",
    "error_kind",
    "error",
    "tokens",
    "cost_usd",
    "attempts_before",
    "attempts_after",
    "backend",
)


class DamagedRecord(ValueError):
    """A `meta.json` that is not an execution record; `field` names the offending key."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


# The schema has checked each value is one of these: a lookup, cheaper than the enum's call.
_STATUSES = MappingProxyType({member.value: member for member in AgentStatus})
_GUARDS = MappingProxyType({member.value: member for member in GuardOutcome})
_ROLES = MappingProxyType({member.value: member for member in AgentRole})
# A `tokens` object's counts in TokenUsage's order, in one call (a reader of every meta.json
# of a long run builds thousands).
_TOKEN_COUNTS = operator.itemgetter(*TOKEN_FIELDS)


@functools.cache
def _possible_outcomes() -> frozenset[tuple[AgentStatus, GuardOutcome]]:
    """The (status, guard) pairs of the state-update table, as a set: a record reader asks of
    each record whether its pair is one, and a pmap answers that in Python, a frozenset in C.
    Its table is imported with the first record read: a run between its first iterations
    (`runner status` after `start`) reads none."""
    from runner_core.tree.state_update import TRANSITIONS

    return frozenset(TRANSITIONS)


def _timestamp(value: str, name: str) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise DamagedRecord(name, f"must be an ISO-8601 timestamp, got {value!r}") from None
    return value


def _cost(value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise DamagedRecord("cost_usd", f"must be a number >= 0 or null, got {value!r}")
    return None if value is None else float(value)


def record_from_meta(meta: Any) -> ExecutionRecord:
    """The record a parsed `meta.json` describes.

    Every key of `META_FIELDS` must be present (the nullable ones as null); keys it does not
    know are ignored so the shell may add more. Raises `DamagedRecord` naming a bad key."""
    found = None if plainly_valid(meta) else document_problem(META_SCHEMA_FILE, meta)
    if found is not None:
        raise DamagedRecord(found.field or "meta.json", found.problem)
    status, guard = _STATUSES[meta["status"]], _GUARDS[meta["guard"]]
    if (status, guard) not in _possible_outcomes():
        raise DamagedRecord(
            "guard", f"guard={guard.value} is not possible with status={status.value}"
        )
    error_kind = None if meta["error_kind"] is None else ErrorKind(meta["error_kind"])
    if (error_kind is None) != (meta["error"] is None):
        raise DamagedRecord(
            "error_kind" if error_kind is None else "error",
            "error_kind and error must both be set or both be null",
        )
    attempts_before, attempts_after = meta["attempts_before"], meta["attempts_after"]
    if attempts_after not in (attempts_before, attempts_before + 1):
        raise DamagedRecord(
            "attempts_after",
            f"must be attempts_before ({attempts_before}) or one more, got {attempts_after}",
        )
    tokens = meta["tokens"]
    job_base = meta.get("job_base")
    if job_base is not None and not is_commit_id(job_base):
        raise DamagedRecord("job_base", f"must be a commit id, got {job_base!r}")
    attempt_files = meta.get("attempt_files", 0)
    if type(attempt_files) is not int or attempt_files < 0:
        raise DamagedRecord("attempt_files", f"must be an integer >= 0, got {attempt_files!r}")
    template = meta.get("prompt_template")
    if template is not None and not is_sha256(template):
        raise DamagedRecord("prompt_template", f"must be a SHA-256 in hex, got {template!r}")
    return ExecutionRecord(
        run_id=meta["run_id"],
        node_id=meta["node_id"],
        execution=meta["execution"],
        iteration=meta["iter"],
        role=_ROLES[meta["role"]],
        started_at=_timestamp(meta["started_at"], "started_at"),
        ended_at=_timestamp(meta["ended_at"], "ended_at"),
        status=status,
        guard=guard,
        error_kind=error_kind,
        error=meta["error"],
        tokens=None if tokens is None else TokenUsage(*_TOKEN_COUNTS(tokens)),
        cost_usd=_cost(meta["cost_usd"]),
        duration_ms=meta["duration_ms"],
        attempts_before=attempts_before,
        attempts_after=attempts_after,
        backend=meta["backend"],
        tests=_figures(meta.get("tests")),
        merge_rerun=meta.get("merge_rerun", False),
        job_base=job_base,
        prompt_template=meta.get("prompt_template"),
        attempt_files=attempt_files,
        merge_session=meta.get("merge_session"),
    )


def figures_from_json(value: Any) -> TestFigures | None:
    """The figures of meta.json's `tests` object; None when absent or not of its shape."""
    if not isinstance(value, dict) or any(
        not isinstance(value.get(name), int) for name in FIGURE_FIELDS
    ):
        return None
    if not all(isinstance(value.get(key), list) for key in ("flaky", "reasons")):
        return None
    return _figures(value)


def _figures(value: Any) -> TestFigures | None:
    if value is None:
        return None
    from runner_core.guard.ratchet import TestFigures

    counts = {name: value[name] for name in FIGURE_FIELDS}
    return TestFigures(**counts, flaky=tuple(value["flaky"]), reasons=tuple(value["reasons"]))


def record_to_meta(record: ExecutionRecord) -> dict[str, Any]:
    """The `meta.json` object of a record, keys in `META_FIELDS` order (then `tests`, present
    only when the guard wrote a report, `merge_rerun`, only when true, and `job_base`, only
    for a parallel job, `attempt_files`, only when some were set aside, and `merge_session`,
    only when one ran: a one-slot run's
    records keep the bytes they always had)."""
    meta = _meta_fields(record)
    if record.tests is not None:
        meta["tests"] = json_form(record.tests)
    if record.merge_rerun:
        meta["merge_rerun"] = True
    if record.job_base is not None:
        meta["job_base"] = record.job_base
    if record.prompt_template is not None:
        meta["prompt_template"] = record.prompt_template
    if record.attempt_files:
        meta["attempt_files"] = record.attempt_files
    if record.merge_session is not None:
        meta["merge_session"] = record.merge_session
    return meta


def _meta_fields(record: ExecutionRecord) -> dict[str, Any]:
    return {
        "run_id": record.run_id,
        "iter": record.iteration,
        "node_id": record.node_id,
        "role": record.role.value,
        "status": record.status.value,
        "guard": record.guard.value,
        "execution": record.execution,
        "started_at": record.started_at,
        "ended_at": record.ended_at,
        "duration_ms": record.duration_ms,
        "error_kind": record.error_kind.value if record.error_kind is not None else None,
        "error": record.error,
        "tokens": json_form(record.tokens),
        "cost_usd": record.cost_usd,
        "attempts_before": record.attempts_before,
        "attempts_after": record.attempts_after,
        "backend": record.backend,
    }
