"""Specification of runner_shell.agents' backends, with real fake agents (never codex or claude)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
import pytest

from runner_core.backends.claude import last_json_object
from runner_core.backends.limits import LimitKind, LimitSignal
from runner_core.tree.model import AgentRole
from runner_shell.agents._common import OUTPUT_LIMIT_BYTES, AgentRequest, AgentRun
from runner_shell.agents.claude import ClaudeBackend
from runner_shell.agents.codex import CodexBackend
from runner_shell.agents.command import CommandBackend
from runner_shell.agents.session import backend_for
from runner_shell.sandbox.processes import SpawnError
from tests.helpers.processes import succeeded

PYTHON = sys.executable
PROMPT = "# Contract\nDo the selected node's work.\n"
EXECUTOR_OUTPUT = {"status": "done", "summary": "added the parser"}

CODEX_EVENTS = [
    {"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"},
    {"type": "turn.started"},
    {
        "type": "item.completed",
        "item": {"id": "item_0", "type": "reasoning", "text": "**Reading the tree**"},
    },
    {
        "type": "item.completed",
        "item": {
            "id": "item_1",
            "type": "command_execution",
            "command": "bash -lc 'just ci'",
            "aggregated_output": "ok\n",
            "exit_code": 0,
            "status": "completed",
        },
    },
    {
        "type": "turn.completed",
        "usage": {"input_tokens": 1000, "cached_input_tokens": 600, "output_tokens": 50},
    },
    {"type": "turn.started"},
    {
        "type": "item.completed",
        "item": {"id": "item_2", "type": "agent_message", "text": json.dumps(EXECUTOR_OUTPUT)},
    },
    {
        "type": "turn.completed",
        "usage": {"input_tokens": 234, "cached_input_tokens": 100, "output_tokens": 7},
    },
]

CLAUDE_RESULT_TEXT = (
    "I added the parser and ran the tests; they pass. Here is my report:\n\n"
    "```json\n"
    '{"status": "done", "summary": "added the parser; braces } { and \\"quotes\\" survive"}\n'
    "```\n\n"
    "Let me know if you need anything else (e.g. a {follow-up})."
)
CLAUDE_RESULT = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "duration_ms": 12345,
    "duration_api_ms": 11000,
    "num_turns": 6,
    "result": CLAUDE_RESULT_TEXT,
    "session_id": "6b0b2d0e-5c2f-4a41-9d5e-1f0e6f6a9d11",
    "total_cost_usd": 0.4321,
    "usage": {
        "input_tokens": 21,
        "cache_creation_input_tokens": 3000,
        "cache_read_input_tokens": 45000,
        "output_tokens": 1200,
    },
}


@attrs.frozen
class Workspace:
    root: Path
    repo: Path
    iter_dir: Path
    bin_dir: Path

    @property
    def output_path(self) -> Path:
        return self.iter_dir / "agent_output.json"

    @property
    def usage_path(self) -> Path:
        return self.iter_dir / "usage.json"

    @property
    def schema_path(self) -> Path:
        return self.repo / ".runner" / "state" / "executor_output.schema.json"

    def request(
        self,
        *,
        role: AgentRole = AgentRole.EXECUTOR,
        timeout_secs: float = 10.0,
        path: str | None = None,
        on_start: Callable[[int], None] | None = None,
    ) -> AgentRequest:
        env = {
            # The fakes come first, as a real agent CLI would be found there.
            "PATH": path if path is not None else f"{self.bin_dir}{os.pathsep}{os.environ['PATH']}",
            "RUNNER_ROLE": role.value,
            "RUNNER_OUTPUT_PATH": str(self.output_path),
            "RUNNER_OUTPUT_SCHEMA": str(self.schema_path),
            "RUNNER_USAGE_PATH": str(self.usage_path),
            "RUNNER_RUN_ID": "run-1a2b3c4d",
            "RUNNER_ITER": "7",
            "RUNNER_NODE_ID": "root.2",
            "RUNNER_ITER_DIR": str(self.iter_dir),
        }
        log_name = "executor.log" if role is AgentRole.EXECUTOR else "planner_executor.log"
        return AgentRequest(
            role=role,
            repo_root=self.repo,
            iter_dir=self.iter_dir,
            prompt_path=self.iter_dir / "prompt.md",
            output_path=self.output_path,
            schema_path=self.schema_path,
            usage_path=self.usage_path,
            log_path=self.iter_dir / log_name,
            env=env,
            timeout_secs=timeout_secs,
            limit_bytes=100_000,
            on_start=on_start,
        )

    def script(self, name: str, body: str) -> Path:
        """A Python agent program; `body` runs after it checked its stdin, cwd and environment."""
        path = self.bin_dir / name
        path.write_text(f"#!{PYTHON}\n{AGENT_PRELUDE}\n{textwrap.dedent(body)}", encoding="utf-8")
        path.chmod(0o755)
        return path

    def fake_cli(self, name: str, expected_args: Sequence[str], body: str) -> Path:
        """An executable `name` that exits 2 unless called with exactly `expected_args`."""
        check = f"""
            EXPECTED = {json.dumps(list(expected_args))}
            if sys.argv[1:] != EXPECTED:
                sys.exit(f"fake {name}: got arguments {{sys.argv[1:]!r}}, want {{EXPECTED!r}}")
        """
        return self.script(name, textwrap.dedent(check) + textwrap.dedent(body))


# Every fake agent checks what the runner promises any agent: stdin, cwd and RUNNER_* variables.
AGENT_PRELUDE = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path

    def fail(message):
        sys.exit(f"fake agent: {message}")

    if sys.stdin.read() != "# Contract\\nDo the selected node's work.\\n":
        fail("the prompt did not arrive on stdin")
    if Path.cwd() != Path(os.environ["RUNNER_ITER_DIR"]).parents[3]:
        fail(f"not started in the repo root but in {Path.cwd()}")
    for name in ("RUNNER_ROLE", "RUNNER_OUTPUT_PATH", "RUNNER_OUTPUT_SCHEMA", "RUNNER_USAGE_PATH",
                 "RUNNER_RUN_ID", "RUNNER_ITER", "RUNNER_NODE_ID", "RUNNER_ITER_DIR"):
        if not os.environ.get(name):
            fail(f"{name} is not set")
    OUTPUT = Path(os.environ["RUNNER_OUTPUT_PATH"])
    USAGE = Path(os.environ["RUNNER_USAGE_PATH"])
    """
)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    repo = tmp_path / "repo"
    iter_dir = repo / ".runner" / "iterations" / "run-1a2b3c4d" / "7"
    iter_dir.mkdir(parents=True)
    (repo / ".runner" / "state").mkdir()
    (repo / ".runner" / "state" / "executor_output.schema.json").write_text("{}\n")
    (iter_dir / "prompt.md").write_text(PROMPT, encoding="utf-8")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    return Workspace(tmp_path, repo, iter_dir, bin_dir)


