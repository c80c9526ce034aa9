"""Figures are printed for people: a float's binary noise (0.1 + 0.2 = 0.30000000000000004)
never reaches `runner metrics` or `runner diff`, and a diff shows values as JSON spells them."""

from __future__ import annotations

from runner_core.tree.diff import change_lines, tree_diff
from runner_core.views.metrics import MetricFamily
from tests.helpers.trees import tree


def test_a_metric_float_is_printed_without_binary_noise() -> None:
    family = MetricFamily("runner_x_seconds", "gauge", "x", (((), 0.1 + 0.2), ((), 1.9873)))

    assert family.lines()[2:] == ["runner_x_seconds{} 0.3", "runner_x_seconds{} 1.9873"]


def test_a_diff_spells_booleans_as_json() -> None:
    before = tree("root")
    after = tree("root", passes=True)

    assert change_lines(tree_diff(before, after)) == ("root passes: false -> true",)
