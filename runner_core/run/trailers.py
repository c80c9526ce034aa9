"""The trailers of runner commits: the one home of their names, their rendering and their parsing.

Decides how an iteration's `ExecutionRecord` (plus its chain value) is written as `Runner-*`
trailers and read back from them alone, and how an operator commit's trailers read. Parsing is
strict: a damaged, repeated or unknown `Runner-*` trailer is a `DamagedTrailer` naming it.
Never reads git; the shell hands in commit messages.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import attrs
from pyrsistent import PMap, pmap

from runner_core.json_text import json_value
from runner_core.run.identity import run_id_problem

# The execution records' rules are imported where a record is written or read: telling a
# runner commit from its message (`runner validate`) defines none of their classes.
if TYPE_CHECKING:
    from runner_core.history.records import ExecutionRecord

RUN = "Runner-Run"
ITER = "Runner-Iter"
NODE = "Runner-Node"
STATUS = "Runner-Status"
GUARD = "Runner-Guard"
ROLE = "Runner-Role"
EXEC = "Runner-Exec"
STARTED_AT = "Runner-Started-At"
ENDED_AT = "Runner-Ended-At"
DURATION_MS = "Runner-Duration-Ms"
ATTEMPTS = "Runner-Attempts"
TOKENS = "Runner-Tokens"
COST_USD = "Runner-Cost-Usd"
ERROR = "Runner-Error"
ERROR_MESSAGE = "Runner-Error-Message"
BACKEND = "Runner-Backend"
# `true` on a parallel job's rerun after a merge; absent otherwise.
MERGE_RERUN = "Runner-Merge-Rerun"
# A parallel job's start commit, which the audit merges its iteration from again.
JOB_BASE = "Runner-Job-Base"
# How many changed paths an iteration not judged a pass left on its attempt ref, when any.
ATTEMPT = "Runner-Attempt-Files"
# How a parallel job's merge session ended, when one ran (meta.json's `merge_session`).
MERGE_SESSION = "Runner-Merge-Session"
CHAIN = "Runner-Chain"
OP = "Runner-Op"
ACTOR = "Runner-Actor"
NEXT_ITER = "Runner-Next-Iter"
# The dotted key a `runner config set|unset` commit changed.
CONFIG = "Runner-Config"
# The branch a run started from, on its start commit (where `runner finish` merges it).
BASE = "Runner-Base"

# An iteration commit's trailers in the order they are written; the optional ones are left
# out when the record has no value for them.
RECORD_TRAILERS: tuple[str, ...] = (
    RUN,
    ITER,
    NODE,
    STATUS,
    GUARD,
    ROLE,
    EXEC,
    STARTED_AT,
    ENDED_AT,
    DURATION_MS,
    ATTEMPTS,
    TOKENS,
    COST_USD,
    ERROR,
    ERROR_MESSAGE,
    BACKEND,
    MERGE_RERUN,
    JOB_BASE,
    ATTEMPT,
    MERGE_SESSION,
)
OPTIONAL_TRAILERS: frozenset[str] = frozenset(
    {TOKENS, COST_USD, ERROR, ERROR_MESSAGE, MERGE_RERUN, JOB_BASE, ATTEMPT, MERGE_SESSION}
)
KNOWN_TRAILERS: frozenset[str] = frozenset(
    {*RECORD_TRAILERS, CHAIN, OP, ACTOR, NEXT_ITER, CONFIG, BASE}
)

# Which trailer carries each meta.json key, so a record's own rules name the trailer.
_TRAILER_OF_FIELD: Mapping[str, str] = MappingProxyType(
    {
        "run_id": RUN,
        "iter": ITER,
        "node_id": NODE,
        "status": STATUS,
        "guard": GUARD,
        "role": ROLE,
        "execution": EXEC,
        "started_at": STARTED_AT,
        "ended_at": ENDED_AT,
        "duration_ms": DURATION_MS,
        "attempts_before": ATTEMPTS,
        "attempts_after": ATTEMPTS,
        "tokens": TOKENS,
        "cost_usd": COST_USD,
        "error_kind": ERROR,
        "error": ERROR_MESSAGE,
        "backend": BACKEND,
        "merge_rerun": MERGE_RERUN,
        "job_base": JOB_BASE,
        "attempt_files": ATTEMPT,
        "merge_session": MERGE_SESSION,
    }
)


class DamagedTrailer(ValueError):
    """A `Runner-*` trailer that does not read; `name` is the trailer, `problem` why."""

    def __init__(self, name: str, problem: str) -> None:
        self.name = name
        self.problem = problem
        super().__init__(f"damaged trailer {name}: {problem}")


# ---------------------------------------------------------------- the trailer block


def parse_trailers(message: str) -> PMap[str, str]:
    """The `Runner-*` trailers of a commit message's last paragraph.

    Other trailers (`Signed-off-by`, ...) are ignored; a `Runner-*` line that is not
    `Name: value`, names an unknown trailer or repeats one raises `DamagedTrailer`.
    """
    paragraphs = [part for part in message.strip("\n").split("\n\n") if part.strip()]
    if len(paragraphs) < 2:
        return pmap()
    found: dict[str, str] = {}
    for line in paragraphs[-1].splitlines():
        if not line.startswith("Runner-"):
            continue
        name, separator, value = line.partition(": ")
        if not separator or not value.strip():
            raise DamagedTrailer(name.rstrip(":"), "must be 'Name: value'")
        if name not in KNOWN_TRAILERS:
            raise DamagedTrailer(name, "unknown trailer")
        if name in found:
            raise DamagedTrailer(name, "appears twice")
        found[name] = value
    return pmap(found)


def render_trailers(trailers: tuple[tuple[str, str], ...]) -> str:
    """`Name: value` lines, each ending in a newline, in the order given."""
    return "".join(f"{name}: {value}\n" for name, value in trailers)


# ---------------------------------------------------------------- an execution record


def _tokens_text(tokens: Mapping[str, int]) -> str:
    return f"{tokens['input']}/{tokens['output']}/{tokens['cached']}"


def record_trailers(record: ExecutionRecord) -> tuple[tuple[str, str], ...]:
    """The record as trailers, in `RECORD_TRAILERS` order, without the chain."""
    from runner_core.history.records import record_to_meta

    meta = record_to_meta(record)
    values: dict[str, str | None] = {
        RUN: meta["run_id"],
        ITER: str(meta["iter"]),
        NODE: meta["node_id"],
        STATUS: meta["status"],
        GUARD: meta["guard"],
        ROLE: meta["role"],
        EXEC: str(meta["execution"]),
        STARTED_AT: meta["started_at"],
        ENDED_AT: meta["ended_at"],
        DURATION_MS: str(meta["duration_ms"]),
        ATTEMPTS: f"{meta['attempts_before']}/{meta['attempts_after']}",
        TOKENS: None if meta["tokens"] is None else _tokens_text(meta["tokens"]),
        COST_USD: None if meta["cost_usd"] is None else repr(meta["cost_usd"]),
        ERROR: meta["error_kind"],
        # An error message may hold newlines: a JSON string keeps it on one line, exactly.
        ERROR_MESSAGE: None if meta["error"] is None else json.dumps(meta["error"]),
        BACKEND: meta["backend"],
        MERGE_RERUN: "true" if meta.get("merge_rerun") else None,
        JOB_BASE: meta.get("job_base"),
        ATTEMPT: str(meta["attempt_files"]) if meta.get("attempt_files") else None,
        MERGE_SESSION: meta.get("merge_session"),
    }
    return tuple((name, value) for name, value in values.items() if value is not None)


def _integer(trailers: Mapping[str, str], name: str) -> int:
    text = trailers[name]
    if not text.isascii() or not text.isdigit():
        raise DamagedTrailer(name, f"must be a non-negative integer, got {text!r}")
    return int(text)


def _counts(trailers: Mapping[str, str], name: str, size: int) -> list[int]:
    parts = trailers[name].split("/")
    if len(parts) != size or not all(part.isascii() and part.isdigit() for part in parts):
        shape = "/".join(["N"] * size)
        raise DamagedTrailer(name, f"must be {shape}, got {trailers[name]!r}")
    return [int(part) for part in parts]


def _cost(trailers: Mapping[str, str]) -> float:
    try:
        value = float(trailers[COST_USD])
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise DamagedTrailer(COST_USD, f"must be a number >= 0, got {trailers[COST_USD]!r}")
    return value


def _error_message(trailers: Mapping[str, str]) -> str:
    try:
        value = json_value(trailers[ERROR_MESSAGE])
    except ValueError:
        value = None
    if not isinstance(value, str):
        raise DamagedTrailer(ERROR_MESSAGE, "must be a JSON string")
    return value


def _meta_of(trailers: Mapping[str, str]) -> dict[str, Any]:
    for name in RECORD_TRAILERS:
        if name not in trailers and name not in OPTIONAL_TRAILERS:
            raise DamagedTrailer(name, "missing")
    if (ERROR in trailers) != (ERROR_MESSAGE in trailers):
        missing = ERROR if ERROR not in trailers else ERROR_MESSAGE
        raise DamagedTrailer(missing, "missing (Runner-Error and its message go together)")
    attempts = _counts(trailers, ATTEMPTS, 2)
    tokens = None
    if TOKENS in trailers:
        tokens = dict(zip(("input", "output", "cached"), _counts(trailers, TOKENS, 3), strict=True))
    return {
        "run_id": trailers[RUN],
        "iter": _integer(trailers, ITER),
        "node_id": trailers[NODE],
        "role": trailers[ROLE],
        "status": trailers[STATUS],
        "guard": trailers[GUARD],
        "execution": _integer(trailers, EXEC),
        "started_at": trailers[STARTED_AT],
        "ended_at": trailers[ENDED_AT],
        "duration_ms": _integer(trailers, DURATION_MS),
        "error_kind": trailers.get(ERROR),
        "error": _error_message(trailers) if ERROR_MESSAGE in trailers else None,
        "tokens": tokens,
        "cost_usd": _cost(trailers) if COST_USD in trailers else None,
        "attempts_before": attempts[0],
        "attempts_after": attempts[1],
        "backend": trailers[BACKEND],
        **_merge_rerun(trailers),
        **({"job_base": trailers[JOB_BASE]} if JOB_BASE in trailers else {}),
        **({"attempt_files": _integer(trailers, ATTEMPT)} if ATTEMPT in trailers else {}),
        **({"merge_session": trailers[MERGE_SESSION]} if MERGE_SESSION in trailers else {}),
    }


def _merge_rerun(trailers: Mapping[str, str]) -> dict[str, bool]:
    if MERGE_RERUN not in trailers:
        return {}
    if trailers[MERGE_RERUN] != "true":
        raise DamagedTrailer(MERGE_RERUN, f"must be true, got {trailers[MERGE_RERUN]!r}")
    return {"merge_rerun": True}


def record_from_trailers(trailers: Mapping[str, str]) -> ExecutionRecord:
    """The execution record an iteration commit's trailers carry, from them alone.

    The record's own rules (`record_from_meta`) apply; a broken one names its trailer.
    """
    from runner_core.history.records import DamagedRecord, record_from_meta

    try:
        return record_from_meta(_meta_of(trailers))
    except DamagedRecord as error:
        name = _TRAILER_OF_FIELD.get(error.field.partition(".")[0], error.field)
        raise DamagedTrailer(name, error.problem) from None


def iteration_commit_message(subject: str, record: ExecutionRecord, chain: str) -> str:
    """An iteration commit: its subject, a blank line, the record's trailers and the chain."""
    return f"{subject}\n\n{render_trailers((*record_trailers(record), (CHAIN, chain)))}"


