"""Every CLI backend keeps the same contract with the runner, whatever its CLI prints: a missing
program, garbage or huge output, a timeout, a stale or forged usage file, and the usage and
limits its CLI reports. Run against the fake CLIs of tests/helpers/fake_clis, which print what
each real CLI prints (docs/agent-cli-limits.md), and against programs that misbehave."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import attrs
import pytest

from runner_core.backends.limits import LimitKind
from runner_shell.agents._common import AgentBackend, AgentRequest
from runner_shell.agents.session import backend_for
from runner_shell.sandbox.processes import SpawnError
from tests.helpers import FAKE_CLIS
from tests.shell.agents.test_agents import PROMPT, Workspace

PYTHON = sys.executable


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """test_agents' workspace: a repo with its iteration directory, prompt and schema."""
    repo = tmp_path / "repo"
    iter_dir = repo / ".runner" / "iterations" / "run-1a2b3c4d" / "7"
    iter_dir.mkdir(parents=True)
    (repo / ".runner" / "state").mkdir()
    (repo / ".runner" / "state" / "executor_output.schema.json").write_text("{}\n")
    (iter_dir / "prompt.md").write_text(PROMPT, encoding="utf-8")
    (tmp_path / "bin").mkdir()
    return Workspace(tmp_path, repo, iter_dir, tmp_path / "bin")


@attrs.frozen
class Contract:
    """What the fake CLI of `backend` reports: on success its tokens (input, output, cached) and
    cost; the scenario that ends on a limit, the kind and the retry wait the backend reads."""

    backend: str
    tokens: tuple[int | None, int | None, int | None]
    cost_usd: float | None
    limit_scenario: str
    limit_kind: LimitKind
    retry_after_secs: int | None = None


CONTRACTS = {
    contract.backend: contract
    for contract in (
        Contract("codex", (10, 5, None), None, "usage_limit", LimitKind.USAGE_LIMITED),
        Contract("claude", (None, None, None), None, "five_hour", LimitKind.USAGE_LIMITED),
        Contract("gemini", (2400, 90, 600), None, "daily_quota", LimitKind.USAGE_LIMITED),
        Contract("qwen", (2400, 90, 600), None, "quota", LimitKind.USAGE_LIMITED, 2),
        Contract("opencode", (2400, 90, 600), 0.025, "quota", LimitKind.USAGE_LIMITED, 20),
        Contract("copilot", (2400, 90, 600), None, "quota", LimitKind.USAGE_LIMITED, 2),
    )
}
BACKENDS = sorted(CONTRACTS)


def fake(name: str) -> AgentBackend:
    return backend_for(name, (str(FAKE_CLIS / name),))


def misbehaving(ws: Workspace, name: str, body: str) -> AgentBackend:
    """The backend `name` running a program that reads its stdin, then does `body`."""
    script = ws.bin_dir / f"bad-{name}"
    script.write_text(f"#!{PYTHON}\nimport sys, time\nsys.stdin.read()\n{body}\n")
    script.chmod(0o755)
    return backend_for(name, (str(script),))


def with_scenario(ws: Workspace, scenario: str) -> AgentRequest:
    request = ws.request()
    return attrs.evolve(request, env={**request.env, "FAKE_CLI_SCENARIO": scenario, "TZ": "UTC"})


@pytest.mark.parametrize("name", BACKENDS)
def test_the_fake_cli_s_output_and_usage_are_read(ws: Workspace, name: str) -> None:
    contract = CONTRACTS[name]
    run = fake(name).run(with_scenario(ws, "ok"))
    assert run.process.exit_code == 0, (ws.iter_dir / "executor.log").read_text()
    assert run.output_problem is None
    assert json.loads(run.output_text or "")["status"] == "done"
    assert (run.input_tokens, run.output_tokens, run.cached_input_tokens) == contract.tokens
    assert run.cost_usd == (pytest.approx(contract.cost_usd) if contract.cost_usd else None)
    assert run.limit is None


