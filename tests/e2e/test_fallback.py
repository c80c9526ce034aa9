"""`[agent] fallback`: a limit on the backend in use hands the next iteration to the next backend
of the chain instead of waiting, and the chain goes back to its first backend after the reset.

The backends are the fake `codex` and `claude` of tests/helpers/fake_clis, found on PATH as the
real ones would be: codex hits its usage limit once (FAKE_CODEX_LIMIT_ONCE), claude never does.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.helpers import FAKE_CLIS
from tests.helpers.e2e import Project, lines, node

RESET_SECS = 2
# The lines' order is the one-slot loop's; test_parallel_fallback.py has the parallel loop's.
pytestmark = pytest.mark.one_slot
LEAVES = [node(f"root.{n}", order=n) for n in range(1, 11)]
# The fake CLIs' variables, passed on by name: the environment is an allow-list also unsandboxed.
FAKE_ENV = {"env": ["FAKE_CLI_*", "FAKE_CODEX_*", "FAKE_CLAUDE_*"]}


def fallback_config(project: Project, chain: str) -> None:
    text = project.config_path.read_text(encoding="utf-8")
    start = text.index("[agent]")
    project.config_path.write_text(
        text[:start] + f'[agent]\nbackend = "codex"\nfallback = {chain}\n', encoding="utf-8"
    )
    project.commit_setup("codex, then claude")
    project.env["PATH"] = f"{FAKE_CLIS}{os.pathsep}{project.env['PATH']}"
    project.env["FAKE_CODEX_LIMIT_ONCE"] = str(project.root.parent / "codex-limited-once")
    project.env["FAKE_CLI_RESETS_IN"] = str(RESET_SECS)
    # Claude's sessions outlast the reset: the run goes back to codex before it ends.
    project.env["FAKE_CLAUDE_SESSION_SECS"] = "0.5"


def test_a_codex_limit_runs_claude_without_waiting_and_returns_to_codex_after_the_reset(
    project: Project,
) -> None:
    run = project.prepare(
        node("root", children=LEAVES),
        loop={"max_wait_secs": RESET_SECS, "runner_error_backoff_secs": [0]},
        sandbox=FAKE_ENV,
    )
    fallback_config(project, '["claude"]')

    began = time.monotonic()
    result = project.runner("loop", timeout=120)

    assert result.returncode == 0, result.stderr
    out = lines(result.stdout)
    assert not [line for line in out if line.startswith("loop: wait ")], out
    assert out[0] == f"loop: step run={run} iter=1 node=root.1 status=rate_limited guard=skipped", (
        out
    )
    assert out[1].startswith(f"loop: fallback run={run} from=codex to=claude until="), out
    assert out[-1].startswith(f"loop: status=complete run={run} steps=11 "), out
    metas = [project.meta(iteration) for iteration in range(1, 12)]
    backends = [meta["backend"] for meta in metas]
    assert backends[:2] == ["codex", "claude"], backends
    assert metas[0]["error"].startswith("usage_limited: You\u2019ve hit your usage limit.")
    assert metas[1]["node_id"] == "root.1" and metas[1]["status"] == "done"
    # Back on codex once its reset has passed, and only then.
    assert backends[-1] == "codex", (backends, time.monotonic() - began)
    first_back = backends.index("codex", 1)
    assert metas[first_back]["started_at"] >= metas[0]["ended_at"]
    assert set(backends[1:first_back]) == {"claude"}

    report = project.runner("report", "--json")
    assert report.returncode == 0, report.stderr
    by_backend = {row["backend"]: row for row in json.loads(report.stdout)["backends"]}
    assert sorted(by_backend) == ["claude", "codex"]
    assert sum(row["iterations"] for row in by_backend.values()) == 11
    assert by_backend["claude"]["success_rate"] == 1.0
    # codex's limited iteration is the one that did not succeed; it reported 10 + 5 tokens a run.
    codex = by_backend["codex"]
    assert codex["successful_executions"] == codex["iterations"] - 1
    assert codex["tokens"]["input"] == 10 * codex["successful_executions"]
    history = lines(project.runner("history").stdout)
    assert history[1].split()[:4] == ["ITER", "NODE", "ROLE", "BACKEND"], history
    assert history[2].split()[:5] == ["1", "root.1", "executor", "codex", "rate_limited"], history
    assert history[3].split()[:5] == ["2", "root.1", "executor", "claude", "done"], history
    shown = project.runner("show", "2").stdout
    assert "backend=claude" in shown, shown
    text = project.runner("report").stdout
    assert "backends:" in text and "\n  claude " in text and "\n  codex " in text


def test_a_backend_without_a_fallback_waits_for_its_limit(project: Project) -> None:
    run = project.prepare(
        node("root"), loop={"max_wait_secs": 2, "runner_error_backoff_secs": [0]}, sandbox=FAKE_ENV
    )
    fallback_config(project, "[]")

    result = project.runner("loop", timeout=60)

    assert result.returncode == 0, result.stderr
    out = lines(result.stdout)
    assert out[1].startswith(f"loop: wait run={run} reason=usage_limited until="), out
    assert out[-1].startswith(f"loop: status=complete run={run} steps=2 "), out


def test_when_every_backend_of_the_chain_is_limited_the_loop_waits_then_goes_on(
    project: Project,
) -> None:
    run = project.prepare(
        node("root", children=LEAVES[:2]),
        loop={"max_wait_secs": RESET_SECS, "runner_error_backoff_secs": [0]},
        sandbox=FAKE_ENV,
    )
    fallback_config(project, '["claude"]')
    project.env["FAKE_CLAUDE_LIMIT_ONCE"] = str(project.root.parent / "claude-limited-once")

    result = project.runner("loop", timeout=60)

    assert result.returncode == 0, result.stderr
    out = lines(result.stdout)
    assert out[1].startswith(f"loop: fallback run={run} from=codex to=claude until="), out
    assert out[2] == f"loop: step run={run} iter=2 node=root.1 status=rate_limited guard=skipped", (
        out
    )
    assert out[3].startswith(f"loop: wait run={run} reason=usage_limited until="), out
    assert out[-1].startswith(f"loop: status=complete run={run} steps=4 "), out
    backends = [project.meta(iteration)["backend"] for iteration in range(1, 5)]
    assert backends == ["codex", "claude", "codex", "codex"], backends
