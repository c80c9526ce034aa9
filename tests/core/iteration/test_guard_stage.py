"""The guard's part of an iteration, driven through the machine: what every guard is told, the
ratchet's run at the base commit, reruns that tell a flaky test, the verdict, the figures in
meta.json and tests.json, and protected test files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence

import attrs
import pytest
from pyrsistent import pmap

from runner_core.changes.import_rules import BaseEntry, EntryKind, ScratchEntry, ScratchListing
from runner_core.guard.ratchet import NO_TARGETS
from runner_core.guard.report import TestFailure, TestReport, report_from_cases
from runner_core.iteration.effects import (
    Abort,
    AgentFinished,
    Commit,
    Done,
    Effect,
    Finished,
    GuardFinished,
    ListScratch,
    Result,
    RunAgent,
    RunGuard,
    ScratchListed,
    WriteIterationFile,
)
from runner_core.iteration.events import after_result
from runner_core.iteration.facts import IterationFacts
from runner_core.iteration.guard_stage import (
    BASELINE_REPORT,
    JUDGE_REPORT,
    GuardRun,
    failure_context,
    judging_text,
)
from runner_core.iteration.machine import IterationMachine, start_iteration
from runner_core.iteration.plan import RunPlan, plan_step
from runner_core.iteration.recovery import PENDING_GUARD_LOG
from runner_core.loop.events import Event
from runner_core.run.config import Config, ConfigError, parse_config
from runner_core.run.sandbox_config import LimitHit
from runner_core.tree.model import AgentStatus, GuardOutcome
from runner_core.views.follow import event_text
from tests.core.iteration.test_iteration_machine import EXECUTOR_RESULTS, at, decomposable, facts

Results = Mapping[type, Result | Sequence[Result]]


def report(**outcomes: str) -> TestReport:
    return report_from_cases((f"t::{name}", outcome, 1) for name, outcome in outcomes.items())


def ratchet_facts(
    baseline: TestReport | None = None,
    acceptance: tuple[str, ...] = (),
    **guard: object,
) -> IterationFacts:
    start = facts()
    data = {
        "agent": {"backend": "command", "command": ["agent"]},
        "guard": {"command": ["ci"], "mode": "ratchet", **guard},
        "iteration_timeout_secs": 100,
    }
    config: Config = parse_config(data)
    node = attrs.evolve(start.plan.node, acceptance=acceptance)
    plan = attrs.evolve(start.plan, node=node)
    return attrs.evolve(start, config=config, baseline=baseline, plan=plan)


def drive(machine: IterationMachine, results: Results) -> tuple[list[Effect], IterationMachine]:
    """Feed each effect its result: a sequence gives its results in turn, the last repeating."""
    queues: dict[type, Iterator[Result]] = {}

    def answer(kind: type) -> Result:
        given = results.get(kind, Done())
        if not isinstance(given, Sequence):
            return given
        queue = queues.setdefault(kind, iter([*given[:-1], *([given[-1]] * 10)]))
        return next(queue)

    seen: list[Effect] = []
    while not isinstance(machine.effect, Finished | Abort):
        seen.append(machine.effect)
        machine = machine.feed(answer(type(machine.effect)), at(1.0))
    seen.append(machine.effect)
    return seen, machine


def guards(effects: list[Effect]) -> list[RunGuard]:
    return [effect for effect in effects if isinstance(effect, RunGuard)]


def finished(effects: list[Effect]) -> Finished:
    end = effects[-1]
    assert isinstance(end, Finished)
    return end


def commit_file(effects: list[Effect], name: str) -> bytes | None:
    commit = next(effect for effect in effects if isinstance(effect, Commit))
    found = [file for file in commit.files if file.name == name]
    return None if not found else (found[0].data if isinstance(found[0].data, bytes) else b"")


def guard_log_notes(effects: list[Effect]) -> str:
    return "".join(
        effect.text
        for effect in effects
        if isinstance(effect, WriteIterationFile) and effect.name.endswith("guard.log.pending")
    )


def judged(now: TestReport, exit_code: int = 1) -> GuardFinished:
    return GuardFinished(exit_code, False, report=now)


# ---------------------------------------------------------------- what every guard is told


def test_every_guard_is_told_what_it_judges_and_where_to_write_its_report() -> None:
    effects, _ = drive(start_iteration(facts()), EXECUTOR_RESULTS)

    (guard,) = guards(effects)
    env = dict(guard.env)
    assert env["RUNNER_RUN_ID"] == "run-1"
    assert env["RUNNER_ITER"] == "1"
    assert env["RUNNER_NODE_ID"] == "leaf"
    assert env["RUNNER_NODE_PATH"].endswith("leaf")
    assert env["RUNNER_ROLE"] == "executor"
    assert json.loads(env["RUNNER_ACCEPTANCE"]) == list(facts().node.acceptance)
    assert guard.report_name == JUDGE_REPORT and guard.purpose is GuardRun.JUDGE


def test_exit_mode_judges_by_the_exit_code_alone_and_still_keeps_the_figures() -> None:
    results = {**EXECUTOR_RESULTS, RunGuard: GuardFinished(0, False, report=report(a="failed"))}
    effects, _ = drive(start_iteration(facts()), results)

    end = finished(effects)
    assert end.outcome.guard is GuardOutcome.PASS
    assert end.record.tests is not None and end.record.tests.failed == 1
    assert len(guards(effects)) == 1  # no baseline run, no rerun


# ---------------------------------------------------------------- the ratchet


def test_a_ratchet_without_a_known_baseline_measures_the_base_commit_before_the_agent() -> None:
    base = report(a="passed", b="failed")
    now = report(a="passed", b="passed")
    results = {**EXECUTOR_RESULTS, RunGuard: [judged(base), judged(now, 0)]}
    effects, _ = drive(start_iteration(ratchet_facts()), results)

    first, second = guards(effects)
    assert first.purpose is GuardRun.BASELINE and first.report_name == BASELINE_REPORT
    kinds = [type(effect).__name__ for effect in effects]
    assert kinds.index("RunGuard") < kinds.index("RunAgent")  # before the agent
    assert second.purpose is GuardRun.JUDGE
    end = finished(effects)
    assert end.outcome.guard is GuardOutcome.PASS
    assert end.record.tests is not None and end.record.tests.line() == "tests=2/2 +1 -0"
    assert end.tests == now  # the committed files' report: the next iteration's baseline


def test_a_known_baseline_is_not_measured_again() -> None:
    base = report(a="passed", b="failed")
    results = {**EXECUTOR_RESULTS, RunGuard: judged(report(a="passed", b="passed"))}
    effects, _ = drive(start_iteration(ratchet_facts(base)), results)

    assert [guard.purpose for guard in guards(effects)] == [GuardRun.JUDGE]
    assert finished(effects).outcome.guard is GuardOutcome.PASS


def test_a_regression_fails_the_done_with_its_reason_in_the_guard_log_and_the_record() -> None:
    base = report(a="passed", b="failed")
    results = {**EXECUTOR_RESULTS, RunGuard: judged(report(a="failed", b="passed"))}
    effects, _ = drive(start_iteration(ratchet_facts(base)), results)

    end = finished(effects)
    assert end.outcome.guard is GuardOutcome.FAIL
    assert end.outcome.status is AgentStatus.DONE
    assert end.record.tests is not None
    assert end.record.tests.reasons == ("regressed test 't::a' (failed)",)
    assert "regressed test 't::a' (failed)" in guard_log_notes(effects)
    # Run once more to tell a flaky test, with its own report and log.
    assert [guard.purpose for guard in guards(effects)] == [GuardRun.JUDGE, GuardRun.RERUN]


def test_a_regression_that_passes_when_run_again_is_flaky_and_does_not_fail_the_leaf() -> None:
    base = report(a="passed", b="failed")
    first = judged(report(a="failed", b="passed"))
    again = judged(report(a="passed", b="passed"), 0)
    results = {**EXECUTOR_RESULTS, RunGuard: [first, again]}
    effects, _ = drive(start_iteration(ratchet_facts(base)), results)

    end = finished(effects)
    assert end.outcome.guard is GuardOutcome.PASS
    assert end.record.tests is not None and end.record.tests.flaky == ("t::a",)
    assert "flaky (passed when run again): t::a" in guard_log_notes(effects)
    assert commit_file(effects, "guard.rerun-1.log") is not None or any(
        file.name == "guard.rerun-1.log"
        for effect in effects
        if isinstance(effect, Commit)
        for file in effect.files
    )


def test_a_rerun_that_reached_a_sandbox_limit_fails_the_iteration_naming_it() -> None:
    base = report(a="passed")
    first = judged(report(a="failed"))
    again = GuardFinished(None, False, process_group=79, sandbox_limit=LimitHit("memory_mb"))
    results = {**EXECUTOR_RESULTS, RunGuard: [first, again]}
    effects, _ = drive(start_iteration(ratchet_facts(base)), results)

    end = finished(effects)
    assert len(guards(effects)) == 2
    assert end.outcome.runner_error is None and end.outcome.tree.children[1].attempts == 1
    error = end.outcome.agent_error
    assert error is not None and error.startswith("the sandbox's memory_mb (8192) was reached")
    assert "by the guard" in error


def test_a_baseline_that_reached_a_sandbox_limit_is_a_runner_error_and_no_agent_runs() -> None:
    baseline = GuardFinished(None, False, process_group=77, sandbox_limit=LimitHit("pids_max"))
    results = {**EXECUTOR_RESULTS, RunGuard: baseline}
    effects, _ = drive(start_iteration(ratchet_facts()), results)

    end = finished(effects)
    assert RunAgent not in {type(effect) for effect in effects}
    assert end.outcome.agent_error is None and end.outcome.tree.children[1].attempts == 0
    error = end.outcome.runner_error
    assert error is not None and "pids_max (2048) was reached by the guard measuring" in error


def test_reruns_stop_at_rerun_failures() -> None:
    base = report(a="passed")
    results = {**EXECUTOR_RESULTS, RunGuard: judged(report(a="failed"))}
    for reruns, runs in ((0, 1), (1, 2), (3, 4)):
        effects, _ = drive(start_iteration(ratchet_facts(base, rerun_failures=reruns)), results)
        assert len(guards(effects)) == runs


def test_a_missing_or_broken_report_fails_a_ratchet_done_and_says_why() -> None:
    base = report(a="failed")
    for result, reason in (
        (GuardFinished(0, False), "wrote no report"),
        (GuardFinished(0, False, report_problem="is not well-formed XML"), "not well-formed"),
    ):
        effects, _ = drive(
            start_iteration(ratchet_facts(base)), {**EXECUTOR_RESULTS, RunGuard: result}
        )
        end = finished(effects)
        assert end.outcome.guard is GuardOutcome.FAIL
        assert reason in guard_log_notes(effects)
        assert end.tests is None and commit_file(effects, "tests.json") is None


def test_target_tests_named_by_the_acceptance_before_the_agent_must_pass() -> None:
    base = report(a="failed", b="failed")
    now = report(a="failed", b="passed")
    results = {**EXECUTOR_RESULTS, RunGuard: judged(now)}
    effects, _ = drive(start_iteration(ratchet_facts(base, ("test: t::a",))), results)

    end = finished(effects)
    assert end.outcome.guard is GuardOutcome.FAIL
    assert end.record.tests is not None
    assert end.record.tests.reasons == ("target test 't::a' failed",)


def test_tests_json_lists_the_tests_that_did_not_pass_and_what_changed_against_the_baseline() -> (
    None
):
    base = report(a="passed", b="failed", gone="passed")
    now = report(a="passed", b="passed", new="skipped")
    results = {**EXECUTOR_RESULTS, RunGuard: judged(now)}
    effects, _ = drive(start_iteration(ratchet_facts(base, rerun_failures=0)), results)

    data = commit_file(effects, "tests.json")
    assert data is not None
    document = json.loads(data)
    assert [test["id"] for test in document["tests"]] == ["t::new"]
    assert (document["passed"], document["unlisted_tests"], document["unlisted_changes"]) == (
        2,
        0,
        0,
    )
    assert document["changes"] == [
        {"id": "t::b", "before": "failed", "after": "passed"},
        {"id": "t::gone", "before": "passed", "after": None},
        {"id": "t::new", "before": None, "after": "skipped"},
    ]
    assert document["reasons"] == ["regressed test 't::gone' (missing)"]


def test_the_executor_prompt_names_its_target_tests_and_the_baselines_failures() -> None:
    text = judging_text(("test: t::b*",), report(a="passed", b1="failed", c="error"))
    assert text is not None
    assert "- t::b*" in text
    assert "2 of 3 tests do not pass" in text
    assert text.index("t::b1") < text.index("t::c")  # the node's own failing tests first


# ---------------------------------------------------------------- protected test files


def _listing(path: str) -> ScratchListed:
    base = pmap({path: BaseEntry("100644", "1" * 40, 3)})
    entry = ScratchEntry(path, EntryKind.FILE, 4, "2" * 40)
    return ScratchListed(ScratchListing((entry,), base))


def test_an_executor_that_changes_a_protected_test_file_is_the_agents_error() -> None:
    start = attrs.evolve(ratchet_facts(report(a="passed"), protected=["tests/**"]), scratch=True)
    results = {
        **EXECUTOR_RESULTS,
        RunGuard: judged(report(a="passed", b="passed")),
        ListScratch: _listing("tests/test_a.py"),
    }
    effects, _ = drive(start_iteration(start), results)

    end = finished(effects)
    assert end.outcome.agent_error is not None
    assert "changed protected test file 'tests/test_a.py'" in end.outcome.agent_error
    assert end.outcome.guard is GuardOutcome.SKIPPED
    commit = next(effect for effect in effects if isinstance(effect, Commit))
    assert commit.changes == ()  # the weakened test is never taken into the run
    assert end.tests is None


def test_a_refused_import_runs_no_guard_and_shows_no_test_figures() -> None:
    # The import is decided before the guard; a rejected one is never judged.
    start = attrs.evolve(ratchet_facts(report(a="passed"), protected=["tests/**"]), scratch=True)
    results = {
        **EXECUTOR_RESULTS,
        RunGuard: judged(report(a="passed", b="passed")),
        ListScratch: _listing("tests/test_a.py"),
    }
    effects, _ = drive(start_iteration(start), results)

    assert RunGuard not in [type(effect) for effect in effects]
    end = finished(effects)
    assert end.record.tests is None
    assert commit_file(effects, "tests.json") is None


def test_the_scratch_checkout_is_listed_before_the_guard_judges_it() -> None:
    # The import (and its blobs) is taken before the guard runs, so what the
    # guard then writes is never imported; the listing is not asked for again after it.
    start = attrs.evolve(ratchet_facts(report(a="passed")), scratch=True)
    results = {
        **EXECUTOR_RESULTS,
        RunGuard: judged(report(a="passed", b="passed")),
        ListScratch: _listing("src/a.py"),
    }
    effects, _ = drive(start_iteration(start), results)

    kinds = [type(effect) for effect in effects]
    assert kinds.count(ListScratch) == 1
    assert kinds.index(ListScratch) < kinds.index(RunGuard)
    commit = next(effect for effect in effects if isinstance(effect, Commit))
    assert [change.path for change in commit.changes] == ["src/a.py"]
    assert finished(effects).outcome.guard is GuardOutcome.PASS


def test_may_edit_in_the_acceptance_before_the_agent_allows_a_protected_path() -> None:
    start = ratchet_facts(
        report(a="passed"), ("may-edit: tests/test_a.py",), protected=["tests/**"]
    )
    results = {
        **EXECUTOR_RESULTS,
        RunGuard: judged(report(a="passed", b="passed")),
        ListScratch: _listing("tests/test_a.py"),
    }
    effects, _ = drive(start_iteration(attrs.evolve(start, scratch=True)), results)

    end = finished(effects)
    assert end.outcome.agent_error is None
    assert end.outcome.guard is GuardOutcome.PASS


# ---------------------------------------------------------------- [guard] require_targets


def test_require_targets_fails_a_node_that_names_no_target_test_on_a_green_suite() -> None:
    # The suite is green, the node names no test; it is judged by regressions
    # alone unless require_targets says a node must name its tests.
    base = report(a="passed")
    results = {**EXECUTOR_RESULTS, RunGuard: judged(report(a="passed"), exit_code=0)}
    loose, _ = drive(start_iteration(ratchet_facts(base)), results)
    strict, _ = drive(start_iteration(ratchet_facts(base, require_targets=True)), results)

    assert finished(loose).outcome.guard is GuardOutcome.PASS
    end = finished(strict)
    assert end.outcome.guard is GuardOutcome.FAIL
    assert end.record.tests is not None
    assert end.record.tests.reasons == (NO_TARGETS,)


def test_require_targets_passes_a_node_whose_target_tests_pass() -> None:
    start = ratchet_facts(report(a="passed"), ("test: t::b",), require_targets=True)
    results = {**EXECUTOR_RESULTS, RunGuard: judged(report(a="passed", b="passed"), exit_code=0)}
    effects, _ = drive(start_iteration(start), results)

    assert finished(effects).outcome.guard is GuardOutcome.PASS


@pytest.mark.parametrize(
    ("guard", "message"),
    [
        ({"require_targets": "yes"}, "must be true or false, got 'yes'"),
        ({"require_targets": True}, 'needs mode = "ratchet"'),
    ],
)
def test_require_targets_is_a_boolean_of_ratchet_mode(
    guard: dict[str, object], message: str
) -> None:
    data = {
        "agent": {"backend": "command", "command": ["a"]},
        "guard": {"command": ["ci"], **guard},
    }
    with pytest.raises(ConfigError, match=re.escape(message)) as raised:
        parse_config(data)
    assert str(raised.value).startswith("guard.require_targets: ")


# ---------------------------------------------------------------- the verdict in every view


def _guard_events(start: IterationFacts, results: Results) -> list[Event]:
    """The guard_finished events of an iteration, as the shell's drive loop emits them."""
    machine = start_iteration(start)
    events: list[Event] = []
    seen: dict[type, int] = {}
    while not isinstance(machine.effect, Finished):
        given = results.get(type(machine.effect), Done())
        if isinstance(given, Sequence):
            index = seen.get(type(machine.effect), 0)
            seen[type(machine.effect)] = index + 1
            given = given[min(index, len(given) - 1)]
        events += [
            e for e in after_result(machine, given, "t", 0.5) if e.type.value == "guard_finished"
        ]
        machine = machine.feed(given, at(1.0))
    return events


