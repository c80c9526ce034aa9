"""What the views say of the guard's tests over a run: the suite's pass count iteration by
iteration, the flaky tests and how often each flaked, and each node's target tests.

Decides the `tests` part of `runner report` and `runner status` (text and `--json`) from the
figures each iteration's meta.json keeps; a run whose guard never wrote a report has none.
Never reads a file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import attrs

from runner_core.history.records import ExecutionRecord
from runner_core.tree.model import Node, nodes_by_id
from runner_core.views.layout import table
from runner_core.views.text import flatten

# The guard's report model and the ratchet's pattern rules are imported where a ratchet run's
# notes are made: `runner status` of any other run defines none of their classes.
if TYPE_CHECKING:
    from runner_core.guard.ratchet import TestFigures
    from runner_core.guard.report import TestReport

# How many iterations of the pass-count series the text shows (the JSON has them all).
SERIES_SHOWN = 12


class SeriesPoint(NamedTuple):
    iter: int
    passed: int
    total: int


class FlakyTest(NamedTuple):
    id: str
    times: int


class TargetFigures(NamedTuple):
    node_id: str
    passed: int
    total: int


@attrs.frozen(slots=True)
class SuiteView:
    """The run's test figures: the last, then passed and total per iteration with a report,
    each flaky test with how often it flaked (most first), each node's latest target figures;
    the `tests` object of `runner report --json` and `runner status --json`."""

    last: TestFigures
    series: tuple[SeriesPoint, ...]
    flaky: tuple[FlakyTest, ...]
    targets: tuple[TargetFigures, ...]


def _most_first(item: tuple[str, int]) -> tuple[int, str]:
    return -item[1], item[0]


def suite_view(records: Sequence[ExecutionRecord]) -> SuiteView | None:
    """The figures of the records that have some, in iteration order; None when none has."""
    tested = [record for record in records if record.tests is not None]
    if not tested:
        return None
    series = tuple(
        SeriesPoint(r.iteration, r.tests.passed, r.tests.total) for r in tested if r.tests
    )
    flaked = Counter(test_id for r in tested if r.tests for test_id in r.tests.flaky)
    latest: dict[str, TestFigures] = {}
    for record in tested:
        assert record.tests is not None
        if record.tests.targets_total:
            latest[record.node_id] = record.tests
    last = tested[-1].tests
    assert last is not None
    return SuiteView(
        series=series,
        flaky=tuple(FlakyTest(*item) for item in sorted(flaked.items(), key=_most_first)),
        targets=tuple(
            TargetFigures(node_id, figures.targets_passed, figures.targets_total)
            for node_id, figures in sorted(latest.items())
        ),
        last=last,
    )


def suite_lines(view: SuiteView | None) -> list[str]:
    """The report's `tests:` section: nothing when no guard wrote a report."""
    if view is None:
        return []
    shown = view.series[-SERIES_SHOWN:]
    cut = "… " if len(view.series) > len(shown) else ""
    series = cut + ", ".join(f"{it}:{passed}/{total}" for it, passed, total in shown)
    out = ["tests:", f"  last: {view.last.line()}", f"  passing by iteration: {series}"]
    if view.targets:
        rows = [(node_id, f"{passed}/{total}") for node_id, passed, total in view.targets]
        out += table(("NODE", "TARGET TESTS PASSING"), rows, indent="  ")
    out.append("  flaky:" if view.flaky else "  flaky: none")
    out += [f"    {flatten(test_id, 200)} (flaked {times}x)" for test_id, times in view.flaky]
    return out


class UnmatchedPattern(NamedTuple):
    node_id: str
    pattern: str


@attrs.frozen(slots=True)
class TargetNotes:
    """What a ratchet run's open leaves say of their tests: each `test:` pattern no test of the
    head's baseline matches yet (node, pattern), and the leaves naming none, judged by
    regressions alone; `test_targets` of `runner status --json`."""

    unmatched: tuple[UnmatchedPattern, ...] = ()
    regressions_alone: tuple[str, ...] = ()


def target_notes(tree: Node, baseline: TestReport | None) -> TargetNotes:
    """The notes of every open leaf of `tree` (a pattern is unmatched only against a known
    baseline)."""
    from runner_core.guard.patterns import target_patterns
    from runner_core.iteration.guard_stage import unmatched_patterns

    leaves = [node for node in nodes_by_id(tree).values() if node.is_leaf and not node.passes]
    leaves.sort(key=lambda node: node.id)
    unmatched = tuple(
        UnmatchedPattern(node.id, pattern)
        for node in leaves
        for pattern in unmatched_patterns(node.acceptance, baseline)
    )
    alone = tuple(node.id for node in leaves if not target_patterns(node.acceptance))
    return TargetNotes(unmatched, alone)


def target_note_lines(notes: TargetNotes, prefix: str = "status: ") -> list[str]:
    lines = []
    if notes.unmatched:
        named = ", ".join(f"{node_id} '{flatten(p, 200)}'" for node_id, p in notes.unmatched)
        lines.append(f"{prefix}test patterns no test matches yet: {named}")
    if notes.regressions_alone:
        lines.append(
            f"{prefix}judged by regressions alone (no test: entry): "
            + ", ".join(notes.regressions_alone)
        )
    return lines
