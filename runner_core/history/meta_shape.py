"""A quick yes to "is this meta.json of its schema?" for the records the runner itself wrote.

`runner status`, `history` and `report` read every meta.json of a run: at thousands of
iterations the compiled schema validator is a large share of their time. Every check here is
one the schema makes (`schemas/meta.schema.json`), only stricter (an integer must be a Python
int, never an integral float), so a True answer means the schema passes too; any other
document is left to the schema, which alone words what is wrong. The property in
property_tests/test_meta_shape.py holds the two together.
"""

from __future__ import annotations

from typing import Any

_TEXT = ("run_id", "node_id", "started_at", "ended_at", "backend")
_COUNTS = ("duration_ms", "attempts_before", "attempts_after")
_CHOICES = (
    ("role", frozenset({"decomposer", "executor"})),
    ("status", frozenset({"done", "retry", "decomposed"})),
    ("guard", frozenset({"pass", "fail", "skipped"})),
)
_ERROR_KINDS = frozenset({"agent", "runner"})
# How a merge session may end (runner_core.parallel.merge_session.SessionEnd's values).
MERGE_SESSION_ENDS = frozenset({"resolved", "gave_up", "rejected", "guard_failed"})
_NULLABLE = ("error_kind", "error", "tokens", "cost_usd")
# The token and test-figure counts of meta.json: records.py reads and writes them by these.
TOKEN_FIELDS: tuple[str, ...] = ("input", "output", "cached")
FIGURE_FIELDS: tuple[str, ...] = (
    "passed",
    "failed",
    "skipped",
    "total",
    "newly_passing",
    "regressed",
    "removed",
    "targets_passed",
    "targets_total",
)


def _count(value: Any, least: int = 0) -> bool:
    return type(value) is int and value >= least


def _strings(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def _counts(document: dict[str, Any], names: tuple[str, ...]) -> bool:
    for name in names:
        value = document.get(name)
        if type(value) is not int or value < 0:
            return False
    return True


def _tokens_plain(tokens: Any) -> bool:
    return tokens is None or (type(tokens) is dict and _counts(tokens, TOKEN_FIELDS))


def _tests_plain(meta: dict[str, Any]) -> bool:
    if "tests" not in meta:
        return True
    tests = meta["tests"]
    if type(tests) is not dict or not _counts(tests, FIGURE_FIELDS):
        return False
    return _strings(tests.get("flaky")) and _strings(tests.get("reasons"))


def _fields_plain(meta: dict[str, Any]) -> bool:
    for name in _TEXT:
        value = meta.get(name)
        if type(value) is not str or not value:
            return False
    for name, allowed in _CHOICES:
        value = meta.get(name)
        if type(value) is not str or value not in allowed:
            return False
    return _count(meta.get("iter"), 1) and _count(meta.get("execution"), 1)


def plainly_valid(meta: Any) -> bool:
    """True only when `meta` is of the meta.json schema; False says nothing either way."""
    if type(meta) is not dict or not _fields_plain(meta) or not _counts(meta, _COUNTS):
        return False
    if not all(name in meta for name in _NULLABLE):
        return False
    kind, error, cost = meta["error_kind"], meta["error"], meta["cost_usd"]
    if kind is not None and not (type(kind) is str and kind in _ERROR_KINDS):
        return False
    if error is not None and type(error) is not str:
        return False
    if cost is not None and not (type(cost) in (int, float) and cost >= 0):
        return False
    if type(meta.get("merge_rerun", False)) is not bool:
        return False
    if "job_base" in meta and not is_commit_id(meta["job_base"]):
        return False
    if "prompt_template" in meta and not is_sha256(meta["prompt_template"]):
        return False
    if "attempt_files" in meta and not _counts(meta, ("attempt_files",)):
        return False
    session = meta.get("merge_session", "resolved")
    if type(session) is not str or session not in MERGE_SESSION_ENDS:
        return False
    return _tokens_plain(meta["tokens"]) and _tests_plain(meta)


def is_commit_id(value: object) -> bool:
    """A full commit id, SHA-1 or SHA-256, in lowercase hex."""
    return (
        isinstance(value, str)
        and len(value) in (40, 64)
        and all(char in "0123456789abcdef" for char in value)
    )


def is_sha256(value: object) -> bool:
    """A SHA-256 digest in lower-case hex: what meta.json's `prompt_template` holds."""
    return type(value) is str and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
