"""End-to-end specification of hostile and broken input.

One case per input a user, an editor or a misbehaving agent can leave behind, each run through
the real CLI in a temp git repository. Every case ends within its timeout in the documented exit
code; a failure is exactly one stderr line, never a traceback, and says what is wrong (and how to
fix it where a user can). A refused input changes nothing: the state files and HEAD stay
byte-identical. Agent output the runner cannot use is a runner error: the iteration is
logged and committed, so run_state advances, but tree.json, config.toml and GOAL.md stay as they
were and no attempt is consumed.

Decisions pinned here: tree.json is read up to 128 MiB (a 1,000,000-node tree is refused by size);
a tree is at most 100 levels deep: a 101-level chain fails the invariants, and a
compact 10,000-deep chain, which `validate` and `select` used to accept, is refused by every
command as nested deeper than the JSON reader can follow; JSON with a duplicate key is refused;
10 MB strings are accepted in titles, goals and acceptance, not in ids (at most 1000
characters, no whitespace, '=', '/' or control characters).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import textwrap
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.crash import assert_state_valid, attempts, cli, state_bytes
from tests.helpers.e2e import IDENTITY, PYTHON, Project, node

DONE = {"status": "done", "summary": "did it"}
MB = 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Expect:
    """What one command must end in: its exit code, and a fragment of its one stderr line."""

    code: int
    says: str | None = None


OK = Expect(0)


def assert_outcome(result: subprocess.CompletedProcess[str], expect: Expect) -> None:
    assert result.returncode == expect.code, (result.stdout[-2000:], result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    if expect.says is None:
        assert result.stderr == "", result.stderr
        return
    assert len(result.stderr.splitlines()) == 1, result.stderr[-2000:]
    assert result.stderr.startswith("runner: ")
    assert expect.says in result.stderr, result.stderr[-2000:]


def run_table(project: Project, expectations: Mapping[str, Expect], timeout: float = 60) -> None:
    """Run each command in order; a refusing one must leave every state file byte-identical."""
    for command, expect in expectations.items():
        before = state_bytes(project)
        result = cli(project, *command.split(), timeout=timeout)
        assert_outcome(result, expect)
        if expect.code != 0:
            assert state_bytes(project) == before, command


def json_bytes(value: Any) -> bytes:
    return json.dumps(value).encode("utf-8")


# ---------------------------------------------------------------- tree.json

COMPACT_NODE = (
    '{{"id":"{id}","order":{order},"title":"","goal":"","acceptance":[],"next":"execute",'
    '"passes":false,"attempts":0,"max_attempts":1,"children":[{children}]}}'
)


# What a node's JSON holds besides id and children, in the schema's order.
FIELDS_THEN_CHILDREN = (
    '"order": 0, "title": "", "goal": "", "acceptance": [], "next": "execute", '
    '"passes": false, "attempts": 0, "max_attempts": 1, "children"'
)


def deep_chain(depth: int) -> bytes:
    opening = "".join(
        COMPACT_NODE.split("{children}")[0].format(id=f"n{i}", order=0) for i in range(depth)
    )
    return (opening + "]}" * depth).encode("ascii")


def flat_tree(count: int) -> bytes:
    children = ",".join(COMPACT_NODE.format(id=i, order=0, children="") for i in range(1, count))
    return COMPACT_NODE.format(id="root", order=0, children=children).encode("ascii")


def with_root(**fields: Any) -> bytes:
    return json_bytes({**node("root", children=[node("a")]), **fields})


def with_child(child_id: str) -> bytes:
    return json_bytes(node("root", children=[node("a", children=[node(child_id)])]))


def with_raw_title(escaped: str) -> bytes:
    return with_root(title="TITLE").replace(b'"TITLE"', f'"{escaped}"'.encode())


def refused(says: str) -> dict[str, Expect]:
    return {"validate": Expect(1, says), "select": Expect(1, says), "step": Expect(1, says)}


INVARIANT = ".runner/state/tree.json: tree invariants failed: "
BAD_ID = "id must not contain whitespace, '=', '/' or control characters"
TOO_DEEP = "it nests deeper than the JSON reader can follow (a tree is at most 100 levels deep)"
TEN_MB = "x" * (10 * MB)

TREE_CASES: dict[str, tuple[Callable[[], bytes], dict[str, Expect]]] = {
    "empty": (lambda: b"", refused("tree.json: tree is not valid JSON: the file is empty")),
    "whitespace only": (lambda: b" \n\t\n", refused("tree is not valid JSON: the file is empty")),
    "not utf-8": (
        lambda: b'{"id": "\xff\xfe"}',
        refused("tree is not valid JSON: not UTF-8 (byte 8: invalid start byte)"),
    ),
    "not json": (
        lambda: b"{'id': 'root'}",
        refused("tree is not valid JSON: Expecting property name enclosed in double quotes"),
    ),
    "a json array": (lambda: b"[]", refused("tree schema validation failed: $ must be object")),
    "wrong field types": (
        lambda: with_root(order="0", passes="no", children={}),
        refused(
            "tree schema validation failed: $.children must be array; $.order must be integer; "
            "$.passes must be boolean"
        ),
    ),
    "unknown and missing fields": (
        lambda: json_bytes({"id": "root", "colour": "red"}),
        refused("$ must contain 'acceptance'"),
    ),
    "100,000 nested arrays": (
        lambda: b"[" * 100_000 + b"]" * 100_000,
        refused(f"tree.json: tree is not valid JSON: {TOO_DEEP}"),
    ),
    "10,000 levels deep": (
        lambda: deep_chain(10_000),
        refused(f"tree.json: tree is not valid JSON: {TOO_DEEP}"),
    ),
    "101 levels deep": (
        lambda: deep_chain(101),
        refused(f"{INVARIANT}{'/'.join(f'n{i}' for i in range(101))}: depth 101 exceeds"),
    ),
    "a duplicate key": (
        lambda: with_root(title="T").replace(
            b'"passes": false', b'"passes": false, "passes": true', 1
        ),
        refused('tree.json: tree is not valid JSON: duplicate key "passes" in an object'),
    ),
    "1,000,000 nodes": (
        lambda: flat_tree(1_000_000),
        refused("bytes; at most 134217728 are read"),
    ),
    "10 MB strings": (
        lambda: with_root(title=TEN_MB, goal=TEN_MB, acceptance=[TEN_MB]),
        {"validate": OK, "select": OK, "step": OK},
    ),
    "a 10 MB id": (
        lambda: with_child(TEN_MB),
        refused(f"root/a/{'x' * 1000}...: id is 10485760 characters long (at most 1000)"),
    ),
    "duplicate ids": (
        lambda: json_bytes(node("root", children=[node("a"), node("a", order=1)])),
        refused(f"{INVARIANT}duplicate id 'a' at root/a"),
    ),
    "an id with a slash": (lambda: with_child("b/c"), refused(f"root/a/b/c: {BAD_ID}")),
    "an id with a space": (lambda: with_child("b c"), refused(f"root/a/b c: {BAD_ID}")),
    "an id with an equals sign": (lambda: with_child("k=v"), refused(f"root/a/k=v: {BAD_ID}")),
    "an id with a newline": (lambda: with_child("b\nc"), refused(f"root/a/b\\nc: {BAD_ID}")),
    "an id with control characters": (
        lambda: with_child("b\x1b[2J\x07"),
        refused(f"root/a/b\\x1b[2J\\x07: {BAD_ID}"),
    ),
    "an id with a line separator": (
        lambda: with_child("b\u2028c"),
        refused(f"root/a/b\\u2028c: {BAD_ID}"),
    ),
    "an unpaired surrogate": (
        lambda: with_raw_title("\\ud800"),
        refused("tree is not valid JSON: $.title holds an unpaired surrogate escape"),
    ),
    "a 5000-digit number": (
        lambda: with_root(title="T").replace(b'"order": 0', b'"order": ' + b"9" * 5000, 1),
        refused("tree is not valid JSON: a number has too many digits to be read"),
    ),
    "NaN": (
        lambda: with_root(title="T").replace(b'"order": 0', b'"order": NaN', 1),
        refused("tree schema validation failed: $.order must be integer"),
    ),
}


@pytest.mark.parametrize("case", list(TREE_CASES))
def test_hostile_tree_json(project: Project, case: str) -> None:
    make, expectations = TREE_CASES[case]
    project.tree_path.write_bytes(make())
    project.commit_setup()
    project.agent_script({1: {"output": DONE}})

    run_table(project, expectations, timeout=120)


# ---------------------------------------------------------------- config.toml


def config_text(project: Project, top: str = "", guard: Any = None, agent: Any = None) -> str:
    """A config for the fake agent and guard, with `top` lines and argv replacements."""
    guard = [PYTHON, str(project.scripts / "guard.py")] if guard is None else guard
    agent = [PYTHON, str(project.scripts / "agent.py")] if agent is None else agent
    guard_line = "" if guard == "absent" else f"command = {json.dumps(guard)}\n"
    return (
        f'iteration_timeout_secs = 30\n{top}\n[sandbox]\nmode = "off"\n\n[guard]\n{guard_line}\n'
        f'[agent]\nbackend = "command"\ncommand = {json.dumps(agent)}\n'
    )


CONFIG = ".runner/state/config.toml"
FIX = "install it or fix"
CONFIG_CASES: dict[str, tuple[Callable[[Project], str | bytes], str]] = {
    "not toml": (lambda p: "max_iterations = = 3\n", f"{CONFIG} is not valid TOML: "),
    "not utf-8": (lambda p: b"max_iterations = 3 # \xff\n", f"{CONFIG} is not UTF-8 (byte 21"),
    "a duplicated key": (
        lambda p: config_text(p, "max_iterations = 3\nmax_iterations = 4"),
        "is not valid TOML: Cannot overwrite a value",
    ),
    "an unknown key": (lambda p: config_text(p, "retries = 3"), f"{CONFIG}: retries: unknown key"),
    "an unknown table key": (
        lambda p: config_text(p) + "shell = true\n",
        f"{CONFIG}: agent.shell: unknown key",
    ),
    "a wrong type": (
        lambda p: config_text(p, 'max_iterations = "100"'),
        f"{CONFIG}: max_iterations: must be an integer, got '100'",
    ),
    "a float": (
        lambda p: config_text(p, "max_attempts_default = 2.5"),
        "max_attempts_default: must be an integer, got 2.5",
    ),
    "a boolean": (
        lambda p: config_text(p, "max_iterations = true"),
        "max_iterations: must be an integer, got True",
    ),
    "a negative limit": (
        lambda p: config_text(p, "max_attempts_default = -1"),
        "max_attempts_default: must be > 0, got -1",
    ),
    "a zero limit": (
        lambda p: config_text(p, "guard_output_limit_bytes = 0"),
        "guard_output_limit_bytes: must be > 0, got 0",
    ),
    "a table that is a number": (lambda p: "guard = 3\n", f"{CONFIG}: guard: must be a table"),
    "a guard command that is a string": (
        lambda p: config_text(p, guard="just ci"),
        "guard.command: must be an array of strings (argv, no shell), got 'just ci'",
    ),
    "an empty guard command": (
        lambda p: config_text(p, guard=[]),
        f"{CONFIG}: guard.command: must not be empty",
    ),
    "an empty guard program": (
        lambda p: config_text(p, guard=["", "ci"]),
        "guard.command: the program (first element) must not be empty",
    ),
    "a NUL in the agent argv": (
        lambda p: config_text(p, agent=[PYTHON, "a\u0000b"]),
        "agent.command: must not contain NUL characters",
    ),
    "an unknown backend": (
        lambda p: config_text(p).replace('"command"', '"gpt"', 1),
        "agent.backend: must be one of claude, codex, command, copilot, gemini, opencode, qwen, "
        "got 'gpt'",
    ),
    "a guard binary that does not exist": (
        lambda p: config_text(p, guard=["/nonexistent/guard"]),
        f"guard.command: program '/nonexistent/guard' does not exist; {FIX} guard.command",
    ),
    "a guard program not on PATH": (
        lambda p: config_text(p, guard=["runner-no-such-guard-program"]),
        "guard.command: program 'runner-no-such-guard-program' was not found on PATH",
    ),
    "a guard that is not executable": (
        lambda p: config_text(p, guard=["./README.md"]),
        f"guard.command: program './README.md' is not executable; {FIX}",
    ),
    "a guard that is a directory": (
        lambda p: config_text(p, guard=["/tmp"]),
        "guard.command: program '/tmp' is not executable",
    ),
    "an agent binary that does not exist": (
        lambda p: config_text(p, agent=["/nonexistent/agent"]),
        f"agent.command: program '/nonexistent/agent' does not exist; {FIX} agent.command",
    ),
    "an agent that is not executable": (
        lambda p: config_text(p, agent=[".runner/GOAL.md"]),
        "agent.command: program '.runner/GOAL.md' is not executable",
    ),
}


@pytest.mark.parametrize("case", list(CONFIG_CASES))
def test_hostile_config_toml(project: Project, case: str) -> None:
    make, says = CONFIG_CASES[case]
    content = make(project)
    if isinstance(content, str):
        content = content.encode("utf-8")
    project.config_path.write_bytes(content)
    project.commit_setup()
    project.agent_script({1: {"output": DONE}})

    run_table(project, {"validate": Expect(1, says), "step": Expect(1, says)})


def test_a_missing_guard_command_means_the_default_which_must_exist(project: Project) -> None:
    project.config_path.write_text(config_text(project, guard="absent"))
    project.commit_setup()
    if shutil.which("just") is not None:
        pytest.skip("'just' is installed here, so the default guard exists")

    says = "guard.command: program 'just' was not found on PATH"
    run_table(project, {"validate": Expect(1, says), "step": Expect(1, says)})


# ---------------------------------------------------------------- GOAL.md and run ids


def goal(frontmatter: str) -> str:
    return f"{frontmatter}# Goal\n\nBuild the thing.\n"


def mismatch(goal_id: str) -> str:
    return f"does not match GOAL.md id '{goal_id}' (run 'runner start')"


GOAL = ".runner/GOAL.md: "
GOAL_CASES: dict[str, tuple[Callable[[str], str | bytes], dict[str, Expect]]] = {
    "no frontmatter": (lambda run: goal(""), {"validate": Expect(1, mismatch(""))}),
    # A GOAL.md without a goal is refused before its id is read.
    "an empty file": (
        lambda run: "",
        {"validate": Expect(1, ".runner/GOAL.md has no goal: it is empty or only frontmatter")},
    ),
    "an unclosed frontmatter": (
        lambda run: goal(f"---\nid: {run}\n"),
        {"start": Expect(1, f"{GOAL}frontmatter opened with '---' on line 1 is never closed")},
    ),
    "a line that is not key: value": (
        lambda run: goal(f"---\nid: {run}\njust words\n---\n"),
        {"start": Expect(1, f"{GOAL}frontmatter line 3 is not 'key: value': 'just words'")},
    ),
    "a duplicated key": (
        lambda run: goal(f"---\nid: {run}\nid: other\n---\n"),
        {"start": Expect(1, f"{GOAL}frontmatter key 'id' appears twice (line 3)")},
    ),
    "a duplicated frontmatter block": (
        lambda run: goal(f"---\nid: {run}\n---\n---\nid: other\n---\n"),
        {"start": Expect(1, f"{GOAL}GOAL.md has a second frontmatter block; keep only one")},
    ),
    "not utf-8": (
        lambda run: b"---\nid: \xff\n---\n",
        {"start": Expect(1, ".runner/GOAL.md is not UTF-8 (byte 8: invalid start byte)")},
    ),
    "the run id ..": (
        lambda run: goal("---\nid: ..\n---\n"),
        {"start": Expect(1, f"{GOAL}frontmatter id: run id must not be '..'")},
    ),
    "the run id a/b": (
        lambda run: goal("---\nid: a/b\n---\n"),
        {"start": Expect(1, "frontmatter id: run id 'a/b' may contain only letters, digits")},
    ),
    "a 300-character run id": (
        lambda run: goal(f"---\nid: {'r' * 300}\n---\n"),
        {"start": Expect(1, "frontmatter id: run id is 300 characters long (at most 100)")},
    ),
    "a run id with a control character": (
        lambda run: goal("---\nid: a\x1bb\n---\n"),
        {"start": Expect(1, "frontmatter id: run id 'a\\x1bb' may contain only letters")},
    ),
}


@pytest.mark.parametrize("case", list(GOAL_CASES))
def test_hostile_goal_md(project: Project, case: str) -> None:
    make, expectations = GOAL_CASES[case]
    content = make(project.run_id)
    if isinstance(content, str):
        content = content.encode("utf-8")
    project.goal_path.write_bytes(content)
    project.commit_setup()
    project.agent_script({1: {"output": DONE}})
    says = next(iter(expectations.values())).says

    run_table(project, {"validate": Expect(1, says), "step": Expect(1, says), **expectations})


@pytest.mark.parametrize(
    ("run_id", "says"),
    [
        ("..", "run_id: run id must not be '..'"),
        ("a/b", "run_id: run id 'a/b' may contain only letters, digits, '.', '_' and '-'"),
        ("../../../../tmp/escape", "run_id: run id '../../../../tmp/escape' may contain only"),
        ("r" * 300, "run_id: run id is 300 characters long (at most 100)"),
    ],
)
def test_hostile_run_id_in_run_state(project: Project, run_id: str, says: str) -> None:
    state = {**project.run_state(), "run_id": run_id}
    project.run_state_path.write_text(json.dumps(state, indent=2) + "\n")
    project.commit_setup()
    says = f".runner/state/run_state.json: {says}"

    run_table(project, {"validate": Expect(1, says), "step": Expect(1, says)})


# ---------------------------------------------------------------- agent output


def python_argv(source: str) -> list[str]:
    return [PYTHON, "-c", textwrap.dedent(source)]


WRITE_DONE = """
import json, os
with open(os.environ["RUNNER_OUTPUT_PATH"], "w") as out:
    json.dump({"status": "done", "summary": "did it"}, out)