def run_command_agent(
    ws: Workspace,
    body: str,
    *,
    timeout_secs: float = 10.0,
    on_start: Callable[[int], None] | None = None,
) -> AgentRun:
    script = ws.script("agent.py", body)
    request = ws.request(timeout_secs=timeout_secs, on_start=on_start)
    return CommandBackend((PYTHON, str(script))).run(request)


def assert_no_tokens(run: AgentRun) -> None:
    assert (run.input_tokens, run.output_tokens, run.cached_input_tokens, run.cost_usd) == (
        None,
        None,
        None,
        None,
    )


# ---------------------------------------------------------------- backend_for


@pytest.mark.parametrize(
    ("name", "backend_type"),
    [("command", CommandBackend), ("codex", CodexBackend), ("claude", ClaudeBackend)],
)
def test_backend_for_returns_the_backend_of_that_name_with_the_command(
    name: str, backend_type: type
) -> None:
    backend = backend_for(name, ("agent", "--flag"))
    assert isinstance(backend, backend_type)
    assert backend.name == name
    assert backend == backend_type(("agent", "--flag"))


def test_backend_for_rejects_an_unknown_backend_naming_the_known_ones() -> None:
    with pytest.raises(
        ValueError,
        match=r"unknown agent backend 'no-such-cli' "
        r"\(one of claude, codex, command, copilot, gemini, opencode, qwen\)",
    ):
        backend_for("no-such-cli", ())


