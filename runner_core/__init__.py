"""runner_core: the pure functional core of runner.

Every decision of the runner lives here as a function of its inputs: validating a task tree,
choosing the next leaf, applying runner-owned state updates, building the prompt pack and
concluding an iteration. Nothing in this package reads files, the clock, the environment or
randomness, starts a process, or mutates an argument.
"""

from runner_core.child_additions import validate_child_additions_restricted
from runner_core.config import Config, ConfigError, parse_config, render_config
from runner_core.decompose import ChildSpec, child_specs_from_output, decompose_node
from runner_core.immutability import check_passed_node_immutability
from runner_core.invariants import validate_invariants
from runner_core.model import (
    AgentStatus,
    GuardOutcome,
    Node,
    NodeNext,
    count_nodes,
    iter_preorder,
    sort_children,
)
from runner_core.prompt_pack import PromptPack, build_prompt_pack, selected_section, tree_outline
from runner_core.run_identity import (
    RunIdentityError,
    branch_for,
    generate_run_id,
    goal_run_id,
    parse_frontmatter,
    run_id_problem,
    with_run_id,
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
from runner_core.step import (
    AgentOutputError,
    AgentRole,
    IterationOutcome,
    PlanKind,
    Review,
    RunState,
    RunStateError,
    StepPlan,
    advance_run_state,
    commit_message,
    conclude,
    conclude_runner_error,
    context_files,
    needs_failure_log,
    plan_step,
    review_decomposition,
    review_execution,
    run_state_from_json,
    run_state_to_json,
)
from runner_core.tree_json import (
    TreeValidationError,
    decode_tree_text,
    dumps_tree,
    loads_json,
    parse_tree,
    tree_from_json,
    tree_to_json,
)

__all__ = [
    "TRANSITIONS",
    "AgentOutputError",
    "AgentRole",
    "AgentStatus",
    "ChildSpec",
    "Config",
    "ConfigError",
    "GuardOutcome",
    "InvalidTransition",
    "IterationOutcome",
    "Node",
    "NodeNext",
    "PlanKind",
    "PromptPack",
    "Review",
    "RunIdentityError",
    "RunState",
    "RunStateError",
    "Selection",
    "SelectionStatus",
    "StateUpdateSummary",
    "StepPlan",
    "TreeValidationError",
    "UnknownSelectedNode",
    "advance_run_state",
    "apply_state_updates",
    "branch_for",
    "build_prompt_pack",
    "check_passed_node_immutability",
    "child_specs_from_output",
    "commit_message",
    "conclude",
    "conclude_runner_error",
    "context_files",
    "count_nodes",
    "decode_tree_text",
    "decompose_node",
    "dumps_tree",
    "generate_run_id",
    "goal_run_id",
    "is_stuck",
    "iter_preorder",
    "leftmost_open_leaf",
    "loads_json",
    "needs_failure_log",
    "node_path",
    "parse_config",
    "parse_frontmatter",
    "parse_tree",
    "plan_step",
    "render_config",
    "review_decomposition",
    "review_execution",
    "run_id_problem",
    "run_state_from_json",
    "run_state_to_json",
    "select_leaf",
    "selected_section",
    "sort_children",
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
]