"""
UNUSABLE = "runner error: executor agent output unusable: output file "


@dataclasses.dataclass(frozen=True)
class AgentCase:
    says: str
    action: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # the fake agent's
    agent: str | None = None  # or this Python source as the agent


AGENT_OUTPUT_CASES: dict[str, AgentCase] = {
    "none": AgentCase(f"{UNUSABLE}", {}),
    "empty": AgentCase(" is empty", {"output_text": ""}),
    "not json": AgentCase(
        "runner error: executor agent output is not JSON: Expecting value", {"output_text": "ok!"}
    ),
    "not utf-8": AgentCase(
        "is not UTF-8 (invalid byte at offset 0)",
        agent="""
        import os
        open(os.environ["RUNNER_OUTPUT_PATH"], "wb").write(b"\\xff{}")
        """,
    ),
    "json of the wrong schema": AgentCase(
        "runner error: executor output does not match its schema",
        {"output": {"status": "finished", "summary": 3}},
    ),
    "a json array": AgentCase(
        "runner error: executor output does not match its schema: $ must be object",
        {"output_text": "[1, 2]"},
    ),
    "nested 100,000 deep": AgentCase(
        "is not JSON: it nests deeper than the JSON reader can follow",
        {"output_text": "[" * 100_000 + "]" * 100_000},
    ),
    "a duplicate key": AgentCase(
        'is not JSON: duplicate key "status" in an object',
        {"output_text": '{"status": "retry", "status": "done", "summary": "s"}'},
    ),
    "an unpaired surrogate": AgentCase(
        "is not JSON: $.summary holds an unpaired surrogate escape",
        {"output_text": '{"status": "done", "summary": "\\udc00"}'},
    ),
    "a 5000-digit number": AgentCase(
        "is not JSON: a number has too many digits to be read",
        {"output_text": '{"status": "done", "summary": "x", "n": ' + "7" * 5000 + "}"},
    ),
    "1 GB": AgentCase(
        "is too large (1073741824 bytes, limit 16777216)",
        agent="""
        import os
        with open(os.environ["RUNNER_OUTPUT_PATH"], "wb") as out:
            out.truncate(1 << 30)  # sparse: a gigabyte on paper, nothing on disk
        """,
    ),
    "written after the agent exits": AgentCase(
        "does not exist",
        agent="""
        import json, os, sys, time
        if os.fork() == 0:
            os.setsid()  # out of the process group the runner kills
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            time.sleep(1.0)
            with open(os.environ["RUNNER_OUTPUT_PATH"], "w") as out:
                json.dump({"status": "done", "summary": "too late"}, out)
            os._exit(0)
        """,
    ),
}


@pytest.mark.parametrize("case", list(AGENT_OUTPUT_CASES))
def test_unusable_agent_output_is_a_runner_error_that_changes_no_state(
    project: Project, case: str
) -> None:
    spec = AGENT_OUTPUT_CASES[case]
    config = {"agent_command": python_argv(spec.agent)} if spec.agent else {}
    project.prepare(node("root"), **config)
    project.agent_script({1: dict(spec.action)})
    before = state_bytes(project)

    result = cli(project, "step")

    assert_outcome(result, Expect(1, spec.says))
    after = state_bytes(project)
    for name in (".runner/state/tree.json", ".runner/state/config.toml", ".runner/GOAL.md"):
        assert after[name] == before[name], name
    state = project.run_state()
    assert (state["next_iter"], state["last_status"], state["last_summary"]) == (2, "retry", "")
    assert set(attempts(assert_state_valid(project)).values()) == {0}
    time.sleep(1.5 if case == "written after the agent exits" else 0)
    assert project.status() == ""


@pytest.mark.parametrize(
    ("case", "agent", "says"),
    [
        (
            "deletes it",
            "import os; os.remove('.runner/state/tree.json')",
            "tree.json after the agent: .runner/state/tree.json is missing",
        ),
        (
            "grows it past 128 MiB",
            "open('.runner/state/tree.json', 'r+b').truncate(129 << 20)",
            "tree.json after the agent: .runner/state/tree.json is 135266304 bytes; at most",
        ),
        (
            "nests it 10,000 deep",
            f"head = '{{\"id\": \"n%d\", ' + {FIELDS_THEN_CHILDREN!r} + ': ['\n"
            "text = ''.join(head % i for i in range(10_000)) + ']}' * 10_000\n"
            "open('.runner/state/tree.json', 'w').write(text)",
            f"tree.json after the agent: tree is not valid JSON: {TOO_DEEP}",
        ),
    ],
)
def test_an_agent_that_wrecks_tree_json_makes_an_agent_error_and_the_tree_is_restored(
    project: Project, case: str, agent: str, says: str
) -> None:
    project.prepare(node("root"), agent_command=python_argv(agent + "\n" + WRITE_DONE))
    tree_before = project.tree_path.read_bytes()

    result = cli(project, "step")

    assert_outcome(result, OK)
    assert result.stdout.rstrip("\n").endswith("status=retry guard=skipped"), case
    assert project.tree_path.read_bytes() == tree_before.replace(b'"attempts": 0', b'"attempts": 1')
    assert (project.iter_dir(1) / "agent_error.log").read_text().startswith(f"agent error: {says}")
    assert project.status() == ""


# ---------------------------------------------------------------- agent and guard processes


def guard_argv(source: str) -> list[str]:
    return python_argv(source)


@dataclasses.dataclass(frozen=True)
class ProcessCase:
    """An agent or guard program that misbehaves, and the step line or error it must end in."""

    agent: str = WRITE_DONE
    guard: str = "import sys; sys.exit(0)"
    expect: Expect = OK
    step_line_ends: str = "status=done guard=pass"
    timeout_secs: int = 30
    within_secs: float = 20


GARBAGE = """
import os, sys
junk = bytes(range(256)) * 64 + b"\\x1b[2J\\x1b]0;title\\x07\\r\\xff\\xfe\\x00"
os.write(1, junk)
os.write(2, junk[::-1])
"""
DAEMON_HOLDING_PIPES = """
import os, time
if os.fork() == 0:
    time.sleep(60)
    os._exit(0)
