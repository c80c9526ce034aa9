"""The guard's part of an iteration: what every guard run is told, when the ratchet needs a run
at the base commit or a rerun, what the runs have said so far and what their reports come to.

Decides each run's environment and file names, whether a baseline must be measured before the
agent, whether a regressed test is run again, the guard's outcome in either mode, the figures
and note the guard log ends with, and the canonical `tests.json`. Never runs a guard or reads a
report: the shell parses the JUnit XML into a `TestReport` (README, "Designing guards").
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence

import attrs

from runner_core.guard.patterns import matches_test_id, target_patterns
from runner_core.guard.ratchet import (
    TestFigures,
    figures_against,
    flaky_tests,
    judge,
    regressions,
    target_outcomes,
    with_targets,
)
from runner_core.guard.report import TestOutcome, TestReport, report_from_json
from runner_core.json_text import json_value
from runner_core.run.config import RATCHET, Config
from runner_core.tree.model import AgentRole, GuardOutcome

PASSED = TestOutcome.PASSED
# Where the guard may write its JUnit XML report, in the iteration directory; the runner
# reads it, keeps its outcomes in tests.json and removes it.
JUDGE_REPORT = ".guard-report.xml"
BASELINE_REPORT = ".guard-report.baseline.xml"
BASELINE_LOG = "guard.baseline.log"
MISSING_REPORT = (
    "the guard wrote no report (write JUnit XML to $RUNNER_GUARD_REPORT, e.g. pytest"
    ' --junitxml="$RUNNER_GUARD_REPORT")'
)
# How many ids a line of the prompt or the guard log names before it counts the rest.
NAMED_TESTS = 20


class GuardRun(enum.StrEnum):
    """Why a guard runs: to judge the agent's work, to measure the base commit before the
    agent (the scratch checkout is reset after it), or to run a regressed test again."""

    JUDGE = "judge"
    BASELINE = "baseline"
    RERUN = "rerun"


def rerun_report(number: int) -> str:
    return f".guard-report.rerun-{number}.xml"


def rerun_log(number: int) -> str:
    return f"guard.rerun-{number}.log"


def pending(name: str) -> str:
    """The name a guard log is written under until the write-set moves it into place."""
    return f".{name}.pending"


def guard_env(
    run_id: str,
    iteration: int,
    node_id: str,
    node_path: str,
    role: AgentRole,
    acceptance: Sequence[str],
) -> tuple[tuple[str, str], ...]:
    """What every guard is told about the node it judges (the shell adds RUNNER_GUARD_REPORT)."""
    return (
        ("RUNNER_RUN_ID", run_id),
        ("RUNNER_ITER", str(iteration)),
        ("RUNNER_NODE_ID", node_id),
        ("RUNNER_NODE_PATH", node_path),
        ("RUNNER_ROLE", role.value),
        ("RUNNER_ACCEPTANCE", json.dumps(list(acceptance), ensure_ascii=False)),
    )


def needs_baseline(config: Config, role: AgentRole, baseline: TestReport | None) -> bool:
    """Whether the guard must run at the base commit before the agent: a ratchet judges an
    executor's done against it, and none is known for this commit."""
    return config.guard_mode == RATCHET and role is AgentRole.EXECUTOR and baseline is None


def wants_rerun(
    config: Config,
    baseline: TestReport | None,
    now: TestReport | None,
    reruns: Sequence[TestReport],
    count: int,
) -> bool:
    """Whether a ratchet runs the guard once more: some regressed test has not passed in a
    rerun yet, and reruns are left (`count` runs so far, reported or not)."""
    if config.guard_mode != RATCHET or now is None or count >= config.guard_rerun_failures:
        return False
    regressed = regressions(baseline or TestReport(), now)
    return bool(set(regressed) - set(flaky_tests(regressed, reruns)))


@attrs.frozen(slots=True)
class GuardJudgement:
    """What the guard's runs came to: the outcome, the figures (None without a report) and the
    lines the guard log ends with."""

    outcome: GuardOutcome
    figures: TestFigures | None
    note: str | None


