"""A finished job's changes, written beside its journal and read back by `runner recover`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runner_core.changes.import_rules import Change, ImportDecision
from runner_core.parallel.job_changes import (
    JobChanges,
    JobChangesError,
    job_changes_from_json,
    job_changes_json,
)

BASE = "a" * 40
BLOB = "b" * 40


def _document(**fields: Any) -> dict[str, Any]:
    imported = ImportDecision(
        (Change("src/a.py", "100644", BLOB), Change("old.txt", None, None)),
        (".runner/state/run_state.json",),
    )
    found = job_changes_json(JobChanges(3, BASE, imported))
    found["changes"].sort(key=lambda item: item["path"])
    found.update(fields)
    return found


def test_what_the_loop_writes_reads_back_the_same() -> None:
    imported = ImportDecision(
        (Change("old.txt", None, None), Change("src/a.py", "100755", BLOB)),
        (".runner/state/tree.json",),
        None,
    )
    changes = JobChanges(7, BASE, imported)
    text = json.dumps(job_changes_json(changes))
    assert job_changes_from_json(json.loads(text)) == changes


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"iter": 0}, "job changes field 'iter' must be an iteration number"),
        ({"base": "HEAD~1" + "0" * 34}, "job changes field 'base' must be a commit id"),
        ({"extra": 1}, "job changes"),
        (
            {"changes": [{"path": "../out", "mode": "100644", "oid": BLOB}]},
            "job changes field 'changes.0' names a path no import takes: '../out'",
        ),
        (
            {"changes": [{"path": "a/.git/config", "mode": "100644", "oid": BLOB}]},
            "job changes field 'changes.0' names a path no import takes: 'a/.git/config'",
        ),
        (
            {"changes": [{"path": ".runner/state/tree.json", "mode": "100644", "oid": BLOB}]},
            "job changes field 'changes.0' names a runner-owned path: '.runner/state/tree.json'",
        ),
        (
            {"changes": [{"path": "a", "mode": None, "oid": BLOB}]},
            "job changes field 'changes.0' must have both a mode and a blob id, or neither",
        ),
        (
            {"changes": [{"path": "a", "mode": "100644", "oid": "Z" * 40}]},
            "job changes field 'changes.0' must name its blob by its hex id",
        ),
        (
            {"changes": [{"path": "a", "mode": "160000", "oid": BLOB}]},
            "job changes field 'changes.0.mode' must be a file mode or null",
        ),
        (
            {
                "changes": [
                    {"path": "b", "mode": None, "oid": None},
                    {"path": "a", "mode": None, "oid": None},
                ]
            },
            "job changes field 'changes' must be sorted by path, each once",
        ),
    ],
)
def test_a_file_the_loop_did_not_write_is_refused_naming_the_field(
    fields: dict[str, Any], problem: str
) -> None:
    with pytest.raises(JobChangesError) as raised:
        job_changes_from_json(_document(**fields))
    assert str(raised.value).startswith(problem), str(raised.value)


def test_a_document_that_is_no_object_is_refused() -> None:
    with pytest.raises(JobChangesError, match=r"^job changes is not a JSON object$"):
        job_changes_from_json([])