"""
SETSID_DAEMON_HOLDING_PIPES = """
import os, pathlib, time
if os.fork() == 0:
    os.setsid()
    pathlib.Path(os.environ["RUNNER_TEST_HARNESS"], "daemon.pid").write_text(str(os.getpid()))
    time.sleep(60)
    os._exit(0)
"""
IGNORES_SIGTERM = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(60)
"""
CLOSES_STDOUT_EARLY = """
import os, time
os.close(1)
os.close(2)
time.sleep(0.5)
"""
PRINTS_1_GB = """
import os
block = b"y" * (1 << 20)
for _ in range(1024):
    os.write(1, block)
"""

PROCESS_CASES: dict[str, ProcessCase] = {
    "agent prints binary garbage": ProcessCase(agent=GARBAGE + WRITE_DONE),
    "agent closes stdout early": ProcessCase(agent=CLOSES_STDOUT_EARLY + WRITE_DONE),
    "agent forks a daemon that keeps the pipes open": ProcessCase(
        agent=DAEMON_HOLDING_PIPES + WRITE_DONE
    ),
    "agent forks a setsid daemon that keeps the pipes open": ProcessCase(
        agent=SETSID_DAEMON_HOLDING_PIPES + WRITE_DONE
    ),
    "agent ignores SIGTERM": ProcessCase(
        agent=IGNORES_SIGTERM,
        expect=Expect(1, "runner error: executor agent timed out after 2 s"),
        step_line_ends="status=runner_error guard=skipped",
        timeout_secs=2,
    ),
    "agent prints 1 GB": ProcessCase(
        agent=PRINTS_1_GB + WRITE_DONE,
        within_secs=60,
    ),
    "guard prints binary garbage and fails": ProcessCase(
        guard=GARBAGE + "sys.exit(1)", step_line_ends="status=done guard=fail"
    ),
    "guard closes stdout early": ProcessCase(guard=CLOSES_STDOUT_EARLY),
    "guard forks a daemon that keeps the pipes open": ProcessCase(guard=DAEMON_HOLDING_PIPES),
    "guard ignores SIGTERM": ProcessCase(
        guard=IGNORES_SIGTERM, step_line_ends="status=done guard=fail", timeout_secs=2
    ),
}


