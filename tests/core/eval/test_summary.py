"""The eval's pure parts: the outcome table, the Wilson interval, the summary rows and table."""

from __future__ import annotations

import pytest

from runner_core.eval.summary import (
    RunFigures,
    classify,
    compare_lines,
    render_table,
    summary_document,
    wilson,
)


@pytest.mark.parametrize(
    ("end", "checks", "outcome"),
    [
        ("complete", True, "success"),
        ("complete", False, "fail"),
        ("stuck", True, "stuck"),
        ("limit", False, "limit"),
        ("error", True, "error"),
    ],
)
def test_the_outcome_of_a_run(end: str, checks: bool, outcome: str) -> None:
    assert classify(end, checks) == outcome


def test_an_unknown_loop_end_is_a_bug() -> None:
    with pytest.raises(ValueError, match="unknown loop end"):
        classify("done", True)


@pytest.mark.parametrize(
    ("successes", "runs", "expected"),
    [
        (0, 0, (0.0, 1.0)),
        (3, 3, (0.438503, 1.0)),
        (0, 3, (0.0, 0.561497)),
        (5, 10, (0.236593, 0.763407)),
        (1, 1, (0.206549, 1.0)),
    ],
)
def test_the_wilson_interval(successes: int, runs: int, expected: tuple[float, float]) -> None:
    assert wilson(successes, runs) == pytest.approx(expected, abs=1e-6)


def _run(case: str, prompts: str, run: int, outcome: str, cost: float) -> RunFigures:
    return RunFigures(
        case, "command", prompts, run, outcome, run + 1, 1, 100 * run, cost, 2.0 * run
    )


def test_summary_rows_group_by_case_backend_and_prompts() -> None:
    runs = [
        _run("b", "builtin", 2, "fail", 0.5),
        _run("a", "terse", 1, "success", 0.25),
        _run("b", "builtin", 1, "success", 0.25),
        _run("b", "builtin", 3, "success", 0.5),
    ]
    document = summary_document("e1", runs)
    rows = document["rows"]
    assert [(row["case"], row["prompts"], row["runs"]) for row in rows] == [
        ("a", "terse", 1),
        ("b", "builtin", 3),
    ]
    b = rows[1]
    assert b["outcomes"] == {"success": 2, "fail": 1, "stuck": 0, "limit": 0, "error": 0}
    assert b["success_rate"] == pytest.approx(2 / 3, abs=1e-6)
    assert b["median_iterations"] == 3 and b["tokens"] == 600
    assert b["cost_usd"] == 1.25 and b["mean_cost_usd"] == pytest.approx(1.25 / 3, abs=1e-6)
    assert b["median_wall_secs"] == 4.0
    assert [run["run"] for run in document["runs"]] == [1, 1, 2, 3]
    table = render_table(rows)
    assert table[0].split()[:5] == ["case", "backend", "prompts", "runs", "success"]
    assert table[2].split()[:5] == ["b", "command", "builtin", "3", "2/3"]


def test_compare_shows_rows_only_one_side_has() -> None:
    a = summary_document("a", [_run("x", "builtin", 1, "success", 0.0)])
    b = summary_document("b", [_run("y", "builtin", 1, "fail", 0.0)])
    lines = compare_lines(a, b)
    assert [line.split()[:6] for line in lines[1:]] == [
        ["x", "command", "builtin", "100%", "-", "-"],
        ["y", "command", "builtin", "-", "0%", "-"],
    ]
