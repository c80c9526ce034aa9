"""`.runner/state/run_state.json`: where a run stands between two iterations.

Decides what a run state is (its fields and their rules) and how it reads and writes as JSON,
including the per-node execution counts that number each node's next execution without reading
earlier iterations. Never reads the file itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from pyrsistent import PMap, pmap

from runner_core.json_text import json_value
from runner_core.run.chain import is_chain_value
from runner_core.run.identity import run_id_problem
from runner_core.tree.model import AgentStatus, GuardOutcome
from runner_core.validation.documents import RUN_STATE_SCHEMA_FILE, document_problem


@attrs.frozen(slots=True)
class RunState:
    """`.runner/state/run_state.json`.

    `executions` counts each node's recorded iterations in this run; None when the file
    predates the count (a run started by an older runner): the step then counts them once.
    `chain` is the `Runner-Chain` value the next iteration commit links to (runner_core.run.chain);
    None in a run started before the chain, which then links to the run's seed.
    """

    run_id: str | None = None
    next_iter: int = 1
    last_status: AgentStatus | None = None
    last_summary: str = ""
    last_guard: GuardOutcome | None = None
    executions: PMap[str, int] | None = None
    chain: str | None = None

    def known_executions(self) -> PMap[str, int] | None:
        """The execution counts, also when none were written because nothing ran yet."""
        if self.executions is None and self.next_iter == 1:
            return pmap()
        return self.executions


class RunStateError(ValueError):
    """run_state.json data that is not a run state; names the field."""


def run_state_from_text(text: str | bytes) -> RunState:
    """run_state.json's `text` as a run state; a ValueError (RunStateError, or the JSON
    reader's) for text that is not one."""
    return run_state_from_json(json_value(text))


def run_state_from_json(obj: Any) -> RunState:
    """A run state from parsed JSON; `RunStateError` names the field (schemas/run_state)."""
    found = document_problem(RUN_STATE_SCHEMA_FILE, obj)
    if found is not None:
        whole = not found.field or found.unknown
        raise RunStateError(found.problem if whole else f"{found.field} {found.problem}")
    run_id = obj.get("run_id")
    # run_id names a directory and a branch: '..' or 'a/b' must never reach a path.
    if run_id is not None and (id_problem := run_id_problem(run_id)) is not None:
        raise RunStateError(f"run_id: {id_problem}")
    chain = obj.get("chain")
    if chain is not None and not is_chain_value(chain):
        raise RunStateError("chain must be 64 lowercase hex digits")
    status, guard = obj.get("last_status"), obj.get("last_guard")
    return RunState(
        run_id=run_id,
        next_iter=obj.get("next_iter", 1),
        last_status=AgentStatus(status) if status else None,
        last_summary=obj.get("last_summary", ""),
        last_guard=GuardOutcome(guard) if guard else None,
        executions=pmap(obj["executions"]) if "executions" in obj else None,
        chain=chain,
    )


def run_state_to_json(state: RunState) -> dict[str, Any]:
    data: dict[str, Any] = {
        "run_id": state.run_id,
        "next_iter": state.next_iter,
        "last_status": state.last_status.value if state.last_status else None,
        "last_summary": state.last_summary,
        "last_guard": state.last_guard.value if state.last_guard else None,
    }
    if state.executions is not None:
        data["executions"] = dict(sorted(state.executions.items()))
    if state.chain is not None:
        data["chain"] = state.chain
    return data


def with_execution(state: RunState, node_id: str, counts: Mapping[str, int]) -> RunState:
    """`state` with one more execution of `node_id` counted on top of `counts`."""
    known = pmap(counts)
    return attrs.evolve(state, executions=known.set(node_id, known.get(node_id, 0) + 1))
