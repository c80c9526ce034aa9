"""A guard's test report as values: each test's id, outcome and duration, in canonical order.

Decides how a report's cases become one outcome per test id (a repeated id keeps its worst
outcome: error, then failed, skipped, passed) and the report's canonical JSON text, which the
iteration log keeps. Never parses XML: the shell's JUnit reader hands over plain cases.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType

import attrs


class TestOutcome(enum.StrEnum):
    """What one test did in one guard run."""

    __test__ = False  # not a pytest test class, whatever its name says

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"


# Which outcome a repeated test id keeps: the worst one, so a failure is never hidden.
_SEVERITY: Mapping[TestOutcome, int] = MappingProxyType(
    {TestOutcome.PASSED: 0, TestOutcome.SKIPPED: 1, TestOutcome.FAILED: 2, TestOutcome.ERROR: 3}
)


@attrs.frozen(slots=True)
class TestResult:
    """One test's outcome in one guard run; `duration_ms` is what the report said, rounded."""

    __test__ = False

    id: str
    outcome: TestOutcome = attrs.field(converter=TestOutcome)
    duration_ms: int = 0


@attrs.frozen(slots=True)
class TestFailure:
    """What the report says of one test that did not pass: its failure's message and the head
    of its text (the assertion, the first lines of the trace), each already capped."""

    __test__ = False

    id: str
    message: str = ""
    text: str = ""


@attrs.frozen(slots=True)
class TestReport:
    """Every test of one guard run, one result per id, sorted by id; `failures` what the report
    said of the tests that did not pass (capped, sorted by id; never kept as a baseline)."""

    __test__ = False

    results: tuple[TestResult, ...] = ()
    failures: tuple[TestFailure, ...] = ()

    def outcomes(self) -> Mapping[str, TestOutcome]:
        """Each test id's outcome."""
        return MappingProxyType({result.id: result.outcome for result in self.results})

    def ids_with(self, outcome: TestOutcome) -> tuple[str, ...]:
        """The ids of the tests that ended with `outcome`, sorted."""
        return tuple(result.id for result in self.results if result.outcome is outcome)


def report_from_cases(cases: Iterable[tuple[str, TestOutcome | str, int]]) -> TestReport:
    """The report of `(id, outcome, duration_ms)` cases: one result per id, worst outcome kept,
    durations of a repeated id added up, sorted by id."""
    merged: dict[str, TestResult] = {}
    for test_id, outcome, duration_ms in cases:
        result = TestResult(test_id, TestOutcome(outcome), max(0, duration_ms))
        known = merged.get(test_id)
        if known is not None:
            worst = max(known.outcome, result.outcome, key=_SEVERITY.__getitem__)
            result = TestResult(test_id, worst, known.duration_ms + result.duration_ms)
        merged[test_id] = result
    return TestReport(tuple(merged[test_id] for test_id in sorted(merged)))


# Where a guard ran: a test id (or a failure's text) that names the scratch checkout's path names
# it `<checkout>`, so one test has one id whichever slot ran it.
CHECKOUT = "<checkout>"


def without_checkout(text: str, checkouts: Iterable[str]) -> str:
    """`text` with every checkout path of `checkouts` (absolute) written as `<checkout>` where
    it stands as a whole path (`/slots/1` is not replaced inside `/slots/10`, nor `/checkout`
    inside `src/checkout`)."""
    paths = sorted({p.rstrip("/") for p in checkouts if p.strip("/")}, key=len, reverse=True)
    if not paths or not any(path in text for path in paths):
        return text
    alternatives = "|".join(re.escape(path) for path in paths)
    return re.sub(f"(?<![\\w.-])(?:{alternatives})(?![^/\\s:'\"),;\\]])", CHECKOUT, text)


def report_to_json(report: TestReport) -> str:
    """The report's canonical JSON text (sorted ids, fixed keys, a trailing newline)."""
    tests = [
        {"id": result.id, "outcome": result.outcome.value, "duration_ms": result.duration_ms}
        for result in report.results
    ]
    return json.dumps({"tests": tests}, ensure_ascii=False, indent=2) + "\n"


def report_from_json(text: str) -> TestReport:
    """A report read back from `report_to_json`'s text; `ValueError` naming what is wrong."""
    document = json.loads(text)
    tests = document.get("tests") if isinstance(document, dict) else None
    if not isinstance(tests, list):
        raise ValueError("test report: 'tests' must be a list")
    cases: list[tuple[str, TestOutcome | str, int]] = []
    for index, test in enumerate(tests):
        if not isinstance(test, dict) or not isinstance(test.get("id"), str):
            raise ValueError(f"test report: tests[{index}].id must be a string")
        duration = test.get("duration_ms", 0)
        if not isinstance(duration, int) or isinstance(duration, bool):
            raise ValueError(f"test report: tests[{index}].duration_ms must be an integer")
        if test.get("outcome") not in TestOutcome.__members__.values():
            raise ValueError(f"test report: tests[{index}].outcome is not a test outcome")
        cases.append((test["id"], test["outcome"], duration))
    return report_from_cases(cases)
