"""The stage table is the whole story of which stage follows which.

Every transition the machine makes in the iteration scenarios is one `TRANSITIONS` lists, and
every one it lists is made by some scenario: the table is neither looser nor stricter than the
machine. A result that does not answer the effect, a result fed after the end, or a transition
off the table raise `IterationMachineError`.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import pytest

from runner_core.changes.import_rules import EntryKind, ScratchEntry, ScratchListing
from runner_core.guard.report import report_from_cases
from runner_core.iteration.effects import (
    ANSWERS,
    Abort,
    AgentFinished,
    Carried,
    CarryWork,
    Commit,
    CommitFailed,
    CommitPart,
    ConfigRead,
    CountExecutions,
    Done,
    ExecutionsCounted,
    Finished,
    GuardFinished,
    HeadRead,
    IoFailed,
    ListScratch,
    NotStarted,
    PrepareIterationDir,
    ReadConfig,
    ReadHead,
    ReadTree,
    RestoreConfig,
    Result,
    RunAgent,
    RunGuard,
    ScratchListed,
    TreeRead,
    WriteContext,
    WriteIterationFile,
    WriteJournal,
)
from runner_core.iteration.facts import (
    TRANSITIONS,
    IterationFacts,
    IterationMachineError,
    Stage,
    check_transition,
)
from runner_core.iteration.machine import IterationMachine, start_iteration
from runner_core.run.config import parse_config
from runner_core.run.outside_change import BranchSeen
from runner_core.run.state import RunState
from tests.core.iteration.test_iteration_machine import (
    CONFIG_BYTES,
    EXECUTOR_RESULTS,
    HEAD_BEFORE,
    RUNNER_ERRORS,
    TIMEOUT,
    at,
    decomposable,
    edited_tree,
    facts,
)

Transition = tuple[Stage, Stage]

UNMOVED = HeadRead(BranchSeen(HEAD_BEFORE, HEAD_BEFORE.sha))
CHECKED = {**EXECUTOR_RESULTS, ReadHead: UNMOVED}
# The operator committed on the run branch (outside .runner/): kept, the agent's work carried.
MOVED = HeadRead(BranchSeen(attrs.evolve(HEAD_BEFORE, sha="b" * 40), "b" * 40, True, ("a.txt",)))
RESET = HeadRead(BranchSeen(attrs.evolve(HEAD_BEFORE, sha="b" * 40), "b" * 40, False))
WORKED = ScratchListed(ScratchListing((ScratchEntry("new.txt", EntryKind.FILE, 3, "3" * 40),)))
UNCOUNTED = RunState(run_id="run-1", next_iter=5)
DECOMPOSED = AgentFinished(
    0,
    False,
    '{"summary": "split", "children": '
    '[{"title": "A", "goal": "a", "acceptance": [], "next": "execute"}]}',
    None,
)


def transitions(
    start: IterationFacts, results: Mapping[type, Result | list[Result]], clock: float = 1.0
) -> list[Transition]:
    """The stages the machine passes through, fed `results[type(effect)]` (Done otherwise; a
    list gives its results in turn, its last repeating)."""
    machine = start_iteration(start)
    made: list[Transition] = []
    given = {kind: list(value) for kind, value in results.items() if isinstance(value, list)}

    def answer(kind: type) -> Result:
        found = results.get(kind, Done())
        if not isinstance(found, list):
            return found
        queue = given[kind]
        return queue.pop(0) if len(queue) > 1 else queue[0]

    while not isinstance(machine.effect, Finished | Abort):
        after = machine.feed(answer(type(machine.effect)), at(clock))
        made.append((machine.stage, after.stage))
        machine = after
    return made


def checked(start: IterationFacts | None = None) -> IterationFacts:
    return attrs.evolve(facts() if start is None else start, head=HEAD_BEFORE, confined=True)


def _runner_error_scenarios() -> list[
    tuple[IterationFacts, Mapping[type, Result | list[Result]], float]
]:
    base: dict[type, Result] = {
        ReadTree: TreeRead(edited_tree()),
        ReadConfig: ConfigRead(CONFIG_BYTES),
    }
    return [(facts(), {**base, **_results_of(param.values[0])}, 1.0) for param in RUNNER_ERRORS]


def _results_of(case: object) -> Mapping[type, Result]:
    """The results a RUNNER_ERRORS case feeds the machine: its first value, a dict."""
    assert isinstance(case, dict), case
    return case


def _ratchet(start: IterationFacts, **guard: object) -> IterationFacts:
    data = {
        "agent": {"backend": "command", "command": ["agent"]},
        "guard": {"command": ["ci"], "mode": "ratchet", **guard},
        "iteration_timeout_secs": int(TIMEOUT),
    }
    return attrs.evolve(start, config=parse_config(data))


PASSED = report_from_cases([("t::a", "passed", 0)])
FAILED = report_from_cases([("t::a", "failed", 0)])
STOPPED = GuardFinished(None, False, interrupted="SIGTERM")


SCENARIOS: list[tuple[IterationFacts, Mapping[type, Result | list[Result]], float]] = [
    *_runner_error_scenarios(),
    (facts(), EXECUTOR_RESULTS, 1.0),
    (facts(), {**EXECUTOR_RESULTS, RunGuard: GuardFinished(None, True)}, 40.0),
    (facts(), EXECUTOR_RESULTS, TIMEOUT + 1),
    (facts(), {**EXECUTOR_RESULTS, ReadTree: TreeRead(b"{")}, 1.0),
    (facts(), {**EXECUTOR_RESULTS, ReadConfig: ConfigRead(b"changed")}, 1.0),
    (
        facts(),
        {**EXECUTOR_RESULTS, ReadConfig: ConfigRead(None), RestoreConfig: IoFailed("full")},
        1.0,
    ),
    (facts(state=UNCOUNTED), {**EXECUTOR_RESULTS, CountExecutions: ExecutionsCounted({})}, 1.0),
    (facts(state=UNCOUNTED), {**EXECUTOR_RESULTS, CountExecutions: IoFailed("gone")}, 1.0),
    (
        facts(state=UNCOUNTED),
        {**EXECUTOR_RESULTS, ReadConfig: ConfigRead(None), CountExecutions: ExecutionsCounted({})},
        1.0,
    ),
    (facts(), {**EXECUTOR_RESULTS, Commit: CommitFailed(CommitPart.COMMIT, "locked")}, 1.0),
    (facts(), {**EXECUTOR_RESULTS, Commit: IoFailed("disk full")}, 1.0),
    (facts(), {**EXECUTOR_RESULTS, PrepareIterationDir: IoFailed("disk full")}, 1.0),
    (facts(), {**EXECUTOR_RESULTS, WriteContext: IoFailed("disk full")}, 1.0),
    (facts(), {**EXECUTOR_RESULTS, WriteJournal: IoFailed("disk full")}, 1.0),
    (facts(decomposable()), {RunAgent: DECOMPOSED, ReadConfig: ConfigRead(CONFIG_BYTES)}, 1.0),
    (facts(), {**EXECUTOR_RESULTS, RunGuard: IoFailed("gone")}, 1.0),
    (checked(), {**CHECKED, ReadHead: UNMOVED}, 1.0),
    (checked(), {**CHECKED, ReadHead: MOVED}, 1.0),
    (checked(), {**CHECKED, ReadHead: RESET}, 1.0),
    (checked(), {**CHECKED, ReadHead: IoFailed("no git")}, 1.0),
    (
        attrs.evolve(checked(), scratch=True),
        {**CHECKED, ListScratch: WORKED, ReadHead: MOVED, CarryWork: Carried((), ("new.txt",))},
        1.0,
    ),
    (
        attrs.evolve(checked(), scratch=True),
        {**CHECKED, ListScratch: WORKED, ReadHead: MOVED, CarryWork: IoFailed("locked")},
        1.0,
    ),
    (checked(), {**CHECKED, WriteIterationFile: IoFailed("disk full")}, 1.0),
    (checked(), {**CHECKED, RunAgent: AgentFinished(3, False, None, None)}, 1.0),
    (checked(), {**CHECKED, ReadTree: TreeRead(b"{")}, 1.0),
    (checked(), {**CHECKED, RunGuard: GuardFinished(None, True)}, 40.0),
    (checked(), {**CHECKED, RunGuard: GuardFinished(1, False)}, 1.0),
    (
        checked(facts(decomposable())),
        {RunAgent: DECOMPOSED, ReadHead: UNMOVED, ReadConfig: ConfigRead(b"")},
        1.0,
    ),
    # A ratchet: the base commit measured first, reruns of a regression, interruptions.
    (
        _ratchet(facts()),
        {**EXECUTOR_RESULTS, RunGuard: GuardFinished(1, False, report=PASSED)},
        1.0,
    ),
    (_ratchet(facts()), {**EXECUTOR_RESULTS, RunGuard: NotStarted("no ci")}, 1.0),
    (_ratchet(checked()), {**CHECKED, RunGuard: STOPPED}, 1.0),
    (
        _ratchet(facts(), rerun_failures=2),
        {
            **EXECUTOR_RESULTS,
            RunGuard: [
                GuardFinished(0, False, report=PASSED),
                GuardFinished(1, False, report=FAILED),
            ],
        },
        1.0,
    ),
    (
        _ratchet(checked(), rerun_failures=2),
        {
            **CHECKED,
            RunGuard: [
                GuardFinished(0, False, report=PASSED),
                GuardFinished(1, False, report=FAILED),
                STOPPED,
            ],
        },
        1.0,
    ),
    (
        _ratchet(facts()),
        {
            **EXECUTOR_RESULTS,
            RunGuard: [
                GuardFinished(0, False, report=PASSED),
                GuardFinished(1, False, report=FAILED),
                STOPPED,
            ],
        },
        1.0,
    ),
]


def scratch(
    scenario: tuple[IterationFacts, Mapping[type, Result | list[Result]], float],
) -> tuple[IterationFacts, Mapping[type, Result | list[Result]], float]:
    """The scenario with the agent in a scratch checkout: the end checks list it first."""
    start, results, clock = scenario
    listed = {ListScratch: ScratchListed(ScratchListing(())), **results}
    return attrs.evolve(start, scratch=True), listed, clock


SCENARIOS.extend([scratch(scenario) for scenario in SCENARIOS])
SCENARIOS.append(scratch((facts(), {**EXECUTOR_RESULTS, ListScratch: IoFailed("gone")}, 1.0)))


def table() -> set[Transition]:
    return {(before, after) for before, nexts in TRANSITIONS.items() for after in nexts}


def made_by_scenarios() -> set[Transition]:
    return {pair for start, res, clock in SCENARIOS for pair in transitions(start, res, clock)}


def test_every_transition_of_the_scenarios_is_in_the_table() -> None:
    assert made_by_scenarios() <= table()


def test_every_transition_in_the_table_is_made_by_some_scenario() -> None:
    assert table() - made_by_scenarios() == set()


def test_the_table_lists_every_stage_and_ends_only_at_done() -> None:
    assert set(TRANSITIONS) == set(Stage)
    assert TRANSITIONS[Stage.DONE] == frozenset()
    assert all(nexts for stage, nexts in TRANSITIONS.items() if stage is not Stage.DONE)


def test_a_transition_off_the_table_is_refused() -> None:
    with pytest.raises(IterationMachineError, match="illegal iteration transition agent -> done"):
        check_transition(Stage.AGENT, Stage.DONE)


def test_a_result_that_does_not_answer_the_effect_is_refused() -> None:
    machine = start_iteration(facts())  # asks to prepare the directory

    with pytest.raises(IterationMachineError, match="HeadRead does not answer PrepareIterationDir"):
        machine.feed(UNMOVED, at(0))


def test_a_result_fed_after_the_end_is_refused() -> None:
    machine: IterationMachine = start_iteration(facts())
    while not isinstance(machine.effect, Finished | Abort):
        machine = machine.feed(EXECUTOR_RESULTS.get(type(machine.effect), Done()), at(1))

    with pytest.raises(IterationMachineError, match="does not answer Finished"):
        machine.feed(Done(), at(2))


def test_every_effect_the_shell_performs_has_its_answers() -> None:
    assert all(IoFailed in answers for answers in ANSWERS.values())
    assert RunAgent in ANSWERS and ANSWERS[RunAgent][0] is AgentFinished