def test_a_ratchet_guard_run_says_it_is_judged_by_its_report_not_by_its_exit_code() -> None:
    # Once `guard finished: fail exit=1`, then `guard=pass`; now the run's exit code
    # stands beside "judged by its report", and the verdict is the iteration's.
    start = ratchet_facts(report(a="passed"), ("test: t::b",))
    results = {**EXECUTOR_RESULTS, RunGuard: judged(report(a="passed", b="passed"), exit_code=1)}
    (event,) = _guard_events(start, results)

    assert (event.figures["outcome"], event.figures["exit_code"]) == ("reported", 1)
    assert event_text(event) == ("  guard finished: exit=1 after 0.5s; judged by its report",)


def test_an_exit_mode_guard_run_says_its_verdict_with_its_exit_code() -> None:
    results = {**EXECUTOR_RESULTS, RunGuard: GuardFinished(1, False)}
    (event,) = _guard_events(facts(), results)

    assert event_text(event) == ("  guard finished: fail exit=1 after 0.5s",)


def test_a_baseline_run_is_named_as_one() -> None:
    results = {
        **EXECUTOR_RESULTS,
        RunGuard: [judged(report(a="failed")), judged(report(a="passed"))],
    }
    baseline, judge = _guard_events(ratchet_facts(None), results)

    assert event_text(baseline)[0].startswith("  guard finished (baseline): exit=1")
    assert judge.figures["run"] == "judge"


