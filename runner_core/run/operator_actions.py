"""An operator commit (`runner node <op>`) as its trailers record it: its message, how it reads
back, and how history, report and status show it.

Apart from the operations themselves (runner_core.run.operations), which build and check
trees: the views show a run's operator commits without importing those rules.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from runner_core.json_form import shaped
from runner_core.run import trailers
from runner_core.run.trailers import NodeOperation


@attrs.frozen(slots=True)
class OperatorAction:
    """One operator commit, as its trailers record it."""

    run_id: str = attrs.field(metadata=shaped(skip=True))
    op: NodeOperation
    node_id: str = attrs.field(metadata=shaped(key="node"))
    actor: str = attrs.field(metadata=shaped(key="by"))
    before_iteration: int  # the run's next_iter when the operator acted


def operation_subject(action: OperatorAction) -> str:
    return f"chore(runner): node {action.op.value} {action.node_id} run {action.run_id}"


def operation_message(action: OperatorAction) -> str:
    lines = trailers.render_trailers(
        (
            (trailers.RUN, action.run_id),
            (trailers.OP, action.op.value),
            (trailers.NODE, action.node_id),
            (trailers.ACTOR, action.actor),
            (trailers.NEXT_ITER, str(action.before_iteration)),
        )
    )
    return f"{operation_subject(action)}\n\n{lines}"


def action_from_message(message: str) -> OperatorAction | None:
    """The operator action a commit message records, or None when it records none."""
    try:
        found = trailers.operator_from_trailers(trailers.parse_trailers(message))
    except trailers.DamagedTrailer:
        return None
    return OperatorAction(
        found.run_id, NodeOperation(found.op), found.node_id, found.actor, found.next_iter
    )


def action_text(action: OperatorAction) -> str:
    """How history, report and status show an operator commit."""
    return f"op={action.op.value} node={action.node_id} by={action.actor}"


def run_actions(messages: Sequence[str], run_id: str) -> tuple[OperatorAction, ...]:
    """The operator actions of `run_id` among commit messages, in the order given."""
    actions = (action_from_message(message) for message in messages)
    return tuple(action for action in actions if action is not None and action.run_id == run_id)