@pytest.mark.parametrize("name", BACKENDS)
def test_the_fake_cli_s_limit_is_recognised(ws: Workspace, name: str) -> None:
    contract = CONTRACTS[name]
    run = fake(name).run(with_scenario(ws, contract.limit_scenario))
    assert run.process.exit_code != 0
    assert run.output_text is None and run.output_problem is not None
    assert run.limit is not None, run
    assert run.limit.kind is contract.limit_kind
    assert run.limit.message
    assert run.limit.retry_after_secs == contract.retry_after_secs


@pytest.mark.parametrize("name", BACKENDS)
def test_a_missing_cli_is_a_spawn_error(ws: Workspace, name: str) -> None:
    with pytest.raises(SpawnError, match=f"cannot start '{name}'"):
        backend_for(name, ()).run(ws.request(path=str(ws.bin_dir)))


@pytest.mark.parametrize("name", BACKENDS)
def test_garbage_output_is_a_problem_never_an_exception_or_a_limit(
    ws: Workspace, name: str
) -> None:
    body = (
        "sys.stdout.buffer.write(b'\\xff\\xfe{not json' * 100 + b'\\n[1, 2]\\n{\"type\": 3}\\n')\n"
        "sys.stderr.write('Error: 429 Too Many Requests {\"error\": [}\\n')\nsys.exit(1)"
    )
    run = misbehaving(ws, name, body).run(ws.request())
    assert run.process.exit_code == 1
    assert run.output_text is None and run.output_problem, run
    assert (run.input_tokens, run.output_tokens, run.cached_input_tokens) == (None, None, None)
    assert run.cost_usd is None


@pytest.mark.parametrize("name", BACKENDS)
def test_huge_output_is_never_read_whole(ws: Workspace, name: str) -> None:
    # 20 MiB on stdout, no newline: above every backend's read limit.
    body = "chunk = b'{' * (1024 * 1024)\nfor _ in range(20):\n    sys.stdout.buffer.write(chunk)"
    run = misbehaving(ws, name, body).run(ws.request())
    assert run.process.exit_code == 0
    assert run.output_text is None and run.output_problem, run
    assert run.process.stdout_bytes == 20 * 1024 * 1024


@pytest.mark.parametrize("name", BACKENDS)
def test_a_timeout_is_reported_as_timed_out(ws: Workspace, name: str) -> None:
    run = misbehaving(ws, name, "time.sleep(30)").run(ws.request(timeout_secs=0.3))
    assert run.process.timed_out and run.process.exit_code is None
    assert run.output_text is None and run.output_problem


@pytest.mark.parametrize("name", BACKENDS)
def test_a_usage_file_neither_survives_from_before_nor_replaces_the_cli_s_report(
    ws: Workspace, name: str
) -> None:
    ws.usage_path.write_text('{"input_tokens": 1, "output_tokens": 2, "cached_input_tokens": 3}')
    seen_stale = ws.root / "saw-stale"
    script = ws.bin_dir / f"forging-{name}"
    script.write_text(
        f"#!{PYTHON}\nimport os, sys\nfrom pathlib import Path\n"
        "usage = Path(os.environ['RUNNER_USAGE_PATH'])\n"
        f"if usage.exists(): Path({str(seen_stale)!r}).touch()\n"
        'usage.write_text(\'{"input_tokens": 999999, "output_tokens": 999999}\')\n'
        f"os.execv({str(FAKE_CLIS / name)!r}, [{str(FAKE_CLIS / name)!r}, *sys.argv[1:]])\n"
    )
    script.chmod(0o755)
    backend = backend_for(name, (str(script),))
    run = backend.run(with_scenario(ws, "ok"))
    assert not seen_stale.exists()
    assert (run.input_tokens, run.output_tokens, run.cached_input_tokens) == CONTRACTS[name].tokens


def test_every_cli_backend_has_a_contract() -> None:
    from runner_core.backends.registry import BACKENDS as REGISTERED

    assert sorted(name for name, info in REGISTERED.items() if info.program) == BACKENDS
    assert all(os.access(FAKE_CLIS / name, os.X_OK) for name in BACKENDS)