# ---------------------------------------------------------------- test ids the decomposer sees


def _decomposer(baseline: TestReport | None, *acceptances: list[str]) -> list[Effect]:
    start = attrs.evolve(ratchet_facts(baseline), tree=decomposable())
    plan = plan_step(start.tree, start.state, 100)
    assert isinstance(plan, RunPlan)
    start = attrs.evolve(start, plan=plan)
    children = [
        {"title": f"C{n}", "goal": "g", "acceptance": acceptance, "next": "execute"}
        for n, acceptance in enumerate(acceptances)
    ]
    output = json.dumps({"summary": "split", "children": children})
    effects, _ = drive(
        start_iteration(start),
        {**EXECUTOR_RESULTS, RunAgent: AgentFinished(0, False, output, None)},
    )
    return effects


def _prompt(effects: list[Effect]) -> str:
    return next(
        e.text for e in effects if isinstance(e, WriteIterationFile) and e.name == "prompt.md"
    )


def test_the_decomposer_sees_the_baselines_test_ids_grouped_by_suite() -> None:
    base = report_from_cases(
        [
            ("test::camelCase spaces", "failed", 0),
            ("test::kebab", "passed", 0),
            ("go::TestA", "passed", 0),
        ]
    )
    prompt = _prompt(_decomposer(base, ["test: *camelcase*"]))

    section = prompt.split("## Tests that judge this node\n", 1)[1]
    assert "names 3 tests (2 passing)" in section
    assert "- go:: TestA\n- test:: camelCase spaces, kebab\n" in section


