"""Specification of the spend picture's density (runner_shell/web/pictures.py): every point
is drawn while the plot has a pixel column for each; past that, the last point of each column,
so a long run's picture costs what it shows."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from runner_core.views.charts import SpendPoint
from runner_shell.web.pictures import WIDTH, _one_per_column, spend_svg

PLOT_COLUMNS = WIDTH - 56 - 48


def series(count: int) -> list[SpendPoint]:
    return [SpendPoint(n, n * 10.0, n * 100, n * 0.01) for n in range(1, count + 1)]


def test_a_short_run_draws_every_point() -> None:
    svg = spend_svg(series(40))
    assert svg.count('class="pt-tokens"') == 40
    assert svg.count('class="pt-cost"') == 40


def test_a_long_run_draws_at_most_a_point_per_pixel_column_and_always_its_totals() -> None:
    svg = spend_svg(series(10_000))
    assert 0 < svg.count('class="pt-tokens"') <= PLOT_COLUMNS + 1
    assert 0 < svg.count('class="pt-cost"') <= PLOT_COLUMNS + 1
    assert "iter 10000: 1000000 tokens after" in svg
    assert "1000000 tokens, $100.0000" in svg
    assert len(svg) < len(spend_svg(series(40))) * 20


def last_of_each_column(points: list[SpendPoint], x_of: Callable[[float], float]) -> list[int]:
    """The iterations the picture keeps, by one plain pass: the last point of each run of
    points in the same pixel column."""
    kept: list[int] = []
    last_column = None
    for point in points:
        column = int(x_of(point.secs))
        if column == last_column:
            kept[-1] = point.iteration
        else:
            kept.append(point.iteration)
        last_column = column
    return kept


@pytest.mark.parametrize("count", [PLOT_COLUMNS + 1, 997, 10_000])
def test_the_points_kept_are_the_last_of_each_pixel_column(count: int) -> None:
    # Bursts of iterations ending together, then gaps: columns with many points, and empty ones.
    points = [SpendPoint(n, float((n // 7) ** 2 % 5000), n, None) for n in range(count)]
    points.sort(key=lambda point: (point.secs, point.iteration))
    span = max(points[-1].secs, 1.0)

    def x_of(secs: float) -> float:
        return 48.0 + PLOT_COLUMNS * secs / span

    kept = _one_per_column(points, x_of, PLOT_COLUMNS)
    assert [point.iteration for point in kept] == last_of_each_column(points, x_of)
