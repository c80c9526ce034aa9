"""runner_core.testing: Hypothesis strategies and assertions for tools built on task trees.

Decides nothing about a run: it generates what the runner's rules allow (valid trees, agent
edits, agent outputs, whole runs through the pure iteration machine) and what they refuse
(invalid trees with the exact error line), and asserts with the validators' own messages.
Needs Hypothesis, an optional dependency: `pip install 'runner[testing]'`.
"""

from __future__ import annotations

try:
    import hypothesis  # noqa: F401
except ImportError:
    raise ImportError(
        "runner_core.testing needs Hypothesis: pip install 'runner[testing]'"
    ) from None

# What a test writer uses, as the README lists it; the building blocks behind these (edit
# choosers, single edits, the run's steps) stay in their modules, importable from there.
from runner_core.testing.assertions import (
    assert_runner_owned_unchanged,
    assert_transition_allowed,
    assert_valid_tree,
)
from runner_core.testing.edits import EditedTree, agent_edits
from runner_core.testing.invalid import InvalidTree, invalid_trees
from runner_core.testing.outputs import decomposer_outputs, executor_outputs
from runner_core.testing.reference import reference_select_leaf
from runner_core.testing.runs import Run, runs
from runner_core.testing.trees import canonical_texts, tree_jsons, trees

__all__ = [
    "EditedTree",
    "InvalidTree",
    "Run",
    "agent_edits",
    "assert_runner_owned_unchanged",
    "assert_transition_allowed",
    "assert_valid_tree",
    "canonical_texts",
    "decomposer_outputs",
    "executor_outputs",
    "invalid_trees",
    "reference_select_leaf",
    "runs",
    "tree_jsons",
    "trees",
]