def test_a_decomposition_names_patterns_no_test_matches_and_nodes_judged_by_regressions_alone() -> (
    None
):
    base = report_from_cases([("test::camelCase spaces", "failed", 0)])
    effects = _decomposer(base, ["test: *camelcase*"], ["test: *kebab*"], ["it works"])

    summary = finished(effects).outcome.summary
    assert "test patterns no test matches yet: big.2: '*kebab*'" in summary
    assert "judged by regressions alone (no test: entry): big.3" in summary
    assert "big.1" not in summary


def test_the_executor_is_told_to_add_a_test_for_a_pattern_no_test_matches() -> None:
    text = judging_text(("test: *kebab*", "test: t::a"), report(a="failed"))
    assert text is not None
    assert "- *kebab* (no test matches it now: add a test whose id matches '*kebab*')" in text
    assert "- t::a\n" in text


# ---------------------------------------------------------------- prompt headings nest


def test_the_prompts_heading_levels_nest_and_the_goal_section_is_the_projects_goal() -> None:
    # Once `## Project goal` held the selected node, then GOAL.md's own `# Goal`.
    start = attrs.evolve(facts(), goal="---\nid: run-1\n---\n\n# Goal\n\n## Parts\n\nShip.\n")
    effects, _ = drive(start_iteration(start), EXECUTOR_RESULTS)
    prompt = _prompt(effects)

    goal = prompt.split("## Project goal\n\n", 1)[1].split("\n## ", 1)[0]
    assert goal.startswith("### Goal\n\n#### Parts\n\nShip.")
    assert "Selected node" not in goal
    levels = [
        len(line) - len(line.lstrip("#")) for line in prompt.splitlines() if line.startswith("#")
    ]
    assert min(levels) == 2 and levels.count(2) == prompt.count("\n## ") + prompt.startswith("## ")


