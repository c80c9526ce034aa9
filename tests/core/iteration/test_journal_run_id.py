"""A journal names its run by id, never by a path: recovery deletes and renames under it."""

from __future__ import annotations

import pytest

from runner_core.iteration.recovery import JournalError, journal_from_json

JOURNAL = {
    "iter": 1,
    "node_id": "root.1",
    "role": "executor",
    "phase": "running",
    "started_at": "2024-01-01T00:00:00.000Z",
    "runner_pid": 1,
    "command": "runner step",
    "process_groups": [],
}


@pytest.mark.parametrize("run_id", ["/tmp/outside", "../../outside", "..", "a/b"])
def test_a_journal_whose_run_id_is_a_path_is_damaged(run_id: str) -> None:
    with pytest.raises(JournalError, match="journal field 'run_id': run id"):
        journal_from_json({**JOURNAL, "run_id": run_id})


def test_a_journal_with_a_run_id_is_read() -> None:
    assert journal_from_json({**JOURNAL, "run_id": "run-1a2b3c4d"}).run_id == "run-1a2b3c4d"