# ---------------------------------------------------------------- command backend


def test_command_backend_runs_the_command_and_reads_the_output_it_wrote(ws: Workspace) -> None:
    run = run_command_agent(ws, f"OUTPUT.write_text({json.dumps(json.dumps(EXECUTOR_OUTPUT))})")
    assert run.process.exit_code == 0, (ws.iter_dir / "executor.log").read_text()
    assert run.process.argv[0] == PYTHON
    assert json.loads(run.output_text or "") == EXECUTOR_OUTPUT
    assert run.output_problem is None


def test_command_backend_takes_tokens_from_the_usage_file(ws: Workspace) -> None:
    run = run_command_agent(
        ws,
        """
        OUTPUT.write_text("{}")
        USAGE.write_text('{"input_tokens": 120, "output_tokens": 30, "cached_input_tokens": 80}')
        """,
    )
    assert (run.input_tokens, run.output_tokens, run.cached_input_tokens) == (120, 30, 80)
    assert run.cost_usd is None


def test_command_backend_without_a_usage_file_reports_no_tokens(ws: Workspace) -> None:
    run = run_command_agent(ws, 'OUTPUT.write_text("{}")')
    assert run.output_text == "{}"
    assert_no_tokens(run)


@pytest.mark.parametrize(
    ("usage_text", "expected"),
    [
        ("not json at all", (None, None, None)),
        ("", (None, None, None)),
        ("[120, 30, 80]", (None, None, None)),
        ('{"input_tokens": 120', (None, None, None)),
        ('{"input_tokens": "120", "output_tokens": 30}', (None, 30, None)),
        ('{"input_tokens": -1, "output_tokens": true, "cached_input_tokens": 1.5}', (None,) * 3),
        ("[" * 50_000, (None, None, None)),
    ],
)
def test_malformed_usage_file_is_ignored_field_by_field(
    ws: Workspace, usage_text: str, expected: tuple[int | None, ...]
) -> None:
    run = run_command_agent(
        ws, f'OUTPUT.write_text("{{}}")\nUSAGE.write_text({json.dumps(usage_text)})'
    )
    assert run.output_text == "{}"
    assert (run.input_tokens, run.output_tokens, run.cached_input_tokens) == expected


def test_missing_output_is_reported_not_read(ws: Workspace) -> None:
    run = run_command_agent(ws, "pass")
    assert run.process.exit_code == 0
    assert run.output_text is None
    assert run.output_problem == f"output file {ws.output_path} does not exist"


@pytest.mark.parametrize("content", ["", "  \n\t\n"])
def test_empty_output_is_reported_not_read(ws: Workspace, content: str) -> None:
    run = run_command_agent(ws, f"OUTPUT.write_text({content!r})")
    assert run.output_text is None
    assert run.output_problem == f"output file {ws.output_path} is empty"


def test_output_larger_than_16_mib_is_reported_and_never_read(ws: Workspace) -> None:
    # A sparse 20 MiB file: instant to make, and reading it would be the bug under test.
    run = run_command_agent(ws, "with OUTPUT.open('wb') as f: f.truncate(20 * 1024 * 1024)")
    assert run.output_text is None
    assert run.output_problem == (
        f"output file {ws.output_path} is too large (20971520 bytes, limit {OUTPUT_LIMIT_BYTES})"
    )


def test_output_of_exactly_16_mib_is_read(ws: Workspace) -> None:
    run = run_command_agent(ws, f"OUTPUT.write_bytes(b' ' * ({OUTPUT_LIMIT_BYTES} - 2) + b'{{}}')")
    assert run.output_problem is None
    assert run.output_text is not None and len(run.output_text) == OUTPUT_LIMIT_BYTES


def test_output_that_is_not_utf8_is_reported_not_read(ws: Workspace) -> None:
    run = run_command_agent(ws, r"OUTPUT.write_bytes(b'{\"summary\": \"caf\xe9\"}')")
    assert run.output_text is None
    assert run.output_problem == (
        f"output file {ws.output_path} is not UTF-8 (invalid byte at offset 16)"
    )


