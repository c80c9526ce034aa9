"""Properties of the ratchet: a regression never passes, a flaky test is never a regression, and
the verdict depends on the tests' outcomes, not on the order the report listed them in."""

from __future__ import annotations

import json
from random import Random

from hypothesis import given
from hypothesis import strategies as st

from runner_core.guard.ratchet import judge
from runner_core.guard.report import (
    TestOutcome,
    report_from_cases,
    report_from_json,
    report_to_json,
)
from runner_core.iteration.guard_stage import (
    LISTED_TESTS,
    judge_guard,
    outcome_document,
    read_outcome_document,
)
from runner_core.run.config import Config
from runner_core.tree.model import GuardOutcome

ids = st.text(alphabet="abc:/._", min_size=1, max_size=6)
outcomes = st.sampled_from(list(TestOutcome))
cases = st.lists(st.tuples(ids, outcomes, st.integers(0, 10_000)), max_size=12)
Cases = list[tuple[str, TestOutcome, int]]
RATCHET_CONFIG = Config(guard_mode="ratchet")
acceptances = st.lists(st.sampled_from(["test: a*", "test: *b", "plain", "test: zzz"]), max_size=3)


@given(cases, cases, acceptances)
def test_a_done_with_a_regression_never_passes(
    before: Cases, after: Cases, acceptance: list[str]
) -> None:
    verdict = judge(report_from_cases(before), report_from_cases(after), acceptance)

    assert not (verdict.regressed and verdict.passed)
    assert verdict.figures.regressed == len(verdict.regressed)
    assert list(verdict.reasons) == sorted(verdict.reasons)


@given(cases, cases, cases, acceptances)
def test_a_flaky_test_is_never_counted_as_regressed(
    before: Cases,
    after: Cases,
    rerun: Cases,
    acceptance: list[str],
) -> None:
    verdict = judge(
        report_from_cases(before), report_from_cases(after), acceptance, [report_from_cases(rerun)]
    )

    assert set(verdict.flaky).isdisjoint(verdict.regressed)


@given(cases, cases, acceptances, st.randoms())
def test_the_verdict_does_not_depend_on_the_reports_order(
    before: Cases,
    after: Cases,
    acceptance: list[str],
    random: Random,
) -> None:
    shuffled = list(after)
    random.shuffle(shuffled)

    assert judge(report_from_cases(before), report_from_cases(after), acceptance) == judge(
        report_from_cases(before), report_from_cases(shuffled), acceptance
    )


@given(cases)
def test_a_report_round_trips_through_its_json(items: Cases) -> None:
    report = report_from_cases(items)

    assert report_from_json(report_to_json(report)) == report


@given(cases, st.one_of(st.none(), cases), acceptances, st.sampled_from(list(GuardOutcome)))
def test_exit_mode_keeps_the_exit_codes_outcome_whatever_the_report_says(
    base: Cases, now: Cases | None, acceptance: list[str], exit_outcome: GuardOutcome
) -> None:
    report = None if now is None else report_from_cases(now)
    judgement = judge_guard(
        Config(), acceptance, report_from_cases(base), report, None, (), exit_outcome
    )
    assert judgement.outcome is exit_outcome


@given(cases, cases, acceptances)
def test_ratchet_mode_passes_exactly_when_the_verdict_does(
    base: Cases, now: Cases, acceptance: list[str]
) -> None:
    before, after = report_from_cases(base), report_from_cases(now)
    judgement = judge_guard(RATCHET_CONFIG, acceptance, before, after, None, (), GuardOutcome.FAIL)
    verdict = judge(before, after, acceptance)
    assert (judgement.outcome is GuardOutcome.PASS) == verdict.passed
    assert judgement.figures is not None and judgement.figures.reasons == verdict.reasons


@given(cases, cases)
def test_tests_json_reads_back_as_written(base: Cases, now: Cases) -> None:
    before, after = report_from_cases(base), report_from_cases(now)
    judgement = judge_guard(RATCHET_CONFIG, [], before, after, None, (), GuardOutcome.FAIL)
    assert judgement.figures is not None
    text = outcome_document(before, after, judgement.figures)
    assert read_outcome_document(text) == json.loads(text)
    # tests.json lists the tests that did not pass (the first LISTED_TESTS) and counts the rest.
    listed = tuple(result for result in after.results if result.outcome is not TestOutcome.PASSED)
    assert report_from_json(text).results == listed[:LISTED_TESTS]
    document = json.loads(text)
    assert document["passed"] == len(after.results) - len(listed)
    assert document["unlisted_tests"] == max(0, len(listed) - LISTED_TESTS)
