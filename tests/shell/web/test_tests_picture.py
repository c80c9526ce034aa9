"""Specification of the tests picture's extent (runner_shell/web/pictures.py): up to
TESTS_BARS guard reports show every one; more show the latest TESTS_BARS and say so under the
axis, so a long run's picture costs what it shows."""

from __future__ import annotations

from runner_core.views.charts import TestsPoint
from runner_shell.web.pictures import TESTS_BARS
from runner_shell.web.pictures import tests_svg as draw_tests


def bars(count: int) -> list[int]:
    svg = draw_tests([TestsPoint(n, n % 7, n % 3, n % 7 + n % 3) for n in range(1, count + 1)])
    return [int(chunk.split('"', 1)[0]) for chunk in svg.split('data-iter="')[1:]]


def test_up_to_the_limit_every_report_is_a_bar() -> None:
    assert bars(TESTS_BARS) == list(range(1, TESTS_BARS + 1))
    assert ">iteration</text>" in draw_tests([TestsPoint(1, 1, 0, 1)])


def test_a_longer_run_shows_its_latest_reports_and_says_how_many_of_all() -> None:
    count = TESTS_BARS + 9_800
    assert bars(count) == list(range(9_801, count + 1))
    points = [TestsPoint(n, 1, 0, 1) for n in range(1, count + 1)]
    assert f"iteration (latest {TESTS_BARS} of {count})" in draw_tests(points)
