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

from runner_core.testing.assertions import (
    assert_runner_owned_unchanged,
    assert_transition_allowed,
    assert_valid_tree,
)
from runner_core.testing.edits import (
    EDIT_KINDS,
    Chooser,
    DrawChooser,
    Edit,
    EditedTree,
    agent_edits,
    choose_bool,
    choose_from,
    index_json,
    open_edits_of,
    passed_edit,
    runner_owned_edit,
)
from runner_core.testing.invalid import (
    InvalidTree,
    invalid_trees,
    invariant_breaking_trees,
    mutated_tree_jsons,
)
from runner_core.testing.outputs import decomposer_outputs, executor_outputs
from runner_core.testing.reference import reference_select_leaf
from runner_core.testing.runs import AgentTurn, Run, RunStep, iterate, runs
from runner_core.testing.trees import (
    STATUS_GUARD_PAIRS,
    canonical_texts,
    ids,
    passed_ids,
    preorder,
    status_guard_pairs,
    texts,
    tree_jsons,
    trees,
)

__all__ = [
    "EDIT_KINDS",
    "STATUS_GUARD_PAIRS",
    "AgentTurn",
    "Chooser",
    "DrawChooser",
    "Edit",
    "EditedTree",
    "InvalidTree",
    "Run",
    "RunStep",
    "agent_edits",
    "assert_runner_owned_unchanged",
    "assert_transition_allowed",
    "assert_valid_tree",
    "canonical_texts",
    "choose_bool",
    "choose_from",
    "decomposer_outputs",
    "executor_outputs",
    "ids",
    "index_json",
    "invalid_trees",
    "invariant_breaking_trees",
    "iterate",
    "mutated_tree_jsons",
    "open_edits_of",
    "passed_edit",
    "passed_ids",
    "preorder",
    "reference_select_leaf",
    "runner_owned_edit",
    "runs",
    "status_guard_pairs",
    "texts",
    "tree_jsons",
    "trees",
]