@pytest.mark.parametrize("case", list(PROCESS_CASES))
def test_misbehaving_agent_and_guard_processes(project: Project, case: str) -> None:
    spec = PROCESS_CASES[case]
    project.prepare(
        node("root"),
        iteration_timeout_secs=spec.timeout_secs,
        agent_command=python_argv(spec.agent),
        guard_command=guard_argv(spec.guard),
    )
    started = time.monotonic()

    result = cli(project, "step", timeout=spec.within_secs + 30)

    elapsed = time.monotonic() - started
    daemon = project.harness / "daemon.pid"
    if daemon.exists():
        pid = int(daemon.read_text())
        subprocess.run(["kill", "-9", str(pid)], check=False)
    assert_outcome(result, spec.expect)
    assert elapsed < spec.within_secs
    assert result.stdout.rstrip("\n").endswith(spec.step_line_ends), result.stdout
    assert_state_valid(project)
    assert project.status() == ""
    for log in project.iter_dir(1).glob("*.log"):
        log.read_text(encoding="utf-8")  # valid UTF-8, whatever the process printed
        assert log.stat().st_size < 300_000, log


# ---------------------------------------------------------------- the repository


def conflicting_branch(project: Project) -> str:
    """A branch whose README.md conflicts with the run branch's; returns its name."""
    run_branch = f"runner/{project.run_id}"
    project.git("checkout", "--quiet", "-b", "other")
    (project.root / "README.md").write_text("theirs\n")
    project.commit_setup("theirs")
    project.git("checkout", "--quiet", run_branch)
    (project.root / "README.md").write_text("ours\n")
    project.commit_setup("ours")
    return "other"


