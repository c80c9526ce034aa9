"""The real Codex CLI and Claude Code drive a sandboxed step against a scripted model on loopback.

The CLIs are the pinned npm packages `.ci/run` installs; RUNNER_REAL_AGENT_BIN names their bin
directory. Each is configured as its user would configure it in the HOME the runner copies
into the sandbox: codex through `~/.codex/config.toml` (a custom provider whose `base_url` is
the scripted server), Claude Code through `~/.claude/settings.json` (its `env`). The model's
first turn runs a shell command through the CLI's own tool, its second ends with the executor's
JSON; the step must import the file the command wrote, record the tokens the server reported,
and the command must have run inside bubblewrap with the run's repository out of sight. The CLI
reaches the model only through the session's egress proxy, the model's port being listed in
`[sandbox] allow_hosts`: a direct connection fails, and another loopback service (standing for
the Temporal dev server's HTTP API) is refused and logged in network.log.

Skipped without RUNNER_REAL_AGENT_BIN or bubblewrap, except under CI=true, where it fails.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner_shell.sandbox.status import probe
from tests.helpers import ROOT
from tests.helpers.e2e import Project, node
from tests.helpers.loopback_service import Service
from tests.helpers.scripted_model import (
    CACHED_TOKENS,
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    ScriptedModel,
)

AGENT_BIN = os.environ.get("RUNNER_REAL_AGENT_BIN", "")
IN_CI = os.environ.get("CI") == "true"
BWRAP = probe()
FINAL = {"status": "done", "summary": "wrote hello.txt"}
# The tool call's two requests each report the same usage; both CLIs sum them.
MODEL_TURNS = 2
REPORTED_TOKENS = {
    "input": MODEL_TURNS * INPUT_TOKENS,
    "output": MODEL_TURNS * OUTPUT_TOKENS,
    "cached": MODEL_TURNS * CACHED_TOKENS,
}

pytestmark = [
    pytest.mark.real_cli,
    pytest.mark.skipif(
        not AGENT_BIN and not IN_CI,
        reason="RUNNER_REAL_AGENT_BIN is not set (.ci/run installs the real CLIs)",
    ),
    pytest.mark.skipif(
        BWRAP.bwrap is None and not IN_CI,
        reason=f"bubblewrap is not usable here: {BWRAP.problem}",
    ),
]


@pytest.fixture
def other() -> Iterator[Service]:
    """Another service on the host's loopback, not in `allow_hosts`."""
    service = Service()
    yield service
    service.close()


def scripted_command(project: Project, model: ScriptedModel, other: Service) -> str:
    """What the model asks the agent's shell to run: the file the step must import, what
    shows where it ran (PID 1 of its namespace, what it sees of the run's repository), and
    what it reaches: the model directly, and another loopback service through the proxy."""
    model_port = model.url.rsplit(":", 1)[1]
    reach = (
        "import socket, urllib.request\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {model_port}), timeout=2)\n"
        "    print('direct: reached')\n"
        "except OSError as error:\n"
        "    print('direct:', type(error).__name__)\n"
        "try:\n"
        f"    urllib.request.urlopen('http://127.0.0.1:{other.port}/api/v1/namespaces')\n"
        "    print('other: reached')\n"
        "except OSError as error:\n"
        "    print('other:', error)\n"
    )
    return (
        "echo hi > hello.txt && "
        "{ tr '\\0' ' ' < /proc/1/cmdline; echo; "
        f"ls -A '{project.root}' | tr '\\n' ' '; echo; cat '{project.root}/README.md'; }}"
        f' > sandbox.txt 2>&1; python3 -c "{reach}" > net.txt 2>&1'
    )


def real_cli(name: str) -> str:
    if not AGENT_BIN:
        pytest.fail("CI=true but RUNNER_REAL_AGENT_BIN is not set: .ci/run installs the CLIs")
    program = Path(AGENT_BIN) / name
    assert os.access(program, os.X_OK), f"{program} is not installed"
    return str(program)


def configure(project: Project, backend: str, model: ScriptedModel) -> None:
    """A run on two leaves whose agent is `backend`'s real CLI, found on PATH, in bubblewrap,
    allowed to reach `model` and nothing else of the host's loopback."""
    real_cli(backend)
    model_port = model.url.rsplit(":", 1)[1]
    project.prepare(
        node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)]),
        # The scripted provider's own key (codex's `env_key`) is passed on only when named.
        sandbox={
            "mode": "bwrap",
            "env": ["SCRIPTED_MODEL_API_KEY"],
            "allow_hosts": [f"127.0.0.1:{model_port}"],
        },
        iteration_timeout_secs=60,
    )
    text = project.config_path.read_text(encoding="utf-8")
    agent_table = text.index("\n[agent]\n")
    project.config_path.write_text(
        text[:agent_table] + f'\n[agent]\nbackend = "{backend}"\n', encoding="utf-8"
    )
    project.commit_setup(f"use the real {backend}")
    project.env["PATH"] = f"{AGENT_BIN}{os.pathsep}{project.env['PATH']}"