def judge_guard(
    config: Config,
    acceptance: Sequence[str],
    baseline: TestReport | None,
    now: TestReport | None,
    problem: str | None,
    reruns: Sequence[TestReport],
    exit_outcome: GuardOutcome,
) -> GuardJudgement:
    """The guard's outcome: its exit code's in exit mode; the ratchet's verdict on the report
    otherwise, where a missing or broken report fails. `acceptance` is the node's as it was
    before the agent ran: its own edit never changes what judges it."""
    base = baseline or TestReport()
    if config.guard_mode != RATCHET:
        # Exit mode asks for no report: one that was written but cannot be read is noted.
        figures = None
        if now is not None:
            figures = with_targets(figures_against(base, now), target_outcomes(acceptance, now))
        failing = () if now is None else _not_passing(now)
        parts = [] if problem is None else [f"guard report: {problem}\n"]
        parts += [failures_note(now, failing)] if now is not None and failing else []
        return GuardJudgement(exit_outcome, figures, "".join(parts) or None)
    if now is None:
        reason = f"guard report: {problem or MISSING_REPORT}"
        return GuardJudgement(GuardOutcome.FAIL, None, _note(GuardOutcome.FAIL, (reason,), ()))
    verdict = judge(base, now, acceptance, reruns, config.guard_require_targets)
    outcome = GuardOutcome.PASS if verdict.passed else GuardOutcome.FAIL
    note = _note(outcome, verdict.reasons, verdict.flaky)
    if not verdict.passed:
        targets = [test_id for test_id, result in verdict.targets if result is not None]
        noted = [t for t in (*verdict.regressed, *targets) if now.outcomes().get(t) != PASSED]
        note += failures_note(now, noted)
    return GuardJudgement(outcome, verdict.figures, note)


def _note(outcome: GuardOutcome, reasons: Sequence[str], flaky: Sequence[str]) -> str:
    lines = ["=== ratchet ===", f"verdict: {outcome.value}"]
    lines += [f"flaky (passed when run again): {test_id}" for test_id in flaky]
    lines += list(reasons[:NAMED_TESTS])
    if len(reasons) > NAMED_TESTS:
        lines.append(f"... and {len(reasons) - NAMED_TESTS} more")
    return "\n".join(lines) + "\n"


def _not_passing(report: TestReport) -> tuple[str, ...]:
    return tuple(
        r.id for r in report.results if r.outcome in (TestOutcome.FAILED, TestOutcome.ERROR)
    )


FAILING_TESTS = "=== failing tests ==="
# How many failing tests the note shows with what the report says of them, and in how much.
NOTED_FAILURES = 10
NOTED_FAILURE_CHARS = 8_000


def failures_note(report: TestReport, test_ids: Sequence[str]) -> str:
    """What the report says of each of `test_ids` (its failure's message and the head of its
    text), each test once, capped: the section the guard log, failure.md and the next prompt
    end with. Empty when none of them failed."""
    said = {failure.id: failure for failure in report.failures}
    outcomes = report.outcomes()
    lines = [FAILING_TESTS]
    used = 0
    shown = 0
    for test_id in dict.fromkeys(test_ids):
        if shown == NOTED_FAILURES or used >= NOTED_FAILURE_CHARS:
            break
        outcome = outcomes.get(test_id)
        failure = said.get(test_id)
        if outcome is None or failure is None:
            continue
        body = "\n".join(part for part in (failure.message, failure.text) if part)
        body = body[: NOTED_FAILURE_CHARS - used]
        lines += [f"--- {test_id} ({outcome.value})", body or "(the report says nothing more)"]
        used += len(body)
        shown += 1
    left = len(dict.fromkeys(test_ids)) - shown
    if shown and left > 0:
        lines.append(f"... and {left} more failing tests (see tests.json)")
    return "\n".join(lines) + "\n" if shown else ""


def failure_context(guard_log: str) -> str:
    """failure.md of a guard log: the runner's note at its end (the verdict, the failing
    tests' messages) first, then the end of the guard's own output unless the note already
    says what the report said of the failing tests (each said once); the log as it is when it
    has no note. The note is always the log's last part: the runner appends it."""
    start = guard_log.rfind("=== ratchet ===")
    if start < 0:
        start = guard_log.rfind(FAILING_TESTS)
    if start < 0:
        return guard_log
    output = guard_log[:start].rstrip("\n")
    note = guard_log[start:]
    if FAILING_TESTS in note:
        return note + "(the guard's whole output is in the iteration's guard.log)\n"
    tail = output[-GUARD_OUTPUT_TAIL_CHARS:]
    if len(output) > len(tail):
        tail = "[...]" + tail[tail.find("\n") :] if "\n" in tail else "[...]" + tail
    return note + (f"=== guard output (its end) ===\n{tail}\n" if tail.strip() else "")


GUARD_OUTPUT_TAIL_CHARS = 4_000


