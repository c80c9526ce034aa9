"""`runner status` read without building the tree (`plain_status_view` of the tuples
runner_core.tree.plain decodes) is the status of the parsed tree (`status_view`): for any
valid tree, any history of its nodes and of nodes it lost, and any iterations in flight, the
two give equal views, so the same `runner status` lines and `--json` document, byte for byte.
"""

from __future__ import annotations

import json

import attrs
from hypothesis import given
from hypothesis import strategies as st

from runner_core.history.records import ExecutionHistory
from runner_core.testing.trees import trees
from runner_core.tree.model import AgentStatus, GuardOutcome, Node, iter_preorder
from runner_core.tree.plain import read_plain_root
from runner_core.tree.serialization import dumps_tree
from runner_core.views.status import (
    OperatorFacts,
    RunningJob,
    StatusView,
    plain_status_view,
    render_status,
    status_to_json,
    status_view,
)
from tests.core.views.test_reports_core import RUN, STATE, journal
from tests.helpers.records import record

OUTCOMES = st.sampled_from(
    [
        (AgentStatus.DONE, GuardOutcome.PASS),
        (AgentStatus.DONE, GuardOutcome.FAIL),
        (AgentStatus.RETRY, GuardOutcome.SKIPPED),
    ]
)


@st.composite
def runs(draw: st.DrawFn) -> tuple[Node, ExecutionHistory, tuple[str, ...], bool]:
    """A tree, a history of some of its nodes and of a lost one, the nodes of the iterations
    in flight (none, one, or several jobs) and whether their runners are alive."""
    tree = draw(trees(max_nodes=30, canonical=None, derived_passes=False, attempts=None))
    ids = [node.id for node, _ in iter_preorder(tree)]
    executed = st.sampled_from([*ids, "lost.node"])
    picks = draw(st.lists(st.tuples(executed, OUTCOMES), max_size=8))
    records = [
        record(number, node_id, status, guard, run_id=RUN)
        for number, (node_id, (status, guard)) in enumerate(picks, start=1)
    ]
    running = draw(st.lists(st.sampled_from([*ids, "gone.node"]), max_size=3, unique=True))
    return tree, ExecutionHistory.of(records), tuple(running), draw(st.booleans())


def both_views(
    tree: Node, history: ExecutionHistory, running: tuple[str, ...], alive: bool
) -> tuple[StatusView, StatusView] | None:
    read = read_plain_root(dumps_tree(tree).encode("utf-8"))
    if read is None:
        return None
    state = attrs.evolve(STATE, next_iter=len(history.records) + 1)
    first = journal(running[0], iteration=state.next_iter) if running else None
    jobs = tuple(
        RunningJob(journal(node_id, iteration=state.next_iter + place), alive)
        for place, node_id in enumerate(running[1:], start=1)
    )
    operator = OperatorFacts(journal_alive=alive, jobs=jobs)
    parsed = status_view(tree, state, 100, history, first, operator)
    plain = plain_status_view(read[0], state, 100, history, first, operator)
    return parsed, plain


@given(runs())
def test_the_plain_status_is_the_parsed_status(
    run: tuple[Node, ExecutionHistory, tuple[str, ...], bool],
) -> None:
    views = both_views(*run)
    assert views is not None  # a canonical valid tree is always read plainly
    parsed, plain = views
    assert plain == parsed
    assert render_status(plain) == render_status(parsed)
    assert render_status(plain, tree=True) == render_status(parsed, tree=True)
    assert json.dumps(status_to_json(plain)) == json.dumps(status_to_json(parsed))
