"""runner_core: the pure functional core of runner.

Every decision of the runner lives here as a function of its inputs: validating a task tree,
choosing the next leaf, applying runner-owned state updates, building the prompt pack and
concluding an iteration. Nothing in this package reads files, the clock, the environment or
randomness, starts a process, or mutates an argument.

Every public name is loaded on first use (PEP 562), so a command imports only the modules it
needs: `runner select` never loads the execution history or the prompt pack.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runner_core.child_additions import validate_child_additions_restricted
    from runner_core.config import Config, ConfigError, parse_config, render_config
    from runner_core.decompose import ChildSpec, child_specs_from_output, decompose_node
    from runner_core.history import (
        META_FIELDS,
        DamagedRecord,
        DuplicateIteration,
        ErrorKind,
        ExecutionHistory,
        ExecutionRecord,
        HistorySummary,
        NodeDisplayState,
        NodeStats,
        TokenUsage,
        display_states,
        most_retried,
        node_stats,
        record_from_meta,
        record_to_meta,
        slowest,
        summarize,
        summary_to_json,
    )
    from runner_core.immutability import check_passed_node_immutability
    from runner_core.invariants import validate_invariants
    from runner_core.iteration import (
        AgentOutputError,
        IterationOutcome,
        PlanKind,
        Review,
        StepPlan,
        advance_run_state,
        conclude,
        conclude_runner_error,
        context_files,
        needs_failure_log,
        plan_step,
        review_decomposition,
        review_execution,
    )
    from runner_core.model import (
        MAX_DEPTH,
        AgentRole,
        AgentStatus,
        GuardOutcome,
        Node,
        NodeNext,
        count_nodes,
        iter_preorder,
        sort_children,
        sort_key,
    )
    from runner_core.prompt_pack import (
        PromptPack,
        build_prompt_pack,
        selected_section,
        tree_outline,
    )
    from runner_core.run_identity import (
        RunIdentityError,
        branch_for,
        generate_run_id,
        goal_run_id,
        parse_frontmatter,
        run_id_problem,
        with_run_id,
    )
    from runner_core.run_state import (
        RunState,
        RunStateError,
        run_state_from_json,
        run_state_to_json,
    )
    from runner_core.schema import (
        validate_decomposer_output,
        validate_executor_output,
        validate_schema,
    )
    from runner_core.selection import (
        Selection,
        SelectionStatus,
        is_stuck,
        leftmost_open_leaf,
        node_path,
        select_leaf,
    )
    from runner_core.state_update import (
        TRANSITIONS,
        InvalidTransition,
        StateUpdateSummary,
        UnknownSelectedNode,
        apply_state_updates,
    )
    from runner_core.status_invariants import validate_status_invariants
    from runner_core.tree_json import (
        RefusedJson,
        TreeValidationError,
        decode_tree_text,
        dumps_tree,
        loads_json,
        parse_tree,
        tree_from_json,
        tree_to_json,
    )

# The module that defines each public name, as the imports above say.
_MODULE_OF: Mapping[str, str] = MappingProxyType(
    {
        "validate_child_additions_restricted": "runner_core.child_additions",
        "Config": "runner_core.config",
        "ConfigError": "runner_core.config",
        "parse_config": "runner_core.config",
        "render_config": "runner_core.config",
        "ChildSpec": "runner_core.decompose",
        "child_specs_from_output": "runner_core.decompose",
        "decompose_node": "runner_core.decompose",
        "META_FIELDS": "runner_core.history",
        "DamagedRecord": "runner_core.history",
        "DuplicateIteration": "runner_core.history",
        "ErrorKind": "runner_core.history",
        "ExecutionHistory": "runner_core.history",
        "ExecutionRecord": "runner_core.history",
        "HistorySummary": "runner_core.history",
        "NodeDisplayState": "runner_core.history",
        "NodeStats": "runner_core.history",
        "TokenUsage": "runner_core.history",
        "display_states": "runner_core.history",
        "most_retried": "runner_core.history",
        "node_stats": "runner_core.history",
        "record_from_meta": "runner_core.history",
        "record_to_meta": "runner_core.history",
        "slowest": "runner_core.history",
        "summarize": "runner_core.history",
        "summary_to_json": "runner_core.history",
        "check_passed_node_immutability": "runner_core.immutability",
        "validate_invariants": "runner_core.invariants",
        "MAX_DEPTH": "runner_core.model",
        "AgentStatus": "runner_core.model",
        "GuardOutcome": "runner_core.model",
        "Node": "runner_core.model",
        "NodeNext": "runner_core.model",
        "count_nodes": "runner_core.model",
        "iter_preorder": "runner_core.model",
        "sort_children": "runner_core.model",
        "sort_key": "runner_core.model",
        "PromptPack": "runner_core.prompt_pack",
        "build_prompt_pack": "runner_core.prompt_pack",
        "selected_section": "runner_core.prompt_pack",
        "tree_outline": "runner_core.prompt_pack",
        "RunIdentityError": "runner_core.run_identity",
        "branch_for": "runner_core.run_identity",
        "generate_run_id": "runner_core.run_identity",
        "goal_run_id": "runner_core.run_identity",
        "parse_frontmatter": "runner_core.run_identity",
        "run_id_problem": "runner_core.run_identity",
        "with_run_id": "runner_core.run_identity",
        "validate_decomposer_output": "runner_core.schema",
        "validate_executor_output": "runner_core.schema",
        "validate_schema": "runner_core.schema",
        "Selection": "runner_core.selection",
        "SelectionStatus": "runner_core.selection",
        "is_stuck": "runner_core.selection",
        "leftmost_open_leaf": "runner_core.selection",
        "node_path": "runner_core.selection",
        "select_leaf": "runner_core.selection",
        "TRANSITIONS": "runner_core.state_update",
        "InvalidTransition": "runner_core.state_update",
        "StateUpdateSummary": "runner_core.state_update",
        "UnknownSelectedNode": "runner_core.state_update",
        "apply_state_updates": "runner_core.state_update",
        "validate_status_invariants": "runner_core.status_invariants",
        "AgentOutputError": "runner_core.iteration",
        "AgentRole": "runner_core.model",
        "IterationOutcome": "runner_core.iteration",
        "PlanKind": "runner_core.iteration",
        "Review": "runner_core.iteration",
        "RunState": "runner_core.run_state",
        "RunStateError": "runner_core.run_state",
        "StepPlan": "runner_core.iteration",
        "advance_run_state": "runner_core.iteration",
        "conclude": "runner_core.iteration",
        "conclude_runner_error": "runner_core.iteration",
        "context_files": "runner_core.iteration",
        "needs_failure_log": "runner_core.iteration",
        "plan_step": "runner_core.iteration",
        "review_decomposition": "runner_core.iteration",
        "review_execution": "runner_core.iteration",
        "run_state_from_json": "runner_core.run_state",
        "run_state_to_json": "runner_core.run_state",
        "RefusedJson": "runner_core.tree_json",
        "TreeValidationError": "runner_core.tree_json",
        "decode_tree_text": "runner_core.tree_json",
        "dumps_tree": "runner_core.tree_json",
        "loads_json": "runner_core.tree_json",
        "parse_tree": "runner_core.tree_json",
        "tree_from_json": "runner_core.tree_json",
        "tree_to_json": "runner_core.tree_json",
    }
)

__all__ = (
    "MAX_DEPTH",
    "META_FIELDS",
    "TRANSITIONS",
    "AgentOutputError",
    "AgentRole",
    "AgentStatus",
    "ChildSpec",
    "Config",
    "ConfigError",
    "DamagedRecord",
    "DuplicateIteration",
    "ErrorKind",
    "ExecutionHistory",
    "ExecutionRecord",
    "GuardOutcome",
    "HistorySummary",
    "InvalidTransition",
    "IterationOutcome",
    "Node",
    "NodeDisplayState",
    "NodeNext",
    "NodeStats",
    "PlanKind",
    "PromptPack",
    "RefusedJson",
    "Review",
    "RunIdentityError",
    "RunState",
    "RunStateError",
    "Selection",
    "SelectionStatus",
    "StateUpdateSummary",
    "StepPlan",
    "TokenUsage",
    "TreeValidationError",
    "UnknownSelectedNode",
    "advance_run_state",
    "apply_state_updates",
    "branch_for",
    "build_prompt_pack",
    "check_passed_node_immutability",
    "child_specs_from_output",
    "conclude",
    "conclude_runner_error",
    "context_files",
    "count_nodes",
    "decode_tree_text",
    "decompose_node",
    "display_states",
    "dumps_tree",
    "generate_run_id",
    "goal_run_id",
    "is_stuck",
    "iter_preorder",
    "leftmost_open_leaf",
    "loads_json",
    "most_retried",
    "needs_failure_log",
    "node_path",
    "node_stats",
    "parse_config",
    "parse_frontmatter",
    "parse_tree",
    "plan_step",
    "record_from_meta",
    "record_to_meta",
    "render_config",
    "review_decomposition",
    "review_execution",
    "run_id_problem",
    "run_state_from_json",
    "run_state_to_json",
    "select_leaf",
    "selected_section",
    "slowest",
    "sort_children",
    "sort_key",
    "summarize",
    "summary_to_json",
    "tree_from_json",
    "tree_outline",
    "tree_to_json",
    "validate_child_additions_restricted",
    "validate_decomposer_output",
    "validate_executor_output",
    "validate_invariants",
    "validate_schema",
    "validate_status_invariants",
    "with_run_id",
)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'runner_core' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
