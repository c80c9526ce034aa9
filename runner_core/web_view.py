"""What `runner serve`'s page shows beyond the terminal views' documents.

Decides the overview's one-word run state (from a `runner status --json` document), a node's
detail (goal, acceptance, path, its executions) and the tokens and cost rolled up over each
subtree. Never reads a file, a socket or the clock: the shell hands in the tree, the history
and the status document, and serves what these functions return.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runner_core.budget import rolled_up_totals
from runner_core.history import ExecutionHistory, ExecutionRecord, tokens_to_json
from runner_core.model import Node
from runner_core.reports import canonical_preorder

# The overview's run states, in the order they are decided.
RUN_STATES = ("not-started", "running", "interrupted", "complete", "stuck", "limit", "waiting")


def run_state_word(status: Mapping[str, Any]) -> str:
    """One word for where a run stands, from its `runner status --json` document.

    An agent at work beats everything; a dead runner's iteration is `interrupted`; then the
    tree decides (`complete`, `stuck`), then the iteration limit; otherwise the run `waiting`s
    for the next `runner loop`.
    """
    if status["run"] == "not-started":
        return "not-started"
    if status["running"] is not None:
        return "running"
    if status["interrupted"] is not None:
        return "interrupted"
    selection = status["selected"]["status"]
    if selection in ("complete", "stuck"):
        return str(selection)
    if status["next_iteration"] > status["max_iterations"]:
        return "limit"
    return "waiting"


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_HOSTS = ("0.0.0.0", "::")


def is_loopback(host: str) -> bool:
    """Whether a bind address is reachable only from this machine."""
    return host in ("localhost", "::1") or host.startswith("127.")


def allowed_hosts(host: str, port: int, hostname: str) -> frozenset[str]:
    """The `Host` headers a server bound to `host:port` answers (any other: DNS rebinding).

    A loopback bind answers its loopback names; a wildcard bind also this machine's
    `hostname`; any other bind the name it was given. Lower case, always with the port.
    """
    names = {f"[{host}]" if ":" in host else host}
    if is_loopback(host) or host in WILDCARD_HOSTS:
        names.update(LOOPBACK_NAMES)
    if host in WILDCARD_HOSTS:
        names.add(hostname)
    return frozenset(f"{name.lower()}:{port}" for name in names)


def _execution_json(record: ExecutionRecord) -> dict[str, Any]:
    return {
        "iteration": record.iteration,
        "execution": record.execution,
        "role": record.role.value,
        "status": record.status.value,
        "guard": record.guard.value,
        "duration_ms": record.duration_ms,
        "tokens": tokens_to_json(record.tokens) if record.tokens is not None else None,
        "cost_usd": record.cost_usd,
        "error": record.error,
    }


def node_detail(tree: Node, history: ExecutionHistory, node_id: str) -> dict[str, Any] | None:
    """The page's node panel: goal, acceptance, path and executions; None for an unknown id."""
    for node, path, _ in canonical_preorder(tree):
        if node.id == node_id:
            return {
                "id": node.id,
                "title": node.title,
                "path": path,
                "goal": node.goal,
                "acceptance": list(node.acceptance),
                "attempts": node.attempts,
                "max_attempts": node.max_attempts,
                "executions": [_execution_json(r) for r in history.records_for(node_id)],
            }
    return None


def rollups(tree: Node, history: ExecutionHistory) -> dict[str, dict[str, Any]]:
    """Each node's tokens and cost summed over its subtree (budget.rolled_up_totals), by id."""
    return {
        node_id: {
            "tokens": tokens_to_json(total.tokens),
            "cost_usd": round(total.cost_usd or 0.0, 6),
        }
        for node_id, total in rolled_up_totals(tree, history).items()
    }


def overview_to_json(
    status: Mapping[str, Any], tree: Node, history: ExecutionHistory
) -> dict[str, Any]:
    """`GET /api/overview`: the run state word, the iteration to show (the running one, else
    the last one done) and the rolled-up figures of every node."""
    running = status["running"]
    iteration = running["iteration"] if running is not None else status["next_iteration"] - 1
    return {
        "state": run_state_word(status),
        "iteration": iteration,
        "rollups": rollups(tree, history),
    }