def test_exit_mode_with_a_report_notes_each_failing_test_once() -> None:
    failing = TestReport(
        report(a="passed", b="failed").results,
        (TestFailure("t::b", "expected 1, got 2", "at b.py:3"),),
    )
    effects, _ = drive(start_iteration(facts()), {**EXECUTOR_RESULTS, RunGuard: judged(failing)})

    note = next(
        e.text for e in effects if isinstance(e, WriteIterationFile) and e.name == PENDING_GUARD_LOG
    )
    assert note == "=== failing tests ===\n--- t::b (failed)\nexpected 1, got 2\nat b.py:3\n"
    assert failure_context("pytest said things\n" + note).startswith("=== failing tests ===\n")


def test_tests_json_of_a_large_suite_lists_the_first_of_each_list_and_counts_the_rest() -> None:
    """A report of tens of thousands of tests makes a tests.json of what the views show: the
    tests that did not pass and the changes, a thousand of each at most, the rest counted."""
    from runner_core.guard.ratchet import TestFigures
    from runner_core.guard.report import TestOutcome, report_from_cases
    from runner_core.iteration.guard_stage import LISTED_CHANGES, LISTED_TESTS, outcome_document

    cases = [(f"t::p{n:05}", TestOutcome.PASSED, 1) for n in range(40_000)]
    cases += [(f"t::f{n:05}", TestOutcome.FAILED, 1) for n in range(3_000)]
    now = report_from_cases(cases)
    text = outcome_document(None, now, TestFigures(40_000, 3_000, 0, 43_000, 0, 0, 0))

    document = json.loads(text)
    assert len(document["tests"]) == LISTED_TESTS
    assert {test["outcome"] for test in document["tests"]} == {"failed"}
    assert (document["passed"], document["unlisted_tests"]) == (40_000, 3_000 - LISTED_TESTS)
    assert len(document["changes"]) == LISTED_CHANGES
    assert document["unlisted_changes"] == 43_000 - LISTED_CHANGES
    assert len(text.encode()) < 400_000  # every test listed, it was over 4 MB


@pytest.mark.parametrize(
    "text", ["", "[]", '{"tests": 3}', "[" * 5_000 + "]" * 5_000, '{"tests": []}']
)
def test_a_tests_json_not_of_its_shape_reads_as_none(text: str) -> None:
    # It lives in the repository, where the agent may have written anything.
    from runner_core.iteration.guard_stage import read_outcome_document

    assert read_outcome_document(text) is None


def test_tests_json_reads_back_as_written() -> None:
    from runner_core.guard.ratchet import TestFigures
    from runner_core.guard.report import TestOutcome, report_from_cases
    from runner_core.iteration.guard_stage import outcome_document, read_outcome_document

    now = report_from_cases([("t::a", TestOutcome.PASSED, 1), ("t::b", TestOutcome.FAILED, 1)])
    text = outcome_document(None, now, TestFigures(1, 1, 0, 2, 0, 0, 0))

    assert read_outcome_document(text) == json.loads(text)