def user_settings(project: Project, backend: str, model: ScriptedModel) -> None:
    """`backend`'s configuration as its user writes it, in the HOME the runner copies in:
    codex's `~/.codex/config.toml` (a custom provider whose `base_url` is the scripted server),
    Claude Code's `~/.claude/settings.json` (its `env`)."""
    home = Path(project.env["HOME"])
    if backend == "codex":
        (home / ".codex").mkdir(parents=True, exist_ok=True)
        lines = (
            'model = "scripted-model"',
            'model_provider = "scripted"',
            "check_for_update_on_startup = false",
            "[analytics]",
            "enabled = false",
            "[model_providers.scripted]",
            'name = "scripted model on loopback"',
            f'base_url = "{model.url}/v1"',
            'env_key = "SCRIPTED_MODEL_API_KEY"',
            'wire_api = "responses"',
            "",
        )
        (home / ".codex" / "config.toml").write_text("\n".join(lines), encoding="utf-8")
        project.env["SCRIPTED_MODEL_API_KEY"] = "dummy-key"
        return
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    env = {
        "ANTHROPIC_BASE_URL": model.url,
        "ANTHROPIC_API_KEY": "dummy-key",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    (home / ".claude" / "settings.json").write_text(json.dumps({"env": env}), encoding="utf-8")


def step_and_check(
    project: Project, model: ScriptedModel, program: str, other: Service
) -> dict[str, Any]:
    """One step of `program`; the facts both CLIs must leave. Returns the iteration's meta.json."""
    before = project.head()
    result = project.runner("step", timeout=90)
    assert result.returncode == 0, (result.stdout, result.stderr)
    record = project.meta(project.run_state()["next_iter"] - 1)
    log = project.iter_dir(record["iter"]) / "executor.log"
    assert (record["status"], record["error"]) == ("done", None), log.read_text(errors="replace")
    assert record["guard"] == "pass", record
    assert len(model.model_requests("")) >= MODEL_TURNS, model.requests
    changed = project.git("diff", "--name-only", before, "HEAD").split()
    assert "hello.txt" in changed and "sandbox.txt" in changed, changed
    assert project.git("show", "HEAD:hello.txt") == "hi\n"
    init_line, repo_entries, readme = project.git("show", "HEAD:sandbox.txt").splitlines()
    # PID 1 of the command's namespace is the bubblewrap that started the CLI.
    assert init_line.split()[0].endswith("bwrap") and f" -- {program} " in init_line, init_line
    # Of the run's repository only the mount points of the iteration's binds are there.
    assert set(repo_entries.split()) <= {".git", ".runner"}, repo_entries
    assert "No such file" in readme, readme
    # Only through the proxy: not directly, and not to another port of the host's loopback.
    direct, refused = project.git("show", "HEAD:net.txt").splitlines()
    assert direct == "direct: ConnectionRefusedError", direct
    assert refused == "other: HTTP Error 403: Forbidden", refused
    assert other.paths == []
    network_log = project.iter_dir(record["iter"]) / "network.log"
    lines = [json.loads(line) for line in network_log.read_text().splitlines()]
    assert {"host": "127.0.0.1", "port": other.port, "reason": "not in the allow-list"} in [
        {key: line[key] for key in ("host", "port", "reason")} for line in lines
    ], lines
    return record


def test_the_real_codex_cli_runs_a_sandboxed_step(project: Project, other: Service) -> None:
    model = ScriptedModel("", json.dumps(FINAL))
    model.command = scripted_command(project, model, other)
    configure(project, "codex", model)
    with model:
        user_settings(project, "codex", model)
        record = step_and_check(project, model, "codex exec", other)

    requests = model.model_requests("/v1/responses")
    assert len(requests) == MODEL_TURNS, model.requests
    # codex constrains the last message by the runner's output schema.
    schema = requests[-1]["body"]["text"]["format"]["schema"]
    assert schema["required"] == ["status", "summary"], schema
    assert record["tokens"] == REPORTED_TOKENS, record


def test_real_claude_code_runs_a_sandboxed_step(project: Project, other: Service) -> None:
    model = ScriptedModel("", json.dumps(FINAL))
    model.command = scripted_command(project, model, other)
    configure(project, "claude", model)
    with model:
        user_settings(project, "claude", model)
        record = step_and_check(project, model, "claude -p", other)

    turns = model.model_requests("/v1/messages")
    assert len(turns) == MODEL_TURNS, model.requests
    assert record["tokens"] == REPORTED_TOKENS, record
    result = json.loads((project.iter_dir(record["iter"]) / "claude_result.json").read_text())
    assert record["cost_usd"] == result["total_cost_usd"] > 0, (record, result)


def test_the_real_clis_are_the_pinned_versions() -> None:
    """The versions .ci/run pins are the ones the tests above ran."""
    pins = dict(
        line.split("=", 1)
        for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if line.startswith(("codex_version=", "claude_version="))
    )
    codex = subprocess.run([real_cli("codex"), "--version"], capture_output=True, text=True)
    claude = subprocess.run([real_cli("claude"), "--version"], capture_output=True, text=True)
    assert codex.stdout.split() == ["codex-cli", pins["codex_version"]], codex
    assert claude.stdout.split()[0] == pins["claude_version"], claude