def test_output_that_is_a_directory_is_reported_not_read(ws: Workspace) -> None:
    run = run_command_agent(ws, "OUTPUT.mkdir()")
    assert run.output_problem == f"output file {ws.output_path} is not a regular file"


def test_stale_output_and_usage_are_removed_before_the_agent_starts(ws: Workspace) -> None:
    ws.output_path.write_text(json.dumps(EXECUTOR_OUTPUT))
    ws.usage_path.write_text('{"input_tokens": 1, "output_tokens": 2, "cached_input_tokens": 3}')
    run = run_command_agent(
        ws,
        """
        if OUTPUT.exists() or USAGE.exists():
            fail("a stale file from an earlier run is still there")
        """,
    )
    assert run.process.exit_code == 0, (ws.iter_dir / "executor.log").read_text()
    assert run.output_text is None
    assert_no_tokens(run)


def test_nonzero_exit_is_reported_with_the_output_still_read(ws: Workspace) -> None:
    run = run_command_agent(ws, 'OUTPUT.write_text("{}")\nsys.exit(5)')
    assert run.process.exit_code == 5
    assert not succeeded(run.process)
    assert run.output_text == "{}"


def test_agent_stdout_and_stderr_go_to_the_capped_log(ws: Workspace) -> None:
    run_command_agent(ws, 'print("working")\nprint("careful", file=sys.stderr)')
    log = (ws.iter_dir / "executor.log").read_text()
    assert log == "=== stdout ===\nworking\n=== stderr ===\ncareful\n"


def test_timeout_is_reported_as_timed_out(ws: Workspace) -> None:
    started = time.monotonic()
    run = run_command_agent(ws, "time.sleep(30)", timeout_secs=0.3)
    assert run.process.timed_out
    assert run.process.exit_code is None
    assert run.output_problem == f"output file {ws.output_path} does not exist"
    assert time.monotonic() - started < 5


def test_on_start_receives_the_agent_pid(ws: Workspace) -> None:
    pids: list[int] = []
    run = run_command_agent(ws, "OUTPUT.write_text(str(os.getpid()))", on_start=pids.append)
    assert [str(pid) for pid in pids] == [run.output_text]


def test_missing_agent_binary_raises_spawn_error(ws: Workspace) -> None:
    backend = CommandBackend((str(ws.root / "no-such-agent"),))
    with pytest.raises(SpawnError, match="no-such-agent"):
        backend.run(ws.request())


@pytest.mark.parametrize("backend", [CodexBackend(()), ClaudeBackend(())])
def test_agent_cli_missing_from_path_raises_spawn_error(
    ws: Workspace, backend: CodexBackend | ClaudeBackend
) -> None:
    with pytest.raises(SpawnError, match=f"cannot start '{backend.name}'"):
        backend.run(ws.request(path=str(ws.bin_dir)))


# ---------------------------------------------------------------- codex backend


def codex_args(ws: Workspace) -> list[str]:
    return [
        "exec",
        "--sandbox",
        "danger-full-access",
        "--skip-git-repo-check",
        "--json",
        "--output-schema",
        str(ws.schema_path),
        "--output-last-message",
        str(ws.output_path),
        "-",
    ]


def fake_codex(ws: Workspace, events: list[object] | None = None, final: object = None) -> Path:
    """Prints JSONL events like `codex exec --json` and writes the last message file."""
    events = CODEX_EVENTS if events is None else events
    final = EXECUTOR_OUTPUT if final is None else final
    return ws.fake_cli(
        "codex",
        codex_args(ws),
        f"""
        for event in json.loads({json.dumps(json.dumps(events))}):
            print(json.dumps(event), flush=True)
        print("Reading prompt from stdin...", file=sys.stderr)
        last_message = Path(sys.argv[sys.argv.index("--output-last-message") + 1])
        last_message.write_text({json.dumps(json.dumps(final))})
        """,
    )


