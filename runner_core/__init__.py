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
    from runner_core.history.records import (
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
    from runner_core.iteration.plan import (
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
    from runner_core.iteration.prompt_pack import (
        PromptPack,
        build_prompt_pack,
        selected_section,
        tree_outline,
    )
    from runner_core.iteration.state_update import (
        TRANSITIONS,
        InvalidTransition,
        StateUpdateSummary,
        UnknownSelectedNode,
        apply_state_updates,
    )
    from runner_core.run.config import Config, ConfigError, parse_config, render_config
    from runner_core.run.identity import (
        RunIdentityError,
        branch_for,
        generate_run_id,
        goal_run_id,
        parse_frontmatter,
        run_id_problem,
        with_run_id,
    )
    from runner_core.run.state import (
        RunState,
        RunStateError,
        run_state_from_json,
        run_state_to_json,
    )
    from runner_core.tree.decompose import ChildSpec, child_specs_from_output, decompose_node
    from runner_core.tree.model import (
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
    from runner_core.tree.selection import (
        Selection,
        SelectionStatus,
        is_stuck,
        leftmost_open_leaf,
        node_path,
        select_leaf,
    )
    from runner_core.tree.serialization import (
        RefusedJson,
        TreeValidationError,
        decode_tree_text,
        dumps_tree,
        loads_json,
        parse_tree,
        tree_from_json,
        tree_to_json,
    )
    from runner_core.validation.child_additions import validate_child_additions_restricted
    from runner_core.validation.immutability import check_passed_node_immutability
    from runner_core.validation.invariants import validate_invariants
    from runner_core.validation.schema import (
        validate_decomposer_output,
        validate_executor_output,
        validate_schema,
    )
    from runner_core.validation.status import validate_status_invariants

# The module that defines each public name, as the imports above say.
_MODULE_OF: Mapping[str, str] = MappingProxyType(
    {
        "validate_child_additions_restricted": "runner_core.validation.child_additions",
        "Config": "runner_core.run.config",
        "ConfigError": "runner_core.run.config",
        "parse_config": "runner_core.run.config",
        "render_config": "runner_core.run.config",
        "ChildSpec": "runner_core.tree.decompose",
        "child_specs_from_output": "runner_core.tree.decompose",
        "decompose_node": "runner_core.tree.decompose",
        "META_FIELDS": "runner_core.history.records",
        "DamagedRecord": "runner_core.history.records",
        "DuplicateIteration": "runner_core.history.records",
        "ErrorKind": "runner_core.history.records",
        "ExecutionHistory": "runner_core.history.records",
        "ExecutionRecord": "runner_core.history.records",
        "HistorySummary": "runner_core.history.records",
        "NodeDisplayState": "runner_core.history.records",
        "NodeStats": "runner_core.history.records",
        "TokenUsage": "runner_core.history.records",
        "display_states": "runner_core.history.records",
        "most_retried": "runner_core.history.records",
        "node_stats": "runner_core.history.records",
        "record_from_meta": "runner_core.history.records",
        "record_to_meta": "runner_core.history.records",
        "slowest": "runner_core.history.records",
        "summarize": "runner_core.history.records",
        "summary_to_json": "runner_core.history.records",
        "check_passed_node_immutability": "runner_core.validation.immutability",
        "validate_invariants": "runner_core.validation.invariants",
        "MAX_DEPTH": "runner_core.tree.model",
        "AgentStatus": "runner_core.tree.model",
        "GuardOutcome": "runner_core.tree.model",
        "Node": "runner_core.tree.model",
        "NodeNext": "runner_core.tree.model",
        "count_nodes": "runner_core.tree.model",
        "iter_preorder": "runner_core.tree.model",
        "sort_children": "runner_core.tree.model",
        "sort_key": "runner_core.tree.model",
        "PromptPack": "runner_core.iteration.prompt_pack",
        "build_prompt_pack": "runner_core.iteration.prompt_pack",
        "selected_section": "runner_core.iteration.prompt_pack",
        "tree_outline": "runner_core.iteration.prompt_pack",
        "RunIdentityError": "runner_core.run.identity",
        "branch_for": "runner_core.run.identity",
        "generate_run_id": "runner_core.run.identity",
        "goal_run_id": "runner_core.run.identity",
        "parse_frontmatter": "runner_core.run.identity",
        "run_id_problem": "runner_core.run.identity",
        "with_run_id": "runner_core.run.identity",
        "validate_decomposer_output": "runner_core.validation.schema",
        "validate_executor_output": "runner_core.validation.schema",
        "validate_schema": "runner_core.validation.schema",
        "Selection": "runner_core.tree.selection",
        "SelectionStatus": "runner_core.tree.selection",
        "is_stuck": "runner_core.tree.selection",
        "leftmost_open_leaf": "runner_core.tree.selection",
        "node_path": "runner_core.tree.selection",
        "select_leaf": "runner_core.tree.selection",
        "TRANSITIONS": "runner_core.iteration.state_update",
        "InvalidTransition": "runner_core.iteration.state_update",
        "StateUpdateSummary": "runner_core.iteration.state_update",
        "UnknownSelectedNode": "runner_core.iteration.state_update",
        "apply_state_updates": "runner_core.iteration.state_update",
        "validate_status_invariants": "runner_core.validation.status",
        "AgentOutputError": "runner_core.iteration.plan",
        "AgentRole": "runner_core.tree.model",
        "IterationOutcome": "runner_core.iteration.plan",
        "PlanKind": "runner_core.iteration.plan",
        "Review": "runner_core.iteration.plan",
        "RunState": "runner_core.run.state",
        "RunStateError": "runner_core.run.state",
        "StepPlan": "runner_core.iteration.plan",
        "advance_run_state": "runner_core.iteration.plan",
        "conclude": "runner_core.iteration.plan",
        "conclude_runner_error": "runner_core.iteration.plan",
        "context_files": "runner_core.iteration.plan",
        "needs_failure_log": "runner_core.iteration.plan",
        "plan_step": "runner_core.iteration.plan",
        "review_decomposition": "runner_core.iteration.plan",
        "review_execution": "runner_core.iteration.plan",
        "run_state_from_json": "runner_core.run.state",
        "run_state_to_json": "runner_core.run.state",
        "RefusedJson": "runner_core.tree.serialization",
        "TreeValidationError": "runner_core.tree.serialization",
        "decode_tree_text": "runner_core.tree.serialization",
        "dumps_tree": "runner_core.tree.serialization",
        "loads_json": "runner_core.tree.serialization",
        "parse_tree": "runner_core.tree.serialization",
        "tree_from_json": "runner_core.tree.serialization",
        "tree_to_json": "runner_core.tree.serialization",
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
