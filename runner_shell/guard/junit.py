"""A guard's JUnit XML report, read as untrusted input: the bytes the guard wrote become one
outcome per test case, and what the report says of each test that did not pass.

pytest (`--junitxml`), Node's built-in runner (`--test-reporter=junit`), jest-junit,
gotestsum / go-junit-report and cargo2junit all write `<testcase>` elements (under
`<testsuite>`s, possibly nested) whose child `<failure>`, `<error>` or `<skipped>` says how it
ended; no such child means it passed. A test's id is `classname::name` (just `name` without a
classname), the scratch checkout's path in it written `<checkout>`. A failure's `message`
attribute and the head of its text are kept, capped per test and in all.

The reader is expat driven by hand and fed the file in chunks, so memory stays bounded whatever
the report's size: no DTD, no entity declaration (so no XML bomb and no external entity), a cap
on the bytes, on the number of cases and on an id's length, and only the capped head of any
failure text is ever held; anything else is a `GuardReportError` saying what.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO
from xml.parsers import expat

from runner_core.guard.report import (
    TestFailure,
    TestOutcome,
    TestReport,
    report_from_cases,
    without_checkout,
)
from runner_shell.store.files import FileTooLarge, open_regular

# Far above any real suite's report (pytest writes about 200 bytes a passing test).
MAX_REPORT_BYTES = 64 * 1024 * 1024
MAX_CASES = 200_000
MAX_ID_CHARS = 4_000
# What is kept of a failure: its message, the head of its text, and of all failures together.
FAILURE_MESSAGE_CHARS = 400
FAILURE_TEXT_CHARS = 1_500
FAILURE_TEXT_LINES = 25
FAILURES_KEPT = 50
FAILURES_TOTAL_CHARS = 30_000
_CHUNK = 1024 * 1024
_ENDINGS = {
    "failure": TestOutcome.FAILED,
    "error": TestOutcome.ERROR,
    "skipped": TestOutcome.SKIPPED,
}
_SEVERITY = (TestOutcome.PASSED, TestOutcome.SKIPPED, TestOutcome.FAILED, TestOutcome.ERROR)


class GuardReportError(ValueError):
    """The guard's report could not be read; the message says why, in one line."""


class _Reader:
    def __init__(self, checkouts: Sequence[str]) -> None:
        self.checkouts = checkouts
        self.cases: list[tuple[str, TestOutcome, int]] = []
        self.case: tuple[str, int] | None = None
        self.outcome = TestOutcome.PASSED
        self.depth = 0
        self.case_depth = -1
        self.suites = 0
        # The failure being read: its message and the capped pieces of its text.
        self.message: str | None = None
        self.text: list[str] = []
        self.text_chars = 0
        self.in_failure = False
        self.failures: list[TestFailure] = []
        self.failure_chars = 0

    def start(self, name: str, attributes: dict[str, str]) -> None:
        self.depth += 1
        if name in ("testsuite", "testsuites"):
            self.suites += 1
        if name == "testcase" and self.case is None:
            test_id = _case_id(attributes, self.checkouts)
            self.case = (test_id, _duration_ms(attributes.get("time", "")))
            self.outcome = TestOutcome.PASSED
            self.case_depth = self.depth
            self.message, self.text, self.text_chars = None, [], 0
        elif self.case is not None and self.depth == self.case_depth + 1 and name in _ENDINGS:
            ending = _ENDINGS[name]
            if _SEVERITY.index(ending) > _SEVERITY.index(self.outcome):
                self.outcome = ending
            if ending is not TestOutcome.SKIPPED and self.message is None:
                self.message = attributes.get("message", "")[:FAILURE_MESSAGE_CHARS]
                self.in_failure = True

    def characters(self, data: str) -> None:
        if self.in_failure and self.text_chars < FAILURE_TEXT_CHARS:
            piece = data[: FAILURE_TEXT_CHARS - self.text_chars]
            self.text.append(piece)
            self.text_chars += len(piece)

    def end(self, name: str) -> None:
        if self.case is not None and self.depth == self.case_depth + 1 and name in _ENDINGS:
            self.in_failure = False
        if self.case is not None and self.depth == self.case_depth:
            if len(self.cases) >= MAX_CASES:
                raise GuardReportError(f"holds more than {MAX_CASES} test cases")
            self.cases.append((self.case[0], self.outcome, self.case[1]))
            if self.message is not None:
                self._keep_failure(self.case[0])
            self.case = None
        self.depth -= 1

    def _keep_failure(self, test_id: str) -> None:
        if len(self.failures) >= FAILURES_KEPT or self.failure_chars >= FAILURES_TOTAL_CHARS:
            return
        first = (self.message or "").strip().split("\n", 1)[0].strip()
        message = without_checkout(_one_line(self.message or ""), self.checkouts)
        text = without_checkout(_head("".join(self.text)), self.checkouts)
        if first and without_checkout(first, self.checkouts) in text:
            message = ""  # pytest, jest and node repeat the message in the text: said once
        room = FAILURES_TOTAL_CHARS - self.failure_chars
        failure = TestFailure(test_id, message[:room], text[: max(room - len(message), 0)])
        self.failure_chars += len(failure.message) + len(failure.text)
        self.failures.append(failure)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _head(text: str) -> str:
    lines = [line.rstrip() for line in text.strip("\n").splitlines()]
    kept = lines[:FAILURE_TEXT_LINES]
    if len(lines) > len(kept):
        kept.append(f"[... {len(lines) - len(kept)} more lines]")
    return "\n".join(kept).strip()


