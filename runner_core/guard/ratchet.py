"""The ratchet: whether a `done` passes against the baseline, the outcome of the guard at the
iteration's base commit.

A done passes when no test that passed at the baseline fails, errors, is skipped or is missing
now (a regression; one that passes when run again is flaky, not a regression), when the node's
target tests (`test:` patterns) all pass, and, for a node that names none, when some test that
was failing or absent at the baseline passes now or the whole suite passes (with
`require_targets`, a node that names none fails). Every reason a done
fails is one sorted line. Never runs the guard or reads its report.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from runner_core.guard.patterns import matches_test_id, target_patterns
from runner_core.guard.report import TestOutcome, TestReport

PASSED = TestOutcome.PASSED
NO_TARGETS = (
    "the node names no target test ([guard] require_targets = true): add 'test: <pattern>'"
    " to its acceptance"
)


@attrs.frozen(slots=True)
class TestFigures:
    """What one guard run amounts to against its baseline, as `history` and `meta.json` show it."""

    __test__ = False

    passed: int
    failed: int
    skipped: int
    total: int
    newly_passing: int
    regressed: int
    removed: int
    targets_passed: int = 0  # of the node's target tests (`test:` patterns), how many pass
    targets_total: int = 0
    flaky: tuple[str, ...] = ()  # tests that regressed and passed when run again
    reasons: tuple[str, ...] = ()  # why the ratchet failed the done, sorted; () when it passed

    def line(self) -> str:
        """The figures as the loop line and `show` say them: `tests=41/45 +3 -0`."""
        return f"tests={self.cell()}"

    def cell(self) -> str:
        """The figures as history's TESTS column shows them: `41/45 +3 -0` (passed/total,
        newly passing, regressed)."""
        return f"{self.passed}/{self.total} +{self.newly_passing} -{self.regressed}"

    def reason_line(self) -> str | None:
        """Why the ratchet failed the done, in one line; None when it did not."""
        if not self.reasons:
            return None
        more = len(self.reasons) - 1
        return self.reasons[0] + (f" (and {more} more)" if more else "")


@attrs.frozen(slots=True)
class Verdict:
    """The ratchet's judgement of one done: `passed`, and every reason it did not, sorted."""

    passed: bool
    reasons: tuple[str, ...]
    regressed: tuple[str, ...]
    flaky: tuple[str, ...]
    targets: tuple[tuple[str, TestOutcome | None], ...]
    figures: TestFigures


def regressions(baseline: TestReport, now: TestReport) -> tuple[str, ...]:
    """The tests that passed at the baseline and do not pass now (missing ones included)."""
    outcomes = now.outcomes()
    return tuple(
        test_id for test_id in baseline.ids_with(PASSED) if outcomes.get(test_id) is not PASSED
    )


def figures_against(
    baseline: TestReport, now: TestReport, flaky: Sequence[str] = ()
) -> TestFigures:
    """The figures of `now` against `baseline`; `flaky` tests do not count as regressed."""
    before = baseline.outcomes()
    after = now.outcomes()
    regressed = set(regressions(baseline, now)) - set(flaky)
    newly = [test_id for test_id, outcome in after.items() if outcome is PASSED]
    return TestFigures(
        passed=len(now.ids_with(PASSED)),
        failed=len(now.ids_with(TestOutcome.FAILED)) + len(now.ids_with(TestOutcome.ERROR)),
        skipped=len(now.ids_with(TestOutcome.SKIPPED)),
        total=len(now.results),
        newly_passing=sum(1 for test_id in newly if before.get(test_id) is not PASSED),
        regressed=len(regressed),
        removed=sum(1 for test_id in before if test_id not in after),
        flaky=tuple(sorted(set(flaky))),
    )


def with_targets(
    figures: TestFigures, targets: Sequence[tuple[str, TestOutcome | None]]
) -> TestFigures:
    """The figures with how many of the node's target tests pass (a pattern that matches
    nothing counts as one that does not)."""
    passed = sum(1 for _, outcome in targets if outcome is PASSED)
    return attrs.evolve(figures, targets_passed=passed, targets_total=len(targets))


def target_outcomes(
    acceptance: Sequence[str], now: TestReport
) -> tuple[tuple[str, TestOutcome | None], ...]:
    """Each target test of the node with its outcome now (a pattern matching none: None)."""
    return tuple(_target_reasons(target_patterns(acceptance), now)[1])


