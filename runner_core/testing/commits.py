"""A run of `runs()` as the commits the runner would have made, for audit tests.

Decides nothing: the start commit holds the initial tree, each iteration commit the core's
tree, run state and message (subject, trailers, chain) exactly as `runner_core.trailers` and
`runner_core.chain` render them.
"""

from __future__ import annotations

import json

from runner_core import RunState, dumps_tree, run_state_to_json
from runner_core.audit import RUN_STATE_PATH, TREE_PATH, CommitFacts
from runner_core.chain import chain_link, chain_seed
from runner_core.iteration import commit_subject
from runner_core.testing.runs import Run
from runner_core.trailers import iteration_commit_message


def run_state_bytes(state: RunState) -> bytes:
    return (json.dumps(run_state_to_json(state), indent=2) + "\n").encode("utf-8")


def run_commits(run: Run) -> tuple[CommitFacts, tuple[CommitFacts, ...]]:
    """The start commit and one commit per iteration, shas `start`, `iter-1`, `iter-2`, ..."""
    touched = (RUN_STATE_PATH, TREE_PATH)
    start = CommitFacts(
        "start",
        f"chore(loop): start run {run.run_id}\n",
        dumps_tree(run.initial).encode("utf-8"),
        run_state_bytes(RunState(run_id=run.run_id)),
        touched,
    )
    chain = chain_seed(run.run_id)
    commits: list[CommitFacts] = []
    for step in run.steps:
        record = step.record
        tree_bytes = dumps_tree(step.tree).encode("utf-8")
        chain = chain_link(chain, record, tree_bytes)
        subject = commit_subject(run.run_id, record.iteration, record.node_id, step.outcome)
        message = iteration_commit_message(subject, record, chain)
        commits.append(
            CommitFacts(
                f"iter-{record.iteration}",
                message,
                tree_bytes,
                run_state_bytes(step.state),
                touched,
            )
        )
    return start, tuple(commits)
