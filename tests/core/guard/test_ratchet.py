"""The ratchet: a done passes with no regression, its own tests passing, or some progress."""

from __future__ import annotations

import pytest

from runner_core.guard.patterns import (
    matches_test_id,
    may_edit_patterns,
    path_matches,
    target_patterns,
)
from runner_core.guard.protected import protected_changes
from runner_core.guard.ratchet import judge
from runner_core.guard.report import (
    TestOutcome,
    TestReport,
    TestResult,
    report_from_cases,
    report_from_json,
    report_to_json,
)

P, F, E, S = TestOutcome.PASSED, TestOutcome.FAILED, TestOutcome.ERROR, TestOutcome.SKIPPED


def report(**outcomes: TestOutcome) -> TestReport:
    return report_from_cases((f"t::{name}", outcome, 1) for name, outcome in outcomes.items())


BASELINE = report(slugify=F, title=F, keep=P)


def test_a_leaf_whose_own_tests_pass_passes_though_other_leaves_tests_still_fail() -> None:
    verdict = judge(BASELINE, report(slugify=P, title=F, keep=P), ["test: *slugify*"])

    assert verdict.passed
    assert verdict.reasons == ()
    assert verdict.targets == (("t::slugify", P),)


def test_a_target_test_that_does_not_pass_fails_the_done() -> None:
    verdict = judge(BASELINE, report(slugify=F, title=F, keep=P), ["test: *slugify*"])

    assert not verdict.passed
    assert verdict.reasons == ("target test 't::slugify' failed",)


@pytest.mark.parametrize("now", [F, E, S], ids=str)
def test_a_test_that_passed_at_the_baseline_and_no_longer_passes_is_a_regression(
    now: TestOutcome,
) -> None:
    verdict = judge(BASELINE, report(slugify=P, title=F, keep=now), ["test: *slugify*"])

    assert not verdict.passed
    assert verdict.reasons == (f"regressed test 't::keep' ({now.value})",)
    assert verdict.regressed == ("t::keep",)


def test_removing_a_test_that_passed_at_the_baseline_is_a_regression() -> None:
    verdict = judge(BASELINE, report(slugify=P, title=F), ["test: *slugify*"])

    assert verdict.reasons == ("regressed test 't::keep' (missing)",)
    assert verdict.figures.removed == 1


def test_a_regression_that_passes_on_its_rerun_is_flaky_and_does_not_fail_the_leaf() -> None:
    now = report(slugify=P, title=F, keep=F)
    rerun = report(slugify=P, title=F, keep=P)

    verdict = judge(BASELINE, now, ["test: *slugify*"], reruns=[rerun])

    assert verdict.passed
    assert verdict.flaky == ("t::keep",)
    assert verdict.figures.regressed == 0


def test_a_pattern_matching_no_test_fails_the_done_naming_the_pattern() -> None:
    verdict = judge(BASELINE, report(slugify=P, title=F, keep=P), ["test: *nothing*"])

    # The nearest ids are added to the reason (the pattern is still named first).
    (reason,) = verdict.reasons
    assert reason.startswith("target test pattern '*nothing*' matches no test (nearest ids: ")


def test_a_pattern_matching_no_test_names_the_ten_nearest_ids_most_alike_first() -> None:
    names = [f"test::kebab case {n}" for n in range(12)] + ["test::camelCase spaces"]
    now = TestReport(tuple(TestResult(name, P) for name in sorted(names)))
    verdict = judge(TestReport(), now, ["test: *camel_case*"])

    (reason,) = verdict.reasons
    near = reason.split("(nearest ids: ", 1)[1].rstrip(")").split(", ")
    assert near[0] == "test::camelCase spaces"
    assert len(near) == 10


def test_test_patterns_ignore_case_and_path_patterns_do_not() -> None:
    # The decomposer wrote `*camelcase*`, Node named the test `camelCase`.
    now = TestReport((TestResult("test::camelCase spaces", P),))
    assert judge(TestReport(), now, ["test: *camelcase*"]).passed
    assert matches_test_id("*CAMELCASE*", "test::camelCase spaces")
    assert not path_matches("tests/*.PY", "tests/a.py")


def test_a_node_naming_no_test_needs_some_progress() -> None:
    unchanged = judge(BASELINE, BASELINE, ["works"])
    progressed = judge(BASELINE, report(slugify=F, title=P, keep=P), ["works"])
    new_test = judge(BASELINE, report(slugify=F, title=F, keep=P, added=P), [])

    assert not unchanged.passed
    assert unchanged.reasons[0].startswith("no test that failed or was absent at the baseline")
    assert progressed.passed
    assert new_test.passed


def test_a_node_naming_no_test_passes_when_the_whole_suite_passes() -> None:
    green = report(keep=P)

    assert judge(green, green, []).passed


def test_an_empty_report_never_passes() -> None:
    verdict = judge(TestReport(), TestReport(), [])

    assert verdict.reasons == ("the guard's report holds no test",)


def test_figures_count_against_the_baseline() -> None:
    verdict = judge(BASELINE, report(slugify=P, title=S, keep=P, added=P), ["test: *slugify*"])

    assert verdict.figures.line() == "tests=3/4 +2 -0"
    assert (verdict.figures.failed, verdict.figures.skipped) == (0, 1)


def test_a_repeated_test_id_keeps_its_worst_outcome() -> None:
    merged = report_from_cases([("a", P, 1), ("a", F, 2), ("a", S, 3)])

    assert merged.results[0].outcome is F
    assert merged.results[0].duration_ms == 6


def test_the_report_round_trips_through_its_canonical_json() -> None:
    original = report(b=P, a=F, c=S)
    text = report_to_json(original)

    assert report_from_json(text) == original
    assert text.index('"t::a"') < text.index('"t::b"')


def test_acceptance_entries_name_tests_and_editable_paths() -> None:
    acceptance = ["slugify works", "test: tests/test_slug.py::*", " may-edit: tests/data/** "]

    assert target_patterns(acceptance) == ("tests/test_slug.py::*",)
    assert may_edit_patterns(acceptance) == ("tests/data/**",)


def test_a_test_pattern_star_crosses_separators_and_a_path_star_does_not() -> None:
    assert matches_test_id("*slug*", "tests/test_a.py::TestX::test_slugify")
    assert path_matches("tests/**", "tests/unit/test_a.py")
    assert not path_matches("tests/*.py", "tests/unit/test_a.py")
    assert path_matches("tests/*.py", "tests/test_a.py")


def test_changing_a_protected_file_is_refused_unless_the_node_allowed_it_before() -> None:
    changed = ["src/calc.py", "tests/test_calc.py", "tests/data/x.json"]

    refused = protected_changes(changed, ["tests/**"], ["may-edit: tests/data/**"])

    assert refused == (
        "changed protected test file 'tests/test_calc.py' (allow it with 'may-edit:"
        " tests/test_calc.py' in the node's acceptance)",
    )


def test_a_flaky_test_counts_as_passing_for_a_node_that_names_no_test() -> None:
    baseline = report_from_cases([("t::flaky", "passed", 0), ("t::new", "failed", 0)])
    now = report_from_cases([("t::flaky", "failed", 0), ("t::new", "failed", 0)])
    rerun = report_from_cases([("t::flaky", "passed", 0), ("t::new", "failed", 0)])
    all_pass_now = report_from_cases([("t::flaky", "failed", 0), ("t::new", "passed", 0)])

    assert judge(baseline, all_pass_now, [], [rerun]).passed  # the whole suite passes
    verdict = judge(baseline, now, [], [rerun])
    assert verdict.flaky == ("t::flaky",) and not verdict.passed  # yet no progress was made
