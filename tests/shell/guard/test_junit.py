"""A guard's JUnit XML report read as untrusted input: pytest's and other producers' reports give
the same outcomes; a missing, empty, malformed, huge or hostile report is one clear error."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from runner_core.guard.report import TestOutcome
from runner_shell.guard import junit
from runner_shell.guard.junit import GuardReportError, parse_junit

SUITE = """
import pytest

def test_slugify():
    assert True

def test_title():
    assert False

@pytest.mark.skip(reason="later")
def test_later():
    pass

@pytest.fixture
def broken():
    raise RuntimeError("fixture")

def test_error(broken):
    pass
"""

# What go-junit-report writes for the same four tests of package example.com/calc.
GO_REPORT = b"""<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4" failures="1" errors="1" skipped="1">
\t<testsuite name="example.com/calc" tests="4" failures="1" errors="1" skipped="1" time="0.010">
\t\t<properties><property name="go.version" value="go1.22.0"></property></properties>
\t\t<testcase name="test_slugify" classname="example.com/calc" time="0.000"></testcase>
\t\t<testcase name="test_title" classname="example.com/calc" time="0.000">
\t\t\t<failure message="Failed" type=""><![CDATA[calc_test.go:12: want x]]></failure>
\t\t</testcase>
\t\t<testcase name="test_later" classname="example.com/calc" time="0.000">
\t\t\t<skipped message="later"></skipped>
\t\t</testcase>
\t\t<testcase name="test_error" classname="example.com/calc" time="0.000">
\t\t\t<error message="panic" type=""></error>
\t\t</testcase>
\t</testsuite>
</testsuites>
"""

# What jest-junit writes (suites nest no deeper; system-out beside the cases).
JEST_REPORT = b"""<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="jest tests" tests="4" failures="1" errors="0" time="0.5">
  <testsuite name="calc" errors="0" failures="1" skipped="1" time="0.4" tests="4">
    <testcase classname="calc" name="test_slugify" time="0.001"></testcase>
    <testcase classname="calc" name="test_title" time="0.002">
      <failure>Error: expect(x)</failure>
    </testcase>
    <testcase classname="calc" name="test_later" time="0"><skipped/></testcase>
    <testcase classname="calc" name="test_error" time="0"><error message="boom"/></testcase>
    <system-out><![CDATA[console.log]]></system-out>
  </testsuite>