def merge_in_progress(project: Project) -> None:
    branch = conflicting_branch(project)
    subprocess.run(
        ["git", *IDENTITY, "merge", branch], cwd=project.root, env=project.env, capture_output=True
    )


def rebase_in_progress(project: Project) -> None:
    branch = conflicting_branch(project)
    subprocess.run(
        ["git", *IDENTITY, "rebase", branch], cwd=project.root, env=project.env, capture_output=True
    )


def detached_head(project: Project) -> None:
    project.git("checkout", "--quiet", "--detach")


REPO_CASES: dict[str, tuple[Callable[[Project], None], dict[str, Expect]]] = {
    "a detached HEAD": (
        detached_head,
        # This rule changed (it used to refuse): from a detached HEAD a step works
        # on the run in its own checkout.
        {"step": OK},
    ),
    "a merge in progress": (
        merge_in_progress,
        {
            "step": Expect(1, "git is in the middle of a merge; finish or abort it first"),
            "start": Expect(1, "git is in the middle of a merge; finish or abort it first"),
        },
    ),
    "a rebase in progress": (
        rebase_in_progress,
        {
            "step": Expect(1, "git is in the middle of a rebase; finish or abort it first"),
            "loop": Expect(1, "git is in the middle of a rebase; finish or abort it first"),
            "start": Expect(1, "git is in the middle of a rebase; finish or abort it first"),
        },
    ),
}


