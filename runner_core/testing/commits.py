"""A run of `runs()` as the commits the runner would have made, for audit tests.

Decides nothing: the start commit holds the initial tree and the chain's seed, each iteration
commit the tree, run state and message exactly as the core's iteration machine asked them
committed (`RunStep.commit`, its final write-set).
"""

from __future__ import annotations

import json

from runner_core import dumps_tree
from runner_core.audit.commit_facts import RUN_STATE_PATH, TREE_PATH, CommitFacts
from runner_core.run.chain import chain_seed
from runner_core.run.state import RunState, run_state_to_json
from runner_core.testing.runs import Run, state_file


def run_state_bytes(state: RunState) -> bytes:
    return (json.dumps(run_state_to_json(state), indent=2) + "\n").encode("utf-8")


def run_commits(run: Run) -> tuple[CommitFacts, tuple[CommitFacts, ...]]:
    """The start commit and one commit per iteration, shas `start`, `iter-1`, `iter-2`, ...;
    each iteration commit is the machine's own final write-set for it."""
    touched = (RUN_STATE_PATH, TREE_PATH)
    start = CommitFacts(
        "start",
        f"chore(loop): start run {run.run_id}\n",
        dumps_tree(run.initial).encode("utf-8"),
        run_state_bytes(RunState(run_id=run.run_id, chain=chain_seed(run.run_id))),
        touched,
    )
    commits = tuple(
        CommitFacts(
            f"iter-{step.record.iteration}",
            step.commit.message,
            state_file(step.commit, "tree.json"),
            state_file(step.commit, "run_state.json"),
            touched,
        )
        for step in run.steps
    )
    return start, commits
