"""Whether an iteration commit left what the runner could have left.

Decides, for one iteration commit against the tree before it, whether the runner-owned fields
are what the transition table gives for its recorded node, status and guard, whether an errored
iteration kept the tree, whether its Runner-Attempts trailer and run_state.json agree with it,
and whether its number follows. Never carries anything from commit to commit: audit.py does.
"""

from __future__ import annotations

from runner_core.audit.commit_facts import RUNNER_OWNED
from runner_core.audit.findings import Problem, finding_problems, shown
from runner_core.history.records import ErrorKind, ExecutionRecord
from runner_core.parallel.tree_merge import TreeConflict, merge_trees
from runner_core.run.state import RunStateError, run_state_from_json
from runner_core.tree.diff import ChangeKind, tree_diff
from runner_core.tree.model import AgentStatus, GuardOutcome, Node, iter_preorder, nodes_by_id
from runner_core.tree.serialization import loads_json_strictly
from runner_core.tree.state_update import UnknownSelectedNode, apply_state_updates
from runner_core.validation.immutability import passed_node_findings


def _owned_problems(after: Node, expected: Node) -> tuple[Problem, ...]:
    wanted = nodes_by_id(expected)
    problems: list[Problem] = []
    for node, _ in iter_preorder(after):
        model = wanted.get(node.id)
        if model is None:
            continue
        for field in RUNNER_OWNED:
            actual, allowed = getattr(node, field), getattr(model, field)
            if actual != allowed:
                problems.append(
                    (
                        node.id,
                        f"{field} is {shown(actual)} where seed 000's table gives {shown(allowed)}",
                    )
                )
    return tuple(problems)


def _attempts_problems(prev: Node, after: Node, record: ExecutionRecord) -> tuple[Problem, ...]:
    before = nodes_by_id(prev).get(record.node_id)
    now = nodes_by_id(after).get(record.node_id)
    if before is None or now is None:
        return ()
    claimed = (record.attempts_before, record.attempts_after)
    if claimed == (before.attempts, now.attempts):
        return ()
    return (
        (
            record.node_id,
            f"Runner-Attempts {claimed[0]}/{claimed[1]} where the trees give "
            f"{before.attempts}/{now.attempts}",
        ),
    )


def _kept_tree_problems(prev: Node, after: Node, kind: ErrorKind) -> tuple[Problem, ...]:
    """An iteration with an agent or runner error keeps the tree but for runner-owned fields."""
    problems: list[Problem] = []
    for change in tree_diff(prev, after).changes:
        extra = [field.field for field in change.fields if field.field not in RUNNER_OWNED]
        if change.kind is not ChangeKind.CHANGED:
            what = change.kind.value
        elif extra:
            what = f"{', '.join(extra)} changed"
        elif change.moved:
            what = "moved"
        else:
            continue
        problems.append(
            (
                change.node_id,
                f"{what} by an iteration with a {kind.value} error, which keeps the tree",
            )
        )
    return tuple(problems)


def replay_problems(prev: Node, after: Node, record: ExecutionRecord) -> tuple[Problem, ...]:
    """How the tree after an iteration differs from what the runner could have left.

    The runner's reset is replayed with `apply_state_updates`; a runner error keeps the tree
    and every attempt, replayed as the table's row that sets nothing, done/skipped.
    """
    kept = () if record.error_kind is None else _kept_tree_problems(prev, after, record.error_kind)
    status, guard = record.status, record.guard
    if record.error_kind is ErrorKind.RUNNER:
        status, guard = AgentStatus.DONE, GuardOutcome.SKIPPED
    try:
        expected, _ = apply_state_updates(prev, after, record.node_id, status, guard)
    except UnknownSelectedNode:
        return (*kept, (record.node_id, "the recorded node is not in tree.json"))
    return (
        *kept,
        *_owned_problems(after, expected),
        *_attempts_problems(prev, after, record),
        *finding_problems(passed_node_findings(prev, after)),
    )


def run_state_problems(
    data: bytes | None, run_id: str, record: ExecutionRecord, chain: str | None
) -> tuple[Problem, ...]:
    """run_state.json after an iteration against its commit: the chain the commit's
    Runner-Chain names (None when it names none, a finding of its own), then the iteration
    it follows; both are checked, so one forged file is not half read."""
    try:
        state = run_state_from_json(loads_json_strictly((data or b"").decode("utf-8")))
    except (RunStateError, ValueError) as error:
        return (("", f"run_state.json does not read: {error}"),)
    problems: list[Problem] = []
    if state.chain is not None and chain is not None and state.chain != chain:
        problems.append(("", "run_state.json chain is not the commit's Runner-Chain"))
    claimed = (state.run_id, state.next_iter, state.last_status, state.last_guard)
    wanted = (run_id, record.iteration + 1, record.status, record.guard)
    if claimed != wanted:
        problems.append(
            (
                "",
                f"run_state.json run_id={state.run_id} next_iter={state.next_iter} does not "
                f"follow iteration {record.iteration} (run_id={run_id} "
                f"next_iter={record.iteration + 1}, last status and guard as recorded)",
            )
        )
    return tuple(problems)


def numbering_problems(next_iter: int, run_id: str, record: ExecutionRecord) -> tuple[Problem, ...]:
    """Whether the iteration is this run's and the one after `next_iter - 1`."""
    problems: list[Problem] = []
    if record.run_id != run_id:
        problems.append(("", f"Runner-Run {record.run_id} is not this run"))
    if record.iteration != next_iter:
        problems.append(
            (
                "",
                f"iteration {record.iteration} where {next_iter} follows "
                "(an iteration is missing or repeated)",
            )
        )
    return tuple(problems)


def merge_replay_problems(base: Node, parent: Node, after: Node) -> tuple[Problem, ...]:
    """A parallel job's commit against the tree it started from (`base`) and the one it was
    merged onto (`parent`): merging `after` onto `parent` from `base` again must give `after`
    itself, so no change merged since the job started was dropped or overwritten."""
    replayed = merge_trees(base, parent, after)
    if isinstance(replayed, TreeConflict):
        return (("", f"the merge does not replay from its base: {replayed.line}"),)
    if replayed != after:
        lost = sorted({change.node_id for change in tree_diff(replayed, after).changes})
        return tuple((node_id, "the merge drops work merged since its base") for node_id in lost)
    return ()
