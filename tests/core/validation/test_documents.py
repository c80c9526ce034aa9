"""run_state.json and the journal are checked against their shipped JSON Schemas.

Each problem is one line naming the field, taken from the schema's own descriptions.
"""

from __future__ import annotations

from typing import Any

import pytest
from pyrsistent import pmap

from runner_core.iteration.recovery import Journal, JournalError, JournalPhase, journal_from_json
from runner_core.run.state import RunStateError, run_state_from_json

JOURNAL = {
    "run_id": "run-1",
    "iter": 3,
    "node_id": "root.1",
    "role": "executor",
    "phase": "writing",
    "started_at": "2026-01-01T00:00:00.000Z",
    "runner_pid": 4242,
    "command": "runner step",
    "process_groups": [100],
    "commit_subject": None,
}


def test_a_journal_reads_back() -> None:
    assert journal_from_json(JOURNAL) == Journal(
        "run-1",
        3,
        "root.1",
        "executor",
        JournalPhase.WRITING,
        "2026-01-01T00:00:00.000Z",
        4242,
        "runner step",
        (100,),
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"iter": "3"}, "journal field 'iter' must be int"),
        ({"iter": True}, "journal field 'iter' must be int"),
        (
            {"phase": "sleeping"},
            "journal field 'phase' must be one of ('running', 'writing', 'committing'), "
            "got 'sleeping'",
        ),
        ({"process_groups": [1]}, "journal field 'process_groups' must be process group ids"),
        ({"commit_subject": 7}, "journal field 'commit_subject' must be str or null"),
    ],
)
def test_a_damaged_journal_names_its_field(change: dict[str, Any], message: str) -> None:
    with pytest.raises(JournalError) as raised:
        journal_from_json({**JOURNAL, **change})

    assert str(raised.value) == message


def test_a_journal_without_a_field_names_it() -> None:
    data = {key: value for key, value in JOURNAL.items() if key != "node_id"}

    with pytest.raises(JournalError, match=r"^journal field 'node_id' missing$"):
        journal_from_json(data)


@pytest.mark.parametrize(
    "executions",
    [{"root.1": 0}, {"root.1": "2"}, ["root.1"]],
)
def test_execution_counts_must_be_positive_integers(executions: Any) -> None:
    with pytest.raises(RunStateError, match=r"^executions must map node ids to integers >= 1$"):
        run_state_from_json({"executions": executions})


def test_execution_counts_read_back() -> None:
    state = run_state_from_json({"next_iter": 4, "executions": {"root.1": 2, "root": 1}})

    assert state.executions == pmap({"root.1": 2, "root": 1})
    assert state.known_executions() == pmap({"root.1": 2, "root": 1})
    assert run_state_from_json({"next_iter": 4}).known_executions() is None
    assert run_state_from_json({}).known_executions() == pmap()
