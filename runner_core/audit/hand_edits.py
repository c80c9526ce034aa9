"""What a commit the runner did not make changed in the run's state.

Decides the findings `runner audit` lists for a hand edit (each state file it touched, each node
of the tree it changed) and the warnings `runner validate` prints for runner-owned fields the
committed tree holds other than the last runner commit left. Never decides which commits are
the runner's: commit_facts.py does.
"""

from __future__ import annotations

from collections.abc import Sequence

from runner_core.audit.commit_facts import (
    RUNNER_OWNED,
    TREE_PATH,
    CommitFacts,
    is_runners_commit,
    tree_of,
)
from runner_core.audit.findings import Problem, change_text, shown
from runner_core.tree.diff import tree_diff
from runner_core.tree.model import Node


def hand_edit_problems(
    prev: Node | None, after: Node | None, touched: Sequence[str]
) -> tuple[Problem, ...]:
    """A commit that is neither the runner's nor an operator's: each state change it made."""
    problems: list[Problem] = [
        ("", f"hand edit {path}") for path in sorted(touched) if path != TREE_PATH
    ]
    if TREE_PATH in touched:
        changes = () if prev is None or after is None else tree_diff(prev, after).changes
        problems.extend((change.node_id, f"hand edit {change_text(change)}") for change in changes)
        if not changes:
            problems.append(("", f"hand edit {TREE_PATH}"))
    return tuple(problems)


def owned_field_warnings(start: CommitFacts, commits: Sequence[CommitFacts]) -> tuple[str, ...]:
    """`runner validate`'s warnings: each runner-owned field the last commit's tree.json holds
    other than the last runner commit left (a hand edit `runner audit` names)."""
    chain = (start, *commits)
    last = next(commit for commit in reversed(chain) if is_runners_commit(commit))
    if last is chain[-1]:
        return ()
    before, after = tree_of(last.tree_json)[0], tree_of(chain[-1].tree_json)[0]
    if before is None or after is None:
        return ()
    return tuple(
        f"committed tree differs from the last runner commit {last.sha[:8]}: node "
        f"{change.node_id} field {field.field}: {shown(field.old)} -> {shown(field.new)} "
        "(a hand edit; 'runner audit' names it)"
        for change in tree_diff(before, after).changes
        for field in change.fields
        if field.field in RUNNER_OWNED
    )