# tests.json lists what the views show, never every passing test of a large suite: the tests
# that did not pass and the changes against the baseline, the first of each; the rest counted.
LISTED_TESTS = 1_000
LISTED_CHANGES = 1_000
_COUNTS = ("passed", "unlisted_tests", "unlisted_changes")


def outcome_document(baseline: TestReport | None, now: TestReport, figures: TestFigures) -> str:
    """tests.json: each test that did not pass now, how many did, what changed against the
    baseline (a test absent on one side is null there), the flaky tests and the ratchet's
    reasons, each list capped (how many were left out counted); canonical bytes."""
    before = (baseline or TestReport()).outcomes()
    after = now.outcomes()
    changed = [
        test_id
        for test_id in sorted(set(before) | set(after))
        if before.get(test_id) is not after.get(test_id)
    ]
    changes = [
        {"id": test_id, "before": _value(before.get(test_id)), "after": _value(after.get(test_id))}
        for test_id in changed[:LISTED_CHANGES]
    ]
    not_passing = [result for result in now.results if result.outcome is not PASSED]
    tests = [
        {"id": result.id, "outcome": result.outcome.value, "duration_ms": result.duration_ms}
        for result in not_passing[:LISTED_TESTS]
    ]
    document = {
        "tests": tests,
        "changes": changes,
        "flaky": list(figures.flaky),
        "reasons": list(figures.reasons),
        "passed": len(now.results) - len(not_passing),
        "unlisted_tests": len(not_passing) - len(tests),
        "unlisted_changes": len(changed) - len(changes),
    }
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def read_outcome_document(text: str) -> dict[str, object] | None:
    """tests.json read back, None when it is not of `outcome_document`'s shape (it lives in
    the repository: anyone may have edited it)."""
    try:
        document = json_value(text)
        report_from_json(text)
    except ValueError:
        return None
    if not isinstance(document, dict) or set(document) - set(_COUNTS) != {
        "tests",
        "changes",
        "flaky",
        "reasons",
    }:
        return None
    if not all(
        type(document.get(name, 0)) is int and document.get(name, 0) >= 0 for name in _COUNTS
    ):
        return None
    values = {None, *TestOutcome.__members__.values()}
    changes = document["changes"]
    shaped = isinstance(changes, list) and all(
        isinstance(change, dict)
        and set(change) == {"id", "before", "after"}
        and isinstance(change["id"], str)
        and change["before"] in values
        and change["after"] in values
        for change in changes
    )
    texts = all(
        isinstance(document[key], list) and all(isinstance(item, str) for item in document[key])
        for key in ("flaky", "reasons")
    )
    return document if shaped and texts else None


def _value(outcome: TestOutcome | None) -> str | None:
    return None if outcome is None else outcome.value


def judging_text(acceptance: Sequence[str], baseline: TestReport | None) -> str | None:
    """What an executor's prompt says of the tests that judge it: its target tests and the
    tests failing at the base commit; None when nothing is known."""
    patterns = target_patterns(acceptance)
    if baseline is None and not patterns:
        return None
    lines = ["The guard judges this node by its tests (ratchet mode): no test that passes now"]
    lines.append("may fail after your change, and the node's target tests must pass.")
    if patterns:
        unmatched = set(unmatched_patterns(acceptance, baseline))
        lines.append("Target tests (`test:` patterns of the acceptance):")
        lines += [
            f"- {pattern}"
            + (
                f" (no test matches it now: add a test whose id matches '{pattern}')"
                if pattern in unmatched
                else ""
            )
            for pattern in patterns
        ]
    else:
        lines.append(
            "No target tests are named: some test failing now must pass after your change."
        )
    if baseline is not None:
        failing = [r.id for r in baseline.results if r.outcome is not TestOutcome.PASSED]
        targeted = [t for t in failing if any(matches_test_id(p, t) for p in patterns)]
        lines.append(
            f"At the base commit {len(failing)} of {len(baseline.results)} tests do not pass:"
        )
        shown = (targeted + [t for t in failing if t not in targeted])[:NAMED_TESTS]
        lines += [f"- {test_id}" for test_id in shown]
        if len(failing) > len(shown):
            lines.append(f"- ... and {len(failing) - len(shown)} more")
    return "\n".join(lines) + "\n"


# What the decomposer is shown of the suite: at most this many groups and ids, in this many
# characters, so a large suite never crowds the prompt.
SHOWN_GROUPS = 40
SHOWN_IDS_PER_GROUP = 12
SHOWN_IDS_CHARS = 6_000


