"""The commit's record of an iteration ended by a merge (runner_core.iteration.steps) says
it was a merge rerun; every other runner error's record does not."""

from __future__ import annotations

import attrs
import pytest

from runner_core.iteration.effects import Done, ReadConfig
from runner_core.iteration.facts import MERGE_RERUNS, Failure
from runner_core.iteration.machine import IterationMachine, start_iteration
from tests.core.iteration.test_iteration_machine import (
    EXECUTOR_RESULTS,
    at,
    commit_of,
    drive,
    facts,
    file_data,
    outcome_of,
)


def ended_by(failure: Failure | None) -> tuple[bool, dict[str, object]]:
    """Run an executor iteration up to its config check, end it by `failure` as the merge queue
    does (a runner error), then commit: the record's flag and meta.json."""
    machine: IterationMachine = start_iteration(facts())
    while not isinstance(machine.effect, ReadConfig):
        machine = machine.feed(EXECUTOR_RESULTS.get(type(machine.effect), Done()), at(1.0))
    if failure is not None:
        machine = attrs.evolve(machine, failure=failure, runner_error="work met", output=None)
    effects, _ = drive(machine, EXECUTOR_RESULTS)
    meta = file_data(commit_of(effects), "meta.json")
    return outcome_of(effects).record.merge_rerun, meta


@pytest.mark.parametrize("failure", sorted(MERGE_RERUNS))
def test_a_job_that_did_not_merge_is_recorded_as_a_merge_rerun(failure: Failure) -> None:
    flagged, meta = ended_by(failure)
    assert flagged is True
    assert (meta["merge_rerun"], meta["error_kind"]) == (True, "runner")
    assert meta["attempts_after"] == meta["attempts_before"]


@pytest.mark.parametrize("failure", [None, Failure.IO, Failure.AGENT_PROCESS])
def test_any_other_end_writes_no_merge_rerun(failure: Failure | None) -> None:
    flagged, meta = ended_by(failure)
    assert flagged is False
    assert "merge_rerun" not in meta