def test_codex_backend_runs_codex_exec_and_reads_the_last_message(ws: Workspace) -> None:
    fake_codex(ws)
    run = CodexBackend(()).run(ws.request())
    assert run.process.exit_code == 0, (ws.iter_dir / "executor.log").read_text()
    assert run.process.argv == ("codex", *codex_args(ws))
    assert json.loads(run.output_text or "") == EXECUTOR_OUTPUT


def test_codex_backend_keeps_the_raw_event_stream_in_the_iteration_dir(ws: Workspace) -> None:
    fake_codex(ws)
    CodexBackend(()).run(ws.request())
    stream = (ws.iter_dir / "stream.jsonl").read_text()
    assert [json.loads(line) for line in stream.splitlines()] == CODEX_EVENTS
    assert "Reading prompt" in (ws.iter_dir / "executor.log").read_text()


def test_codex_decomposer_stream_is_kept_as_planner_stream(ws: Workspace) -> None:
    fake_codex(ws, final={"summary": "split", "children": []})
    CodexBackend(()).run(ws.request(role=AgentRole.DECOMPOSER))
    assert (ws.iter_dir / "planner_stream.jsonl").exists()
    assert not (ws.iter_dir / "stream.jsonl").exists()
    assert (ws.iter_dir / "planner_executor.log").exists()


def test_codex_tokens_are_summed_over_turn_completed_events(ws: Workspace) -> None:
    fake_codex(ws)
    run = CodexBackend(()).run(ws.request())
    assert (run.input_tokens, run.output_tokens, run.cached_input_tokens) == (1234, 57, 700)
    assert run.cost_usd is None


