"""The real Gemini CLI and Qwen Code drive a sandboxed loop against a scripted model on loopback:
a decomposition, an execution, and first a usage limit the loop waits out.

The CLIs are the pinned npm packages `.ci/run` installs beside codex and claude;
RUNNER_REAL_AGENT_BIN names their bin directory. Each is configured as its user would: its key
and endpoint in the environment (variables its BackendInfo.env lists, so the sandbox passes
them), its settings in the HOME files the runner copies into the sandbox. The model's first
request of the run answers with the wire API's usage limit; every session after that runs a
shell command through the CLI's own tool (the executor's writes a file, both print the role the
runner gave them), then ends with the role's JSON.

Skipped without RUNNER_REAL_AGENT_BIN or bubblewrap, except under CI=true, where it fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner_core.backends.registry import BACKENDS, PINNED
from runner_shell.sandbox.status import probe
from tests.helpers import ROOT
from tests.helpers.e2e import Project, lines, node
from tests.helpers.scripted_model import INPUT_TOKENS, OUTPUT_TOKENS, ScriptedModel

AGENT_BIN = os.environ.get("RUNNER_REAL_AGENT_BIN", "")
IN_CI = os.environ.get("CI") == "true"
BWRAP = probe()
LIMIT_WAIT_SECS = 3

COMMAND = (
    'if [ "$RUNNER_ROLE" = executor ]; then echo hi > "hello-$RUNNER_NODE_ID.txt"; fi; '
    "echo role=$RUNNER_ROLE"
)
DECOMPOSER_FINAL = {
    "summary": "one leaf",
    "children": [
        {
            "title": "Say hello",
            "goal": "hello-root.1.txt holds hi.",
            "acceptance": ["hello-root.1.txt exists"],
            "next": "execute",
        }
    ],
}
EXECUTOR_FINAL = {"status": "done", "summary": "wrote hello"}
FINALS = {
    "role=decomposer": json.dumps(DECOMPOSER_FINAL),
    "role=executor": json.dumps(EXECUTOR_FINAL),
}

pytestmark = [
    pytest.mark.real_cli,
    # Minutes of real CLIs: once, in the one-at-a-time loop, is the evidence.
    pytest.mark.one_slot,
    pytest.mark.skipif(
        not AGENT_BIN and not IN_CI,
        reason="RUNNER_REAL_AGENT_BIN is not set (.ci/run installs the real CLIs)",
    ),
    pytest.mark.skipif(
        BWRAP.bwrap is None and not IN_CI,
        reason=f"bubblewrap is not usable here: {BWRAP.problem}",
    ),
]


def real_cli(name: str) -> str:
    if not AGENT_BIN:
        pytest.fail("CI=true but RUNNER_REAL_AGENT_BIN is not set: .ci/run installs the CLIs")
    program = Path(AGENT_BIN) / name
    assert os.access(program, os.X_OK), f"{program} is not installed"
    return str(program)


def sandbox_table(model: ScriptedModel, env: tuple[str, ...]) -> dict[str, Any]:
    """`[sandbox]`: bubblewrap, the loopback model's host:port the one host its egress proxy
    lets through, and the test's key variables `env` passed on."""
    return {
        "mode": "bwrap",
        "allow_hosts": [model.url.removeprefix("http://")],
        "env": list(env),
    }


def configure(project: Project, backend: str, model: ScriptedModel, env: tuple[str, ...]) -> None:
    """A run on a root the decomposer splits, whose agent is `backend`'s real CLI (on PATH)."""
    real_cli(backend)
    project.prepare(
        node("root", next_="decompose"),
        sandbox=sandbox_table(model, env),
        iteration_timeout_secs=90,
        loop={"max_wait_secs": LIMIT_WAIT_SECS, "runner_error_backoff_secs": [0]},
    )
    text = project.config_path.read_text(encoding="utf-8")
    agent_table = text.index("\n[agent]\n")
    project.config_path.write_text(
        text[:agent_table] + f'\n[agent]\nbackend = "{backend}"\n', encoding="utf-8"
    )
    project.commit_setup(f"use the real {backend}")
    project.env["PATH"] = f"{AGENT_BIN}{os.pathsep}{project.env['PATH']}"
    project.env["TZ"] = "UTC"


def write_home(project: Project, files: dict[str, Any]) -> None:
    for name, content in files.items():
        path = Path(project.env["HOME"]) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content), encoding="utf-8")


