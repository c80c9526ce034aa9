"""How `runner recover` ends an iteration a killed runner left behind.

Decides the end of an interrupted iteration from its journal: a runner error `interrupted`,
the last commit's tree and every attempt kept, counted as one execution of its node. Never
reads the journal or HEAD: the shell's recovery gathers them and writes what comes back.
"""

from __future__ import annotations

from collections.abc import Mapping

from runner_core.iteration.execution_record import Measured, execution_record
from runner_core.iteration.plan import advance_run_state, conclude_runner_error
from runner_core.iteration.recovery import Journal, interrupted_message
from runner_core.iteration.write_set import IterationEnd
from runner_core.run.state import RunState, with_execution
from runner_core.tree.model import Node, nodes_by_id


def interrupted_end(
    journal: Journal,
    tree: Node,
    state: RunState,
    counts: Mapping[str, int],
    measured: Measured,
    backend: str,
) -> IterationEnd:
    """How `runner recover` ends an interrupted iteration: a runner error `interrupted`, the
    last commit's tree and every attempt kept."""
    node = nodes_by_id(tree)[journal.node_id]
    outcome = conclude_runner_error(tree, interrupted_message(journal))
    record = execution_record(
        journal.run_id,
        journal.iteration,
        node,
        journal.role,
        outcome,
        counts,
        measured,
        backend,
    )
    return IterationEnd(
        run_id=journal.run_id,
        iteration=journal.iteration,
        node_id=node.id,
        prev_tree=tree,
        prev_snapshot_sha256=None,
        state=with_execution(advance_run_state(state, outcome), node.id, counts),
        outcome=outcome,
        record=record,
        journal=journal,
    )