def _case_id(attributes: dict[str, str], checkouts: Sequence[str]) -> str:
    name = attributes.get("name", "").strip()
    classname = attributes.get("classname", "").strip()
    if not name:
        raise GuardReportError("a <testcase> has no name")
    test_id = f"{classname}::{name}" if classname else name
    if len(test_id) > MAX_ID_CHARS:
        raise GuardReportError(f"a test id is longer than {MAX_ID_CHARS} characters")
    return without_checkout(test_id, checkouts)


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


def parse_junit(data: bytes, checkouts: Sequence[str] = ()) -> TestReport:
    """The report in `data`, one result per test id; `GuardReportError` when it is not one."""
    if len(data) > MAX_REPORT_BYTES:
        raise GuardReportError(f"is larger than {MAX_REPORT_BYTES} bytes")
    return _parse((data[i : i + _CHUNK] for i in range(0, len(data), _CHUNK)), checkouts)


def read_junit(path: Path, checkouts: Sequence[str] = ()) -> TestReport:
    """The report in the regular file at `path` (never through a symlink), read in chunks:
    FileTooLarge past MAX_REPORT_BYTES, NotRegularFile, OSError, or GuardReportError."""
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_REPORT_BYTES:
            raise FileTooLarge(path, size, MAX_REPORT_BYTES)
        return _parse(_chunks(handle, path), checkouts)


def _chunks(handle: BinaryIO, path: Path) -> Iterator[bytes]:
    total = 0
    while chunk := handle.read(_CHUNK):
        total += len(chunk)
        if total > MAX_REPORT_BYTES:  # it grew since it was looked at
            raise FileTooLarge(path, total, MAX_REPORT_BYTES)
        yield chunk


def _parse(chunks: Iterable[bytes], checkouts: Sequence[str]) -> TestReport:
    reader = _Reader(checkouts)
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse_declarations
    parser.EntityDeclHandler = _refuse_declarations
    parser.ExternalEntityRefHandler = _refuse_declarations
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    parser.CharacterDataHandler = reader.characters
    parser.buffer_text = True
    try:
        for chunk in chunks:
            parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except expat.ExpatError as error:
        raise GuardReportError(
            f"is not well-formed XML ({expat.ErrorString(error.code)}, line"
            f" {error.lineno}, column {error.offset})"
        ) from None
    if not reader.cases and not reader.suites:
        raise GuardReportError("holds no <testsuite> or <testcase>: not a JUnit XML report")
    report = report_from_cases(reader.cases)
    failures = {failure.id: failure for failure in reversed(reader.failures)}
    return TestReport(report.results, tuple(failures[key] for key in sorted(failures)))