def loop_and_check(
    project: Project, model: ScriptedModel, limit_error: str | None
) -> list[dict[str, Any]]:
    """`runner loop` to completion through one limit; the facts every CLI must leave. Returns the
    decomposition's and the execution's meta.json. `limit_error` None: the CLI waits the limit
    out itself (OpenCode retries a 429 after its Retry-After), so the loop never sees it."""
    began = time.monotonic()
    result = project.runner("loop", timeout=300)
    assert result.returncode == 0, (result.stdout, result.stderr)
    out = lines(result.stdout)
    run = project.run_id
    steps = 2 if limit_error is None else 3
    assert out[-1] == f"loop: status=complete run={run} steps={steps} started_at_iter=1", out
    if limit_error is not None:
        assert (
            out[0] == f"loop: step run={run} iter=1 node=root status=rate_limited guard=skipped"
        ), out
        assert out[1].startswith(f"loop: wait run={run} reason=usage_limited until="), out
        assert time.monotonic() - began >= LIMIT_WAIT_SECS
        limited = project.meta(1)
        assert limited["error"].startswith(f"usage_limited: {limit_error}"), limited
        assert limited["attempts_after"] == limited["attempts_before"] == 0
    decomposed, executed = (project.meta(iteration) for iteration in (steps - 1, steps))
    assert (decomposed["node_id"], decomposed["status"], decomposed["error"]) == (
        "root",
        "decomposed",
        None,
    ), decomposed
    assert (executed["node_id"], executed["status"], executed["error"]) == (
        "root.1",
        "done",
        None,
    ), executed
    assert project.git("show", "HEAD:hello-root.1.txt") == "hi\n"
    assert model.limited, model.requests
    # Both sessions after the limit ran the command and sent its output back.
    for role in ("decomposer", "executor"):
        assert any(f"role={role}" in json.dumps(r["body"]) for r in model.requests), role
    metas = [decomposed, executed]
    for meta in metas:
        assert meta["tokens"]["input"] >= 2 * INPUT_TOKENS, meta
        assert meta["tokens"]["output"] >= 2 * OUTPUT_TOKENS, meta
    return metas


def run_gemini(project: Project, model: ScriptedModel) -> None:
    info = BACKENDS["gemini"]
    configure(project, "gemini", model, info.env)
    project.env["GOOGLE_GEMINI_BASE_URL"] = model.url
    project.env["GEMINI_API_KEY"] = "dummy-key"
    write_home(
        project,
        {".gemini/settings.json": {"security": {"auth": {"selectedType": "gemini-api-key"}}}},
    )


def run_qwen(project: Project, model: ScriptedModel) -> None:
    info = BACKENDS["qwen"]
    configure(project, "qwen", model, info.env)
    project.env["OPENAI_BASE_URL"] = f"{model.url}/v1"
    project.env["OPENAI_API_KEY"] = "dummy-key"
    project.env["OPENAI_MODEL"] = "scripted-model"
    write_home(project, {".qwen/settings.json": {"security": {"auth": {"selectedType": "openai"}}}})


def run_opencode(project: Project, model: ScriptedModel) -> None:
    configure(project, "opencode", model, BACKENDS["opencode"].env)
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "scripted model on loopback",
        "options": {"baseURL": f"{model.url}/v1", "apiKey": "dummy-key"},
        "models": {"scripted-model": {"name": "scripted-model"}},
    }
    config = {
        "autoupdate": False,
        "share": "disabled",
        "model": "scripted/scripted-model",
        "small_model": "scripted/scripted-model",
        "provider": {"scripted": provider},
    }
    write_home(project, {".config/opencode/opencode.json": config})


def run_copilot(project: Project, model: ScriptedModel) -> None:
    """Copilot CLI with its own model provider (BYOK): no GitHub sign-in, Chat Completions."""
    configure(project, "copilot", model, BACKENDS["copilot"].env)
    project.env["COPILOT_PROVIDER_BASE_URL"] = f"{model.url}/v1"
    project.env["COPILOT_PROVIDER_API_KEY"] = "dummy-key"
    project.env["COPILOT_MODEL"] = "scripted-model"


CASES: dict[str, tuple[Callable[[Project, ScriptedModel], None], str | None]] = {
    "gemini": (run_gemini, "You have exhausted your daily quota on this model."),
    "qwen": (run_qwen, "Quota exhausted: You exceeded your current quota"),
    "opencode": (run_opencode, None),
    # A provider's 429 is no retry for Copilot CLI: its session.error names the quota.
    "copilot": (run_copilot, "429 You exceeded your current quota"),
}
# What `--version` prints first, when it is not the bare version.
VERSION_LINES = {"copilot": f"GitHub Copilot CLI {PINNED['copilot']}."}


@pytest.mark.parametrize("backend", sorted(CASES))
def test_the_real_cli_decomposes_and_executes_through_a_usage_limit(
    project: Project, backend: str
) -> None:
    setup, limit_error = CASES[backend]
    with ScriptedModel(COMMAND, "", finals=FINALS, limited_requests=1, limit_retry_secs=2) as model:
        setup(project, model)
        loop_and_check(project, model, limit_error)


def test_the_real_clis_are_the_pinned_versions() -> None:
    """The versions .ci/run installs are the registry's PINNED ones, and the ones that ran."""
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    for backend in sorted(CASES):
        assert f"{backend}_version={PINNED[backend]}" in ci_run, backend
        shown = subprocess.run([real_cli(backend), "--version"], capture_output=True, text=True)
        first = (shown.stdout.strip().splitlines() or [""])[0]
        assert first == VERSION_LINES.get(backend, PINNED[backend]), (backend, shown)
