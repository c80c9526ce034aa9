"""`[agent] fallback` with `[parallel] slots = 2`: a job whose backend hits a usage limit hands
the next jobs to the next backend of the chain instead of waiting, as the one-slot loop does,
and the chain goes back to its first backend after the reset.

The backends are the fake `codex` and `claude` of tests/helpers/fake_clis, found on PATH as the
real ones would be: codex hits its usage limit once (FAKE_CODEX_LIMIT_ONCE), claude never does.
"""

from __future__ import annotations

import json
import os
from datetime import datetime

import jsonschema

from tests.helpers import FAKE_CLIS, SCHEMAS
from tests.helpers.e2e import Project, lines, node

SCHEMA = json.loads((SCHEMAS / "events.schema.json").read_text(encoding="utf-8"))
RESET_SECS = 2
LEAVES = [node(f"root.{n}", order=n) for n in range(1, 13)]
FAKE_ENV = {"env": ["FAKE_CLI_*", "FAKE_CODEX_*", "FAKE_CLAUDE_*"]}


def two_slots_codex_then_claude(project: Project) -> str:
    run = project.prepare(
        node("root", children=LEAVES),
        loop={"max_wait_secs": RESET_SECS, "runner_error_backoff_secs": [0]},
        sandbox=FAKE_ENV,
        parallel={"slots": 2},
    )
    text = project.config_path.read_text(encoding="utf-8")
    start = text.index("[agent]")
    project.config_path.write_text(
        text[:start] + '[agent]\nbackend = "codex"\nfallback = ["claude"]\n', encoding="utf-8"
    )
    project.commit_setup("codex, then claude, two at a time")
    project.env["PATH"] = f"{FAKE_CLIS}{os.pathsep}{project.env['PATH']}"
    project.env["FAKE_CODEX_LIMIT_ONCE"] = str(project.root.parent / "codex-limited-once")
    project.env["FAKE_CLI_RESETS_IN"] = str(RESET_SECS)
    # Claude's sessions outlast the reset: the run goes back to codex before it ends.
    project.env["FAKE_CLAUDE_SESSION_SECS"] = "0.8"
    return run


def test_a_slots_usage_limit_runs_the_next_jobs_on_claude_and_codex_after_the_reset(
    project: Project,
) -> None:
    run = two_slots_codex_then_claude(project)

    result = project.runner("loop", timeout=180)

    assert result.returncode == 0, result.stderr
    out = lines(result.stdout)
    assert not [line for line in out if line.startswith("loop: wait ")], out
    switches = [line for line in out if line.startswith("loop: fallback ")]
    assert len(switches) == 1, out
    assert switches[0].startswith(f"loop: fallback run={run} from=codex to=claude until="), out
    assert out[-1].startswith(f"loop: status=complete run={run} steps="), out
    count = project.run_state()["next_iter"] - 1
    metas = [project.meta(iteration) for iteration in range(1, count + 1)]
    limited = [meta for meta in metas if (meta["error"] or "").startswith("usage_limited:")]
    assert [meta["backend"] for meta in limited] == ["codex"], metas
    assert limited[0]["error"].startswith("usage_limited: You\u2019ve hit your usage limit.")
    assert limited[0]["status"] == "retry", limited
    # Jobs that started once the limit was known ran on claude, until the reset had passed.
    after = [meta for meta in metas if meta["started_at"] >= limited[0]["ended_at"]]
    backends = [meta["backend"] for meta in after]
    assert backends[0] == "claude", backends
    assert backends[-1] == "codex", backends
    first_back = backends.index("codex")
    assert set(backends[:first_back]) == {"claude"}, backends
    until = datetime.fromisoformat(switches[0].rpartition("until=")[2])
    assert datetime.fromisoformat(after[first_back]["started_at"]) >= until, after
    done = {meta["node_id"] for meta in metas if meta["status"] == "done"}
    assert done == {leaf["id"] for leaf in LEAVES}

    # The switch is in the run's event stream, where `runner follow` and `runner serve` see it.
    log = project.runner_dir / "iterations" / run / "events.jsonl"
    recorded = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    switched = [event for event in recorded if event["type"] == "fallback"]
    assert [(e["iter"], e["backend"], e["to"]) for e in switched] == [
        (limited[0]["iter"], "codex", "claude")
    ], switched
    assert not [event for event in recorded if event["type"] == "waiting"], recorded
    for event in switched:
        jsonschema.validate(event, SCHEMA)

    report = json.loads(project.runner("report", "--json").stdout)
    by_backend = {row["backend"]: row for row in report["backends"]}
    assert sorted(by_backend) == ["claude", "codex"]
    assert by_backend["claude"]["success_rate"] == 1.0