def test_ids_text(baseline: TestReport | None) -> str | None:
    """What a decomposer's prompt says of the suite at the base commit: its ids grouped by
    suite or file (the part before the last `::`), capped, with the id format `test:` patterns
    match; None when no baseline is known."""
    if baseline is None or not baseline.results:
        return None
    groups: dict[str, list[str]] = {}
    for result in baseline.results:
        suite, _, name = result.id.rpartition("::")
        groups.setdefault(suite, []).append(name)
    passing = len(baseline.ids_with(PASSED))
    lines = [
        f"The guard's report at the base commit names {len(baseline.results)} tests"
        f" ({passing} passing). A child's `test: <pattern>` acceptance entries are globs on"
        " these ids (`suite::name`, `*` matches anything, case is ignored); a pattern that"
        " matches none of them now is fine for a test the child writes first, and is named.",
        "",
    ]
    used = sum(len(line) for line in lines)
    for shown, suite in enumerate(sorted(groups)):
        names = groups[suite]
        more = len(names) - SHOWN_IDS_PER_GROUP
        line = f"- {suite or '(no suite)'}:: " + ", ".join(names[:SHOWN_IDS_PER_GROUP])
        line += f", ... and {more} more" if more > 0 else ""
        if shown == SHOWN_GROUPS or used + len(line) > SHOWN_IDS_CHARS:
            lines.append(f"- ... and {len(groups) - shown} more suites")
            break
        lines.append(line)
        used += len(line)
    return "\n".join(lines) + "\n"


def unmatched_patterns(acceptance: Sequence[str], baseline: TestReport | None) -> tuple[str, ...]:
    """The node's `test:` patterns that match no test of the baseline (none known: none)."""
    if baseline is None:
        return ()
    return tuple(
        pattern
        for pattern in target_patterns(acceptance)
        if not any(matches_test_id(pattern, result.id) for result in baseline.results)
    )


def decomposition_note(
    children: Sequence[tuple[str, Sequence[str]]], baseline: TestReport | None
) -> str | None:
    """What a ratchet run's decomposition summary adds of its children `(id, acceptance)`: the
    `test:` patterns no test of the baseline matches yet (fine for test-first work), and the
    children that name none, judged by regressions alone; None when there is nothing to say."""
    unmatched = [
        f"{child_id}: '{pattern}'"
        for child_id, acceptance in children
        for pattern in unmatched_patterns(acceptance, baseline)
    ]
    alone = [child_id for child_id, acceptance in children if not target_patterns(acceptance)]
    parts = []
    if unmatched:
        parts.append("test patterns no test matches yet: " + ", ".join(unmatched))
    if alone:
        parts.append("judged by regressions alone (no test: entry): " + ", ".join(alone))
    return "; ".join(parts) or None


@attrs.frozen(slots=True)
class GuardRuns:
    """The guard's reports of one iteration. `logs` pairs each extra guard log's name in the
    iteration log with the pending name it is written under."""

    baseline: TestReport | None = None
    report: TestReport | None = None  # the report of the run that judged the agent's work
    problem: str | None = None  # why the judged run's report could not be read
    reruns: tuple[TestReport, ...] = ()
    rerun_count: int = 0
    exit_outcome: GuardOutcome = GuardOutcome.SKIPPED
    figures: TestFigures | None = None
    logs: tuple[tuple[str, str], ...] = ()

    def logged(self, name: str) -> GuardRuns:
        return attrs.evolve(self, logs=(*self.logs, (name, pending(name))))

    def measured(self, baseline: TestReport) -> GuardRuns:
        return attrs.evolve(self, baseline=baseline)

    def judged(
        self, report: TestReport | None, problem: str | None, exit_outcome: GuardOutcome
    ) -> GuardRuns:
        return attrs.evolve(self, report=report, problem=problem, exit_outcome=exit_outcome)

    def rerun(self, report: TestReport | None) -> GuardRuns:
        reruns = self.reruns if report is None else (*self.reruns, report)
        return attrs.evolve(self, reruns=reruns, rerun_count=self.rerun_count + 1)

    def concluded(self, figures: TestFigures | None) -> GuardRuns:
        return attrs.evolve(self, figures=figures)

    def tests_json(self) -> str | None:
        """tests.json's text, when the judged run wrote a readable report."""
        if self.report is None:
            return None
        figures = self.figures or figures_against(self.baseline or TestReport(), self.report)
        return outcome_document(self.baseline, self.report, figures)