def is_iteration_commit(trailers: Mapping[str, str]) -> bool:
    return ITER in trailers


# ---------------------------------------------------------------- an operator commit


class NodeOperation(enum.StrEnum):
    """What `runner node <op>` does; its values are what a Runner-Op trailer may name."""

    RETRY = "retry"
    DECOMPOSE = "decompose"
    REPLACE = "replace"
    SKIP = "skip"
    ADD = "add"
    EDIT = "edit"


OPERATOR_OPS: tuple[str, ...] = tuple(op.value for op in NodeOperation)


@attrs.frozen(slots=True)
class OperatorTrailers:
    """What an operator commit (`runner node <op>`) records about itself."""

    run_id: str
    op: str
    node_id: str
    actor: str
    next_iter: int


def operator_from_trailers(trailers: Mapping[str, str]) -> OperatorTrailers:
    """The operator trailers of a commit; `DamagedTrailer` naming a missing or bad one."""
    for name in (RUN, OP, NODE, ACTOR, NEXT_ITER):
        if name not in trailers:
            raise DamagedTrailer(name, "missing")
    if trailers[OP] not in OPERATOR_OPS:
        allowed = ", ".join(OPERATOR_OPS)
        raise DamagedTrailer(OP, f"must be one of {allowed}, got {trailers[OP]!r}")
    problem = run_id_problem(trailers[RUN])
    if problem is not None:
        raise DamagedTrailer(RUN, problem)
    next_iter = _integer(trailers, NEXT_ITER)
    if next_iter < 1:
        raise DamagedTrailer(NEXT_ITER, "must be at least 1")
    return OperatorTrailers(trailers[RUN], trailers[OP], trailers[NODE], trailers[ACTOR], next_iter)
