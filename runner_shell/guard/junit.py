"""A guard's JUnit XML report, read as untrusted input: the bytes the guard wrote become one
outcome per test case.

pytest (`--junitxml`), go-junit-report, cargo2junit and jest-junit all write `<testcase>`
elements (under `<testsuite>`s, possibly nested) whose child `<failure>`, `<error>` or
`<skipped>` says how it ended; no such child means it passed. A test's id is
`classname::name` (just `name` without a classname). The reader is expat driven by hand: no
DTD, no entity declaration (so no XML bomb and no external entity), a cap on the bytes, on the
number of cases and on an id's length; anything else is a `GuardReportError` saying what.
"""

from __future__ import annotations

import math
from xml.parsers import expat

from runner_core.guard.report import TestOutcome, TestReport, report_from_cases

# Far above any real suite's report (pytest writes about 200 bytes a passing test).
MAX_REPORT_BYTES = 64 * 1024 * 1024
MAX_CASES = 200_000
MAX_ID_CHARS = 4_000
_ENDINGS = {
    "failure": TestOutcome.FAILED,
    "error": TestOutcome.ERROR,
    "skipped": TestOutcome.SKIPPED,
}
_SEVERITY = (TestOutcome.PASSED, TestOutcome.SKIPPED, TestOutcome.FAILED, TestOutcome.ERROR)


class GuardReportError(ValueError):
    """The guard's report could not be read; the message says why, in one line."""


class _Reader:
    def __init__(self) -> None:
        self.cases: list[tuple[str, TestOutcome, int]] = []
        self.case: tuple[str, int] | None = None
        self.outcome = TestOutcome.PASSED
        self.depth = 0
        self.case_depth = -1

    def start(self, name: str, attributes: dict[str, str]) -> None:
        self.depth += 1
        if name == "testcase" and self.case is None:
            self.case = (_case_id(attributes), _duration_ms(attributes.get("time", "")))
            self.outcome = TestOutcome.PASSED
            self.case_depth = self.depth
        elif self.case is not None and self.depth == self.case_depth + 1 and name in _ENDINGS:
            ending = _ENDINGS[name]
            if _SEVERITY.index(ending) > _SEVERITY.index(self.outcome):
                self.outcome = ending

    def end(self, name: str) -> None:
        if self.case is not None and self.depth == self.case_depth:
            if len(self.cases) >= MAX_CASES:
                raise GuardReportError(f"holds more than {MAX_CASES} test cases")
            self.cases.append((self.case[0], self.outcome, self.case[1]))
            self.case = None
        self.depth -= 1


def _case_id(attributes: dict[str, str]) -> str:
    name = attributes.get("name", "").strip()
    classname = attributes.get("classname", "").strip()
    if not name:
        raise GuardReportError("a <testcase> has no name")
    test_id = f"{classname}::{name}" if classname else name
    if len(test_id) > MAX_ID_CHARS:
        raise GuardReportError(f"a test id is longer than {MAX_ID_CHARS} characters")
    return test_id


def _duration_ms(text: str) -> int:
    try:
        seconds = float(text.replace(",", ""))
    except ValueError:
        return 0
    if not math.isfinite(seconds) or seconds < 0:
        return 0
    return min(round(seconds * 1000), 2**31 - 1)


def _refuse_declarations(*_: object) -> int:
    raise GuardReportError("holds a DTD or an entity declaration, which a test report never needs")


def parse_junit(data: bytes) -> TestReport:
    """The report in `data`, one result per test id; `GuardReportError` when it is not one."""
    if len(data) > MAX_REPORT_BYTES:
        raise GuardReportError(f"is larger than {MAX_REPORT_BYTES} bytes")
    reader = _Reader()
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse_declarations
    parser.EntityDeclHandler = _refuse_declarations
    parser.ExternalEntityRefHandler = _refuse_declarations
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    try:
        parser.Parse(data, True)
    except expat.ExpatError as error:
        raise GuardReportError(
            f"is not well-formed XML ({expat.ErrorString(error.code)}, line"
            f" {error.lineno}, column {error.offset})"
        ) from None
    if not reader.cases and b"<testsuite" not in data:
        raise GuardReportError("holds no <testsuite> or <testcase>: not a JUnit XML report")
    return report_from_cases(reader.cases)