</testsuites>
"""

EXPECTED = {
    "test_error": TestOutcome.ERROR,
    "test_later": TestOutcome.SKIPPED,
    "test_slugify": TestOutcome.PASSED,
    "test_title": TestOutcome.FAILED,
}


def by_name(data: bytes) -> dict[str, TestOutcome]:
    return {
        test_id.rsplit("::", 1)[-1]: outcome
        for test_id, outcome in parse_junit(data).outcomes().items()
    }


def test_pytests_own_report_gives_each_tests_outcome(tmp_path: Path) -> None:
    (tmp_path / "test_calc.py").write_text(SUITE, encoding="utf-8")
    report = tmp_path / "report.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
        timeout=120,
    )

    parsed = parse_junit(report.read_bytes())

    assert by_name(report.read_bytes()) == EXPECTED
    assert "test_calc::test_slugify" in parsed.outcomes()


@pytest.mark.parametrize("data", [GO_REPORT, JEST_REPORT], ids=["go-junit-report", "jest-junit"])
def test_other_producers_reports_give_the_same_outcomes(data: bytes) -> None:
    assert by_name(data) == EXPECTED


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"", "is not well-formed XML (no element found, line 1, column 0)"),
        (b"<testsuite><testcase name='a'>", "is not well-formed XML (no element found"),
        (b"<html><body/></html>", "holds no <testsuite> or <testcase>: not a JUnit XML report"),
        (b"<testsuite><testcase classname='x'/></testsuite>", "a <testcase> has no name"),
    ],
    ids=["empty", "malformed", "not-junit", "nameless"],
)
def test_a_report_that_is_not_one_is_refused_in_one_line(data: bytes, error: str) -> None:
    with pytest.raises(GuardReportError) as raised:
        parse_junit(data)

    assert str(raised.value).startswith(error)
    assert "\n" not in str(raised.value)


def test_an_xml_bomb_is_refused_before_any_entity_is_expanded() -> None:
    entities = "".join(f'<!ENTITY e{n} "{f"&e{n - 1};" * 10 if n else "lol"}">' for n in range(10))
    body = '<testsuite><testcase name="&e9;"/></testsuite>'
    bomb = f'<?xml version="1.0"?><!DOCTYPE b [{entities}]>{body}'

    with pytest.raises(GuardReportError, match="DTD or an entity declaration"):
        parse_junit(bomb.encode())


def test_an_external_entity_is_never_fetched() -> None:
    xxe = (
        b'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b'<testsuite><testcase name="&x;"/></testsuite>'
    )

    with pytest.raises(GuardReportError, match="DTD or an entity declaration"):
        parse_junit(xxe)


def test_a_huge_report_is_refused_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(junit, "MAX_REPORT_BYTES", 1000)

    with pytest.raises(GuardReportError, match="is larger than 1000 bytes"):
        parse_junit(b"<testsuite>" + b" " * 1000 + b"</testsuite>")


def test_too_many_cases_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(junit, "MAX_CASES", 3)
    cases = "".join(f'<testcase name="t{n}"/>' for n in range(4))

    with pytest.raises(GuardReportError, match="more than 3 test cases"):
        parse_junit(f"<testsuite>{cases}</testsuite>".encode())


def test_an_empty_suite_is_a_report_with_no_test() -> None:
    assert parse_junit(b'<testsuites><testsuite name="none" tests="0"/></testsuites>').results == ()


# ---------------------------------------------------------------- failures, ids, bounded memory


def test_each_failure_keeps_its_message_and_the_head_of_its_text_capped() -> None:
    trace = "\n".join(f"    at frame {n}" for n in range(200))
    data = (
        "<testsuite><testcase classname='calc' name='a'>"
        f"<failure message='expected 1 got 2'>AssertionError: expected 1 got 2\n{trace}</failure>"
        "</testcase><testcase classname='calc' name='b'/></testsuite>"
    ).encode()
    (failure,) = parse_junit(data).failures

    assert failure.id == "calc::a"
    assert failure.message == ""  # the text says it already: each line once
    lines = failure.text.splitlines()
    assert lines[0] == "AssertionError: expected 1 got 2"
    assert len(lines) == junit.FAILURE_TEXT_LINES + 1
    assert lines[-1].startswith("[... ") and lines[-1].endswith(" more lines]")


def test_the_checkouts_path_never_appears_in_an_id_or_a_failure() -> None:
    slot = "/home/u/repo/.git/runner/slots/2"
    data = (
        f"<testsuite><testcase classname='test' name='{slot}/test/w.test.js'>"
        f"<failure message='boom at {slot}/test/w.test.js:3'>at ({slot}/w.js:1:2)</failure>"
        "</testcase></testsuite>"
    ).encode()
    report = parse_junit(data, (slot,))

    assert [result.id for result in report.results] == ["test::<checkout>/test/w.test.js"]
    (failure,) = report.failures
    assert failure.message == "boom at <checkout>/test/w.test.js:3"
    assert failure.text == "at (<checkout>/w.js:1:2)"


def test_failures_are_capped_in_number_and_in_all() -> None:
    body = "x" * 5_000
    cases = "".join(
        f"<testcase name='t{n:04}'><failure message='m'>{body}</failure></testcase>"
        for n in range(500)
    )
    report = parse_junit(f"<testsuite>{cases}</testsuite>".encode())

    assert len(report.results) == 500
    assert len(report.failures) <= junit.FAILURES_KEPT
    assert sum(len(f.message) + len(f.text) for f in report.failures) <= junit.FAILURES_TOTAL_CHARS


def test_a_large_report_is_read_in_bounded_memory(tmp_path: Path) -> None:
    # A 50 MB report held the runner at 321 MiB. Read from the file in chunks,
    # only the capped heads of failures are ever held.
    path = tmp_path / "report.xml"
    body = "y" * 100_000
    with path.open("w", encoding="utf-8") as handle:
        handle.write("<testsuite>")
        for n in range(300):
            handle.write(f"<testcase name='t{n}'><failure message='m'>{body}</failure></testcase>")
        handle.write("</testsuite>")
    assert path.stat().st_size > 30_000_000
    tracemalloc.start()
    try:
        report = junit.read_junit(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert len(report.results) == 300
    assert peak < 8 * 1024 * 1024, peak


def test_a_report_of_many_passing_tests_is_read_in_memory_of_its_ids_and_leaves_a_small_tests_json(
    tmp_path: Path,
) -> None:
    # A 50 MB report of 199,000 passing tests: peak RSS 126 MiB (321 MiB before), tests.json
    # 284 KB (29 MB before). Here a smaller one, traced: the reader holds each test's id and
    # outcome, about twice the report's bytes, and tests.json lists only what did not pass.
    from runner_core.guard.ratchet import TestFigures
    from runner_core.iteration.guard_stage import outcome_document

    path = tmp_path / "report.xml"
    with path.open("w", encoding="utf-8") as handle:
        handle.write("<testsuite name='s'>")
        for n in range(20_000):
            handle.write(f"<testcase classname='pkg.T' name='test_{n:06}_{'x' * 180}'/>\n")
        handle.write("</testsuite>")
    size = path.stat().st_size
    tracemalloc.start()
    try:
        report = junit.read_junit(path)
        total = len(report.results)
        text = outcome_document(None, report, TestFigures(total, 0, 0, total, 0, 0, 0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert total == 20_000
    assert peak < 3 * size, (peak, size)
    assert len(text.encode("utf-8")) < size // 10


def test_the_sandboxs_checkout_is_written_as_the_checkout_only_as_a_whole_path() -> None:
    data = (
        b"<testsuite><testcase classname='test' name='/checkout/test/w.test.js'>"
        b"<failure message='at /checkout/src/checkout/a.js and lib/checkout/b.js'>"
        b"file:///checkout/w.js</failure></testcase></testsuite>"
    )
    report = parse_junit(data, ("/checkout", "/home/u/repo/.git/runner/slots/2"))

    assert [result.id for result in report.results] == ["test::<checkout>/test/w.test.js"]
    (failure,) = report.failures
    assert failure.message == "at <checkout>/src/checkout/a.js and lib/checkout/b.js"
    assert failure.text == "file://<checkout>/w.js"