@pytest.mark.parametrize("case", list(REPO_CASES))
def test_hostile_repository_states(project: Project, case: str) -> None:
    setup, expectations = REPO_CASES[case]
    project.prepare(node("root"))
    project.agent_script({1: {"output": DONE}})
    setup(project)

    run_table(project, expectations)


def test_a_repository_with_no_commits(fresh_project: Project) -> None:
    project = fresh_project
    project.git("update-ref", "-d", "HEAD")
    project.git("rm", "--quiet", "--cached", "README.md")
    assert cli(project, "init").returncode == 0

    run_table(
        project,
        {
            "start": Expect(1, "the repository has no commits yet; make a first commit"),
            "step": Expect(1, "working tree is not clean: "),
            "recover": OK,
        },
    )


def test_a_directory_outside_any_repository(project: Project, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()

    result = cli(project, "step", cwd=outside)

    assert_outcome(result, Expect(1, f"{outside} is not inside a git repository (run 'git init'"))


def test_no_git_identity_still_commits_with_the_runners_own(project: Project) -> None:
    project.prepare(node("root"))
    project.agent_script({1: {"output": DONE}})
    assert project.git_config("user.name") is None

    assert_outcome(cli(project, "step"), OK)

    assert project.git("log", "-1", "--format=%an <%ae>").strip() == "runner <runner@localhost>"
