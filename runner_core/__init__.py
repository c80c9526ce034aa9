"""runner_core: the pure functional core of runner, as a library.

Every decision of the runner lives here as a function of its inputs: validating a task tree,
choosing the next leaf, applying runner-owned state updates, building the prompt pack and
concluding an iteration. Nothing in this package reads files, the clock, the environment or
randomness, starts a process, or mutates an argument.

The names below are the library's surface; the rest is reachable through the subpackages
(rooms), each of which says in its docstring what it offers: `runner_core.tree`,
`.validation`, `.iteration` (the iteration machine and its effects), `.loop`, `.run`,
`.history`, `.backends`, `.views` and `.testing` (Hypothesis strategies).

Every name is loaded on first use (PEP 562), so a command imports only the modules it needs:
`runner select` never loads the execution history or the prompt pack.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

# The one list of public names: the module each comes from. `__all__`, `__getattr__` and
# `__dir__` follow from it; the imports below exist for type checkers only (`X as X` says they
# are re-exported), and a test checks that they import exactly the names of this table.
_MODULES_EXPORTS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "runner_core.tree.model": (
            "AgentRole",
            "AgentStatus",
            "GuardOutcome",
            "InvalidNodeFields",
            "Node",
            "NodeNext",
            "UnknownSelectedNode",
            "count_nodes",
        ),
        "runner_core.tree.serialization": ("TreeValidationError", "dumps_tree", "tree_to_json"),
        "runner_core.validation.loading": ("parse_tree", "tree_from_json"),
        "runner_core.tree.selection": (
            "CompleteTree",
            "OpenLeaf",
            "SelectionStatus",
            "StuckLeaf",
            "is_stuck",
            "select_leaf",
        ),
        "runner_core.tree.decompose": ("ChildSpec", "decompose_node"),
        "runner_core.validation.finding": ("Finding",),
        "runner_core.validation.review": ("ReviewedTree", "UnreadableTree", "review_tree_change"),
        "runner_core.tree.state_update": (
            "InvalidTransition",
            "StateUpdateSummary",
            "apply_state_updates",
            "state_update_summary_to_json",
        ),
        "runner_core.iteration.facts": ("IterationFacts",),
        "runner_core.iteration.machine": ("IterationMachine", "start_iteration"),
        "runner_core.run.config": ("Config", "parse_config"),
        "runner_core.run.config_errors": ("ConfigError",),
        "runner_core.history.records": (
            "DuplicateIteration",
            "ExecutionHistory",
            "HistorySummary",
            "history_summary_to_json",
            "summarize",
        ),
    }
)

if TYPE_CHECKING:
    from runner_core.history.records import DuplicateIteration as DuplicateIteration
    from runner_core.history.records import ExecutionHistory as ExecutionHistory
    from runner_core.history.records import HistorySummary as HistorySummary
    from runner_core.history.records import history_summary_to_json as history_summary_to_json
    from runner_core.history.records import summarize as summarize
    from runner_core.iteration.facts import IterationFacts as IterationFacts
    from runner_core.iteration.machine import IterationMachine as IterationMachine
    from runner_core.iteration.machine import start_iteration as start_iteration
    from runner_core.run.config import Config as Config
    from runner_core.run.config import parse_config as parse_config
    from runner_core.run.config_errors import ConfigError as ConfigError
    from runner_core.tree.decompose import ChildSpec as ChildSpec
    from runner_core.tree.decompose import decompose_node as decompose_node
    from runner_core.tree.model import AgentRole as AgentRole
    from runner_core.tree.model import AgentStatus as AgentStatus
    from runner_core.tree.model import GuardOutcome as GuardOutcome
    from runner_core.tree.model import InvalidNodeFields as InvalidNodeFields
    from runner_core.tree.model import Node as Node
    from runner_core.tree.model import NodeNext as NodeNext
    from runner_core.tree.model import UnknownSelectedNode as UnknownSelectedNode
    from runner_core.tree.model import count_nodes as count_nodes
    from runner_core.tree.selection import CompleteTree as CompleteTree
    from runner_core.tree.selection import OpenLeaf as OpenLeaf
    from runner_core.tree.selection import SelectionStatus as SelectionStatus
    from runner_core.tree.selection import StuckLeaf as StuckLeaf
    from runner_core.tree.selection import is_stuck as is_stuck
    from runner_core.tree.selection import select_leaf as select_leaf
    from runner_core.tree.serialization import TreeValidationError as TreeValidationError
    from runner_core.tree.serialization import dumps_tree as dumps_tree
    from runner_core.tree.serialization import tree_to_json as tree_to_json
    from runner_core.tree.state_update import InvalidTransition as InvalidTransition
    from runner_core.tree.state_update import StateUpdateSummary as StateUpdateSummary
    from runner_core.tree.state_update import apply_state_updates as apply_state_updates
    from runner_core.tree.state_update import (
        state_update_summary_to_json as state_update_summary_to_json,
    )
    from runner_core.validation.finding import Finding as Finding
    from runner_core.validation.loading import parse_tree as parse_tree
    from runner_core.validation.loading import tree_from_json as tree_from_json
    from runner_core.validation.review import ReviewedTree as ReviewedTree
    from runner_core.validation.review import UnreadableTree as UnreadableTree
    from runner_core.validation.review import review_tree_change as review_tree_change

_MODULE_OF: Mapping[str, str] = MappingProxyType(
    {name: module for module, names in _MODULES_EXPORTS.items() for name in names}
)

__all__ = tuple(sorted(_MODULE_OF))


# Hidden from type checkers: a module `__getattr__` would make any name, a typo too, an `Any`
# to them, where the imports above give each public name its own type and refuse the rest.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        module = _MODULE_OF.get(name)
        if module is None:
            raise AttributeError(f"module 'runner_core' has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
