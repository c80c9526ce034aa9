"""Specification of the spend picture's density (runner_shell/web/pictures.py): every point
is drawn while the plot has a pixel column for each; past that, the last point of each column,
so a long run's picture costs what it shows."""

from __future__ import annotations

from runner_core.views.charts import SpendPoint
from runner_shell.web.pictures import WIDTH, spend_svg

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
