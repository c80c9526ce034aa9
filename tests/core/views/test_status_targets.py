"""A ratchet run's status names what its open leaves' tests are: each
`test:` pattern no test of the head's baseline matches yet, and each leaf that names no test
and is judged by regressions alone; the `--json` document carries both, by its schema."""

from __future__ import annotations

import attrs

from runner_core.guard.report import report_from_cases
from runner_core.views.status import render_status, status_to_json, status_view
from runner_core.views.suite import target_notes
from tests.core.views.test_reports_core import HISTORY, STATE, assert_valid
from tests.helpers.trees import tree

LEAVES = tree(
    "root",
    tree("root.1", order=0, passes=True, acceptance=["test: *old*"]),
    tree("root.2", order=1, acceptance=["test: *camelcase*", "test: *kebab*"]),
    tree("root.3", order=2, acceptance=["it works"]),
    next="decompose",
)
BASELINE = report_from_cases([("test::camelCase spaces", "failed", 0)])


def test_status_names_unmatched_patterns_and_leaves_judged_by_regressions_alone() -> None:
    notes = target_notes(LEAVES, BASELINE)
    view = attrs.evolve(status_view(LEAVES, STATE, 100, HISTORY), targets=notes)

    assert notes.unmatched == (("root.2", "*kebab*"),)  # matched case-insensitively: camelcase
    assert notes.regressions_alone == ("root.3",)
    lines = render_status(view)
    assert "status: test patterns no test matches yet: root.2 '*kebab*'" in lines
    assert "status: judged by regressions alone (no test: entry): root.3" in lines
    document = status_to_json(view)
    assert document["test_targets"] == {
        "unmatched": [{"node_id": "root.2", "pattern": "*kebab*"}],
        "regressions_alone": ["root.3"],
    }
    assert_valid(document, "status")


def test_without_a_baseline_no_pattern_is_called_unmatched() -> None:
    assert target_notes(LEAVES, None).unmatched == ()
