"""Requests an attacker who reaches the Temporal server would send: a job's request as the loop
writes it, with the sandbox turned off and a command of its own, started by a plain client
(no codec) or sealed with a key of its own."""

from __future__ import annotations

from pathlib import Path

from runner_core import parse_config
from runner_core.iteration.facts import ClockReading, IterationFacts, PromptParts
from runner_core.iteration.plan import RunPlan, plan_step
from runner_core.run.config import render_config
from runner_core.run.state import RunState
from runner_shell.remote import wire
from runner_shell.remote.job_files import JobRequest
from tests.helpers.trees import tree

BASE = "a" * 40


def forged_request(marker: Path, *, sandbox: str = "off") -> JobRequest:
    """A request whose agent would `touch marker`, its sandbox `sandbox`, its hooks set."""
    touch = ["sh", "-c", f"touch {marker}"]
    config = parse_config(
        {
            "agent": {"backend": "command", "command": touch},
            "guard": {"command": touch},
            "sandbox": {"mode": sandbox, "writable": ["/"]},
            "hooks": {"on_iteration": touch},
        }
    )
    root = tree("root", tree("root.1"), next="decompose")
    state = RunState(run_id="run-forged", next_iter=1)
    plan = plan_step(root, state, config.max_iterations)
    assert isinstance(plan, RunPlan), plan
    facts = IterationFacts(
        run_id="run-forged",
        plan=plan,
        config=config,
        state=state,
        tree=root,
        goal="---\nid: run-forged\n---\n\n# Goal\n",
        failure_log=None,
        config_bytes=render_config(config).encode("utf-8"),
        entries=frozenset(),
        previous_snapshot_sha256=None,
        prompt=PromptParts("contract", "output", None, None, None, 100_000),
        started=ClockReading(1.0, "2026-01-01T00:00:00Z"),
        runner_pid=1,
        command="runner loop",
    )
    iteration = facts.plan.iteration
    return JobRequest("run-forged", iteration, BASE, wire.dumps(facts), 60.0, 5.0)