def test_codex_stream_lines_that_are_not_usage_events_are_skipped(ws: Workspace) -> None:
    events: list[object] = [
        "not an event",
        [1, 2],
        {"type": "turn.completed", "usage": "lots"},
        {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": "x"}},
        {"type": "turn.failed", "error": {"message": "stream disconnected"}},
        {"type": "item.completed", "usage": {"input_tokens": 1000}},
    ]
    fake_codex(ws, events)
    script = ws.bin_dir / "codex"
    # Plain text and an overlong line interleaved with the events, as a noisy CLI might print.
    script.write_text(
        script.read_text()
        + "\nprint('plain text notice')\nprint('{' + 'x' * 2_000_000)\n"
        + 'print(json.dumps({"type": "turn.completed", "usage": {"input_tokens": 2}}))\n'
    )
    run = CodexBackend(()).run(ws.request())
    assert (run.input_tokens, run.output_tokens, run.cached_input_tokens) == (7, None, None)


def test_codex_stream_without_turn_completed_reports_no_tokens(ws: Workspace) -> None:
    fake_codex(ws, CODEX_EVENTS[:4])
    run = CodexBackend(()).run(ws.request())
    assert run.output_text is not None
    assert_no_tokens(run)


def test_codex_error_event_is_added_to_the_output_problem(ws: Workspace) -> None:
    events: list[object] = [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        {"type": "error", "message": "Reconnecting... 1/5"},
        {"type": "turn.failed", "error": {"message": "unexpected status 401 Unauthorized"}},
    ]
    ws.fake_cli(
        "codex",
        codex_args(ws),
        f"""
        for event in json.loads({json.dumps(json.dumps(events))}):
            print(json.dumps(event))
        sys.exit(1)
        """,
    )
    run = CodexBackend(()).run(ws.request())
    assert run.process.exit_code == 1
    assert run.output_problem == (
        f"output file {ws.output_path} does not exist; "
        "codex reported: unexpected status 401 Unauthorized"
    )


def test_codex_command_from_config_replaces_the_codex_program(ws: Workspace) -> None:
    script = fake_codex(ws)
    run = CodexBackend((PYTHON, str(script))).run(ws.request(path=str(ws.root / "empty")))
    assert run.process.argv == (PYTHON, str(script), *codex_args(ws))
    assert json.loads(run.output_text or "") == EXECUTOR_OUTPUT


def test_a_codex_limit_after_a_long_stream_is_recognised(ws: Workspace) -> None:
    # 17 MiB of events first: more than any whole-file read of the stream would take.
    message = "You\u2019ve hit your usage limit. Try again later."
    ws.fake_cli(
        "codex",
        codex_args(ws),
        f"""
        event = json.dumps({{"type": "item.completed", "item": {{"text": "x" * 65536}}}})
        for _ in range(17 * 16):
            print(event)
        print(json.dumps({{"type": "error", "message": {message!r}}}))
        print(json.dumps({{"type": "turn.failed", "error": {{"message": {message!r}}}}}))
        sys.exit(1)
        """,
    )
    run = CodexBackend(()).run(ws.request())
    assert (ws.iter_dir / "stream.jsonl").stat().st_size > OUTPUT_LIMIT_BYTES
    assert run.limit == LimitSignal(LimitKind.USAGE_LIMITED, message)


# ---------------------------------------------------------------- claude backend

CLAUDE_ARGS = ["-p", "--output-format", "json", "--permission-mode", "bypassPermissions"]


def fake_claude(ws: Workspace, result: object = CLAUDE_RESULT, body: str = "") -> Path:
    """Prints one result object like `claude -p --output-format json`."""
    return ws.fake_cli(
        "claude", CLAUDE_ARGS, f"{textwrap.dedent(body)}\nprint({json.dumps(json.dumps(result))})"
    )


def test_claude_backend_writes_the_json_object_of_its_result_text_to_the_output(
    ws: Workspace,
) -> None:
    fake_claude(ws)
    run = ClaudeBackend(()).run(ws.request())
    assert run.process.exit_code == 0, (ws.iter_dir / "executor.log").read_text()
    assert run.process.argv == ("claude", *CLAUDE_ARGS)
    expected = {"status": "done", "summary": 'added the parser; braces } { and "quotes" survive'}
    assert json.loads(ws.output_path.read_text()) == expected
    assert run.output_text == ws.output_path.read_text()
    assert run.output_problem is None


def test_claude_output_file_is_written_atomically(ws: Workspace) -> None:
    fake_claude(ws)
    ClaudeBackend(()).run(ws.request())
    assert sorted(p.name for p in ws.iter_dir.iterdir() if p.name.startswith(".")) == []


def test_claude_tokens_and_cost_come_from_the_result(ws: Workspace) -> None:
    fake_claude(ws)
    run = ClaudeBackend(()).run(ws.request())
    assert (run.input_tokens, run.output_tokens, run.cached_input_tokens) == (21, 1200, 45000)
    assert run.cost_usd == pytest.approx(0.4321)


def test_claude_raw_result_is_kept_in_the_iteration_dir(ws: Workspace) -> None:
    fake_claude(ws)
    ClaudeBackend(()).run(ws.request())
    assert json.loads((ws.iter_dir / "claude_result.json").read_text()) == CLAUDE_RESULT


def test_claude_decomposer_result_is_kept_as_planner_claude_result(ws: Workspace) -> None:
    fake_claude(ws)
    ClaudeBackend(()).run(ws.request(role=AgentRole.DECOMPOSER))
    assert (ws.iter_dir / "planner_claude_result.json").exists()
    assert not (ws.iter_dir / "claude_result.json").exists()


def test_claude_is_error_leaves_no_output_and_reports_the_error(ws: Workspace) -> None:
    result = {**CLAUDE_RESULT, "subtype": "success", "is_error": True, "result": "API Error: 529"}
    # Even a file the session wrote itself is dropped: the session failed.
    fake_claude(ws, result, body="OUTPUT.write_text('{}')")
    run = ClaudeBackend(()).run(ws.request())
    assert not ws.output_path.exists()
    assert run.output_text is None
    assert run.output_problem == "claude reported an error (subtype 'success'): API Error: 529"
    assert run.cost_usd == pytest.approx(0.4321)


def test_claude_error_subtype_without_result_text_is_an_error(ws: Workspace) -> None:
    result = {k: v for k, v in CLAUDE_RESULT.items() if k != "result"}
    fake_claude(ws, {**result, "subtype": "error_max_turns"})
    run = ClaudeBackend(()).run(ws.request())
    assert run.output_problem == "claude reported an error (subtype 'error_max_turns')"


def test_claude_result_text_without_a_json_object_leaves_no_output(ws: Workspace) -> None:
    fake_claude(ws, {**CLAUDE_RESULT, "result": "All done! (see {the diff})"})
    run = ClaudeBackend(()).run(ws.request())
    assert not ws.output_path.exists()
    assert run.output_problem == (
        "claude's result text holds no JSON object and the agent wrote no output file"
    )


def test_claude_output_file_written_by_the_agent_itself_is_kept(ws: Workspace) -> None:
    # The prompt asks every agent to write RUNNER_OUTPUT_PATH; claude may do just that.
    fake_claude(
        ws,
        {**CLAUDE_RESULT, "result": 'Wrote the output file. Example: {"status": "retry"}'},
        body='OUTPUT.write_text(\'{"status": "done", "summary": "by the agent"}\')',
    )
    run = ClaudeBackend(()).run(ws.request())
    assert json.loads(run.output_text or "") == {"status": "done", "summary": "by the agent"}


def test_claude_stdout_that_is_not_a_json_object_is_reported(ws: Workspace) -> None:
    ws.fake_cli("claude", CLAUDE_ARGS, 'print("Error: Invalid API key")\nsys.exit(1)')
    run = ClaudeBackend(()).run(ws.request())
    assert run.process.exit_code == 1
    assert run.output_problem == (
        f"claude printed no result object on stdout (see {ws.iter_dir / 'claude_result.json'})"
    )
    assert_no_tokens(run)


def test_claude_result_after_a_stray_stdout_line_is_still_found(ws: Workspace) -> None:
    fake_claude(ws, body='print("warning: config is deprecated")')
    run = ClaudeBackend(()).run(ws.request())
    assert run.output_problem is None
    assert run.input_tokens == 21


def test_a_claude_limit_after_a_stray_stdout_line_is_recognised(ws: Workspace) -> None:
    text = "You've hit your 5-hour limit"
    result = {**CLAUDE_RESULT, "is_error": True, "api_error": "usage_limit_reached", "result": text}
    ws.fake_cli(
        "claude",
        CLAUDE_ARGS,
        f"""
        print("warning: config is deprecated")
        print({json.dumps(json.dumps(result))})
        sys.exit(1)
        """,
    )
    run = ClaudeBackend(()).run(ws.request())
    assert run.process.exit_code == 1
    assert run.limit == LimitSignal(LimitKind.USAGE_LIMITED, text)


def test_claude_timeout_is_reported_as_timed_out(ws: Workspace) -> None:
    fake_claude(ws, body="time.sleep(30)")
    run = ClaudeBackend(()).run(ws.request(timeout_secs=0.3))
    assert run.process.timed_out
    assert run.output_problem is not None and run.output_problem.startswith("claude printed no")


def test_claude_stale_result_and_output_are_removed_before_the_run(ws: Workspace) -> None:
    (ws.iter_dir / "claude_result.json").write_text(json.dumps(CLAUDE_RESULT))
    ws.output_path.write_text(json.dumps(EXECUTOR_OUTPUT))
    ws.fake_cli("claude", CLAUDE_ARGS, "sys.exit(1)")
    run = ClaudeBackend(()).run(ws.request())
    assert run.output_text is None
    assert not ws.output_path.exists()
    assert_no_tokens(run)


# ---------------------------------------------------------------- last_json_object


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', '{"a": 1}'),
        ('Here it is:\n```json\n{"a": 1}\n```\nBye.', '{"a": 1}'),
        ('first {"a": 1} then {"b": 2} done', '{"b": 2}'),
        ('{"outer": {"inner": 1}} trailing {not json}', '{"outer": {"inner": 1}}'),
        ('{"s": "} { \\" }"}', '{"s": "} { \\" }"}'),
        ('prose with a stray { and then {"a": [1, {"b": 2}]}', '{"a": [1, {"b": 2}]}'),
        ('{"unterminated": "x', None),
        ("no object [1, 2] here", None),
        ("", None),
        ("{" * 5000, None),
    ],
)
def test_last_json_object_finds_the_last_top_level_object(text: str, expected: str | None) -> None:
    assert last_json_object(text) == expected