def flaky_tests(regressed: Sequence[str], reruns: Sequence[TestReport]) -> tuple[str, ...]:
    """The regressed tests that passed in one of the reruns: flaky, not regressions."""
    passed_again = {test_id for rerun in reruns for test_id in rerun.ids_with(PASSED)}
    return tuple(test_id for test_id in regressed if test_id in passed_again)


def _target_reasons(
    patterns: Sequence[str], now: TestReport
) -> tuple[list[str], list[tuple[str, TestOutcome | None]]]:
    reasons: list[str] = []
    targets: dict[str, TestOutcome | None] = {}
    for pattern in patterns:
        matched = [result for result in now.results if matches_test_id(pattern, result.id)]
        if not matched:
            reasons.append(unmatched_reason(pattern, now))
            targets[f"test: {pattern}"] = None
        for result in matched:
            targets[result.id] = result.outcome
            if result.outcome is not PASSED:
                reasons.append(f"target test '{result.id}' {result.outcome.value}")
    return reasons, sorted(targets.items())


# How many of the report's ids a pattern that matches none is shown beside.
NEAREST_IDS = 10


def nearest_ids(pattern: str, report: TestReport, count: int = NEAREST_IDS) -> tuple[str, ...]:
    """The `count` ids of `report` most like `pattern` (its `*` and `?` left out, case
    ignored), the most alike first, ties by id."""
    import difflib  # with heapq: only a ratchet's note on an unmatched pattern asks
    import heapq

    wanted = "".join(char for char in pattern if char not in "*?").lower()
    scored = []
    for result in report.results:
        matcher = difflib.SequenceMatcher(None, wanted, result.id.lower(), autojunk=False)
        scored.append((-matcher.ratio(), result.id))
    return tuple(test_id for _, test_id in heapq.nsmallest(count, scored))


def unmatched_reason(pattern: str, report: TestReport) -> str:
    """Why a target pattern fails the done: it matches no test, beside the nearest ids."""
    reason = f"target test pattern '{pattern}' matches no test"
    near = nearest_ids(pattern, report)
    return reason + (f" (nearest ids: {', '.join(near)})" if near else "")


def _progress_reason(baseline: TestReport, now: TestReport) -> list[str]:
    if now.results and all(result.outcome is PASSED for result in now.results):
        return []
    before = baseline.outcomes()
    if any(before.get(test_id) is not PASSED for test_id in now.ids_with(PASSED)):
        return []
    return [
        "no test that failed or was absent at the baseline passes now (name the node's"
        " tests with 'test: <pattern>' in its acceptance)"
    ]


def _with_passed(report: TestReport, test_ids: Sequence[str]) -> TestReport:
    if not test_ids:
        return report
    passed = set(test_ids)
    return TestReport(
        tuple(
            attrs.evolve(result, outcome=PASSED) if result.id in passed else result
            for result in report.results
        )
    )


def judge(
    baseline: TestReport,
    now: TestReport,
    acceptance: Sequence[str],
    reruns: Sequence[TestReport] = (),
    require_targets: bool = False,
) -> Verdict:
    """The ratchet's verdict on a done whose guard reported `now` (and `reruns` of it);
    `require_targets` (`[guard] require_targets`) fails a node that names no target test."""
    regressed_all = regressions(baseline, now)
    flaky = flaky_tests(regressed_all, reruns)
    regressed = tuple(test_id for test_id in regressed_all if test_id not in flaky)
    outcomes = now.outcomes()
    reasons = [
        f"regressed test '{test_id}' ({outcomes.get(test_id, 'missing')})" for test_id in regressed
    ]
    if not now.results:
        reasons.append("the guard's report holds no test")
    # A flaky test passed when run again: it counts as passing for the node's own tests too.
    settled = _with_passed(now, flaky)
    patterns = target_patterns(acceptance)
    target_reasons, targets = _target_reasons(patterns, settled)
    reasons.extend(target_reasons)
    if not patterns and require_targets:
        reasons.append(NO_TARGETS)
    elif not patterns and now.results:
        reasons.extend(_progress_reason(baseline, settled))
    figures = with_targets(figures_against(baseline, now, flaky), targets)
    return Verdict(
        passed=not reasons,
        reasons=tuple(sorted(reasons)),
        regressed=regressed,
        flaky=flaky,
        targets=tuple(targets),
        figures=attrs.evolve(figures, reasons=tuple(sorted(reasons))),
    )
