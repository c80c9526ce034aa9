"""A run of `runs()` as the commits the runner would have made, for audit tests.

Decides nothing: the start commit holds the initial tree and the chain's seed, each iteration
commit the tree, run state and message (subject, trailers, chain) exactly as the core's final
write-set (`runner_core.iteration_machine.final_write_set`) makes them.
"""

from __future__ import annotations

import json

import attrs

from runner_core import RunState, dumps_tree, run_state_to_json
from runner_core.audit import RUN_STATE_PATH, TREE_PATH, CommitFacts
from runner_core.chain import chain_seed
from runner_core.iteration_machine import Commit, IterationEnd, final_write_set
from runner_core.recovery import Journal, JournalPhase
from runner_core.run_state import run_state_from_json
from runner_core.testing.runs import Run


def run_state_bytes(state: RunState) -> bytes:
    return (json.dumps(run_state_to_json(state), indent=2) + "\n").encode("utf-8")


def _file(commit: Commit, name: str) -> bytes:
    data = next(file.data for file in commit.files if file.name == name)
    return data.encode("utf-8") if isinstance(data, str) else data


def run_commits(run: Run) -> tuple[CommitFacts, tuple[CommitFacts, ...]]:
    """The start commit and one commit per iteration, shas `start`, `iter-1`, `iter-2`, ...;
    each iteration commit is what `final_write_set` (the step's and recover's) makes of it."""
    touched = (RUN_STATE_PATH, TREE_PATH)
    start = CommitFacts(
        "start",
        f"chore(loop): start run {run.run_id}\n",
        dumps_tree(run.initial).encode("utf-8"),
        run_state_bytes(RunState(run_id=run.run_id, chain=chain_seed(run.run_id))),
        touched,
    )
    chain = chain_seed(run.run_id)
    commits: list[CommitFacts] = []
    for prev_tree, step in zip(run.trees, run.steps, strict=False):
        record = step.record
        journal = Journal(
            run.run_id, record.iteration, record.node_id, record.role.value,
            JournalPhase.RUNNING, record.started_at, 1, "runner step",
        )  # fmt: skip
        end = IterationEnd(
            run_id=run.run_id,
            iteration=record.iteration,
            node_id=record.node_id,
            prev_tree=prev_tree,
            prev_snapshot_sha256=None,
            state=attrs.evolve(step.state, chain=chain),
            outcome=step.outcome,
            record=record,
            journal=journal,
        )
        commit = final_write_set(end)
        state = _file(commit, "run_state.json")
        chain = run_state_from_json(json.loads(state)).chain or chain
        commits.append(
            CommitFacts(
                f"iter-{record.iteration}",
                commit.message,
                _file(commit, "tree.json"),
                state,
                touched,
            )
        )
    return start, tuple(commits)
