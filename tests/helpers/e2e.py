"""What the end-to-end CLI tests share: a project in a tmp dir, a scripted fake agent and guard.

A `Project` is a real git repository with `.runner/` set up by the real CLI. The runner is
always run as a subprocess (`python -m runner_shell`) with HOME pointing at an empty directory
and no system git config, so no git identity exists for it; only the tests' own setup commits
pass one with `-c user.name/-c user.email`.

The fake agent and guard are small Python programs written to a tmp dir. They find their
instructions through RUNNER_TEST_HARNESS (the harness directory of the test), which the runner
passes on to them with the rest of its environment:

- `agent.json` maps an iteration number (RUNNER_ITER) to an action, carried out in this order:
  `delete` / `mkdir` (repo paths), `files` ({repo path: text}), `tree_text` (raw tree.json),
  `tree_ops` ([["set", id, field, value]] or [["add_child", parent_id, node]]), `stdout`,
  `stdout_bytes` (that many "x"), `stderr`, `grandchild_pid_file` (start a sleeping child and
  write its pid there), `sleep`, `wait_for` (a harness file name: wait until the test made it),
  `output` (JSON written to RUNNER_OUTPUT_PATH) or `output_text`
  (raw), `exit`. Every run of the agent first leaves `records/<iter>.json` with its RUNNER_*
  variables, its prompt and the `.runner/context/` files it saw. An iteration with no action
  takes the one keyed `<node id>#<n>` for the agent's n-th run on its node (RUNNER_NODE_ID,
  counted in `node_runs/`): with `[parallel] slots` above one, leaves run side by side and the
  iteration numbers interleave, while each node's own runs keep their order.
- `guard.json` is a list with one entry per guard call (the last entry repeats): `stdout`,
  `stdout_bytes` (that many "g"), `stderr`, `sleep`, `exit`. Calls are counted in
  `guard_calls.txt`. It may instead be an object keyed by iteration (RUNNER_ITER), with
  `"default"` for the iterations it does not list: the call order of guards that run at once,
  or again after a merge, is not the iterations' order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from runner_core.tree.model import NODE_FIELDS

PYTHON = sys.executable
IDENTITY = ("-c", "user.name=Runner Tests", "-c", "user.email=tests@example.invalid")
START_HINT = "(run 'runner start')"

AGENT_SOURCE = r'''
"""Fake agent for runner's e2e tests: does what agent.json says for RUNNER_ITER."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

harness = Path(os.environ["RUNNER_TEST_HARNESS"])
iteration = os.environ["RUNNER_ITER"]
prompt = sys.stdin.read()
context_dir = Path(".runner/context")
records = harness / "records"
records.mkdir(exist_ok=True)
(records / f"{iteration}.json").write_text(
    json.dumps(
        {
            "env": {k: v for k, v in os.environ.items() if k.startswith("RUNNER_")},
            "prompt": prompt,
            "context": {
                p.name: p.read_text(encoding="utf-8") for p in sorted(context_dir.iterdir())
            },
        }
    ),
    encoding="utf-8",
)
script = json.loads((harness / "agent.json").read_text(encoding="utf-8"))
node_id = os.environ.get("RUNNER_NODE_ID", "")
node_runs = harness / "node_runs"
node_runs.mkdir(exist_ok=True)
runs_path = node_runs / node_id
runs = int(runs_path.read_text()) + 1 if node_id and runs_path.exists() else 1
if node_id:
    runs_path.write_text(str(runs))
action = script.get(iteration, script.get(f"{node_id}#{runs}"))
if action is None:
    print(f"fake agent: no action for iteration {iteration}", file=sys.stderr)
    sys.exit(97)

for name in action.get("delete", []):
    Path(name).unlink()
for name in action.get("mkdir", []):
    Path(name).mkdir(parents=True)
for name, text in action.get("files", {}).items():
    Path(name).parent.mkdir(parents=True, exist_ok=True)
    Path(name).write_text(text, encoding="utf-8")

tree_path = Path(".runner/state/tree.json")
if "tree_text" in action:
    tree_path.write_text(action["tree_text"], encoding="utf-8")
if action.get("tree_ops"):
    tree = json.loads(tree_path.read_text(encoding="utf-8"))

    def find(node, node_id):
        if node["id"] == node_id:
            return node
        for child in node["children"]:
            found = find(child, node_id)
            if found is not None:
                return found
        return None

    for op, node_id, *rest in action["tree_ops"]:
        node = find(tree, node_id)
        if op == "set":
            node[rest[0]] = rest[1]
        elif op == "add_child":
            node["children"].append(rest[0])
    tree_path.write_text(json.dumps(tree, indent=2), encoding="utf-8")

sys.stdout.write(action.get("stdout", ""))
sys.stdout.write("x" * action.get("stdout_bytes", 0))
sys.stderr.write(action.get("stderr", ""))
sys.stdout.flush()
sys.stderr.flush()

if "grandchild_pid_file" in action:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (harness / action["grandchild_pid_file"]).write_text(str(sleeper.pid), encoding="utf-8")
time.sleep(action.get("sleep", 0))
if "wait_for" in action:  # the test creates this harness file once it has done its part
    gate, deadline = harness / action["wait_for"], time.monotonic() + 120
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.02)

if "wait" in action:
    Path(os.environ["RUNNER_WAIT_PATH"]).write_text(json.dumps(action["wait"]), encoding="utf-8")
if "usage" in action:
    Path(os.environ["RUNNER_USAGE_PATH"]).write_text(json.dumps(action["usage"]), encoding="utf-8")
output_path = Path(os.environ["RUNNER_OUTPUT_PATH"])
if "output" in action:
    output_path.write_text(json.dumps(action["output"]), encoding="utf-8")
if "output_text" in action:
    output_path.write_text(action["output_text"], encoding="utf-8")
sys.exit(action.get("exit", 0))
'''

GUARD_SOURCE = r'''
"""Fake guard for runner's e2e tests: does what guard.json says for its call or iteration."""

import fcntl
import json
import os
import sys
import time
from pathlib import Path

harness = Path(os.environ["RUNNER_TEST_HARNESS"])
calls_path = harness / "guard_calls.txt"
# Guards of parallel jobs run at once: the count is read and written under a lock.
with open(harness / "guard_calls.lock", "a") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    calls = int(calls_path.read_text()) if calls_path.exists() else 0
    calls_path.write_text(str(calls + 1))
script_path = harness / "guard.json"
script = json.loads(script_path.read_text()) if script_path.exists() else [{}]
if isinstance(script, dict):
    action = script.get(os.environ["RUNNER_ITER"], script.get("default", {}))
else:
    action = script[min(calls, len(script) - 1)]
sys.stdout.write(action.get("stdout", ""))
sys.stdout.write("g" * action.get("stdout_bytes", 0))
sys.stderr.write(action.get("stderr", ""))
sys.stdout.flush()
time.sleep(action.get("sleep", 0))
if "wait_for" in action:  # the test creates this harness file once it has done its part
    gate, deadline = harness / action["wait_for"], time.monotonic() + 120
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
sys.exit(action.get("exit", 0))
'''


def node(
    node_id: str,
    *,
    order: int = 0,
    next_: str = "execute",
    passes: bool = False,
    attempts: int = 0,
    max_attempts: int = 3,
    children: Sequence[Mapping[str, Any]] = (),
    title: str | None = None,
) -> dict[str, Any]:
    """A task-tree node as JSON data, every field in the schema's order."""
    return {
        "id": node_id,
        "order": order,
        "title": title or f"Task {node_id}",
        "goal": f"Do {node_id}.",
        "acceptance": [f"{node_id} is done"],
        "next": next_,
        "passes": passes,
        "attempts": attempts,
        "max_attempts": max_attempts,
        "children": [dict(child) for child in children],
    }


def child_spec(title: str, next_: str = "execute") -> dict[str, Any]:
    """One child of a decomposer's output."""
    return {
        "title": title,
        "goal": f"Goal of {title}.",
        "acceptance": [f"{title} works"],
        "next": next_,
    }


def canonical_tree_text(tree: Mapping[str, Any]) -> str:
    """The canonical form, computed independently of runner_core."""

    def canon(item: Mapping[str, Any]) -> dict[str, Any]:
        children = sorted(item["children"], key=lambda child: (child["order"], child["id"]))
        out = {field: item[field] for field in NODE_FIELDS}
        out["children"] = [canon(child) for child in children]
        return out

    return json.dumps(canon(tree), indent=2, ensure_ascii=False) + "\n"


def find_node(tree: Mapping[str, Any], node_id: str) -> dict[str, Any]:
    stack = [tree]
    while stack:
        item = stack.pop()
        if item["id"] == node_id:
            return dict(item)
        stack.extend(item["children"])
    raise KeyError(node_id)


def slots_under_test() -> int:
    """The `[parallel] slots` the e2e scenarios run with: RUNNER_TEST_SLOTS, 1 when unset."""
    return int(os.environ.get("RUNNER_TEST_SLOTS", "1"))


def process_alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting to be reaped counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


class Project:
    """A git repository with `.runner/`, its harness directory and the runner's environment."""

    def __init__(self, root: Path, harness: Path, scripts: Path, env: Mapping[str, str]) -> None:
        self.root = root
        self.harness = harness  # this test's agent.json, guard.json and the agent's records
        self.scripts = scripts  # agent.py and guard.py, shared by all tests
        self.env = dict(env)
        # `[sandbox] mode` of every config set_config writes. The e2e suite tests the runner's
        # features unconfined; the sandbox's own tests ask for "bwrap" (tests/e2e/
        # test_sandboxed_step.py) and the README's walk-throughs run with the default, "auto".
        self.sandbox_mode: str | None = "off"

    # ---------------------------------------------------------------- processes

    def runner(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """The real CLI as a subprocess in the repository root."""
        return subprocess.run(
            [PYTHON, "-m", "runner_shell", *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def git(self, *args: str) -> str:
        result = subprocess.run(
            ["git", *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        )
        return result.stdout

    def git_config(self, key: str) -> str | None:
        """A git config value as the runner sees it, or None when unset."""
        result = subprocess.run(
            ["git", "config", "--get", key],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        return result.stdout.strip() if result.returncode == 0 else None

    def commit_setup(self, message: str = "test setup") -> None:
        """The test's own commit of everything in the working tree (with a test identity)."""
        self.git("add", "-A")
        self.git(*IDENTITY, "commit", "--quiet", "--no-verify", "--allow-empty", "-m", message)

    def prepare(self, tree: Mapping[str, Any] | None = None, **config: Any) -> str:
        """Give a started run this tree and/or config, commit it, and return the run id."""
        if tree is not None:
            self.write_tree(tree)
        if config:
            self.set_config(**config)
        self.commit_setup()
        return self.run_id

    @property
    def run_id(self) -> str:
        run_id = self.run_state()["run_id"]
        assert isinstance(run_id, str), "no run started"
        return run_id

    # ---------------------------------------------------------------- configuration

    def set_config(self, **values: Any) -> None:
        """Rewrite config.toml: top-level keys from `values` (a dict is a table such as
        `loop={...}`), plus the fake agent and guard.

        `iteration_timeout_secs` defaults to 30 s so a broken test cannot hang for the default.
        """
        values.setdefault("iteration_timeout_secs", 30)
        agent = values.pop("agent_command", [PYTHON, str(self.scripts / "agent.py")])
        guard = values.pop("guard_command", [PYTHON, str(self.scripts / "guard.py")])
        # The fake agents keep their script and records in the harness, the model's side of
        # the test: the sandbox lets them write there (every test's tmp dir is under one base).
        sandbox = dict(values.pop("sandbox", {}))
        sandbox.setdefault("writable", [str(self.harness.parent.parent)])
        # A scripted agent finds its harness through HARNESS, which the config names as a user
        # names a variable their agent reads: the environment is an allow-list.
        sandbox.setdefault("env", ["HARNESS"])
        if self.sandbox_mode is not None:
            sandbox.setdefault("mode", self.sandbox_mode)
        values["sandbox"] = sandbox
        # RUNNER_TEST_SLOTS runs the suite's scenarios with `[parallel] slots` (.ci/run does).
        if "RUNNER_TEST_SLOTS" in os.environ and "parallel" not in values:
            values["parallel"] = {"slots": slots_under_test()}
        tables = {key: value for key, value in values.items() if isinstance(value, dict)}
        toml = [
            f"{key} = {json.dumps(value)}" for key, value in values.items() if key not in tables
        ]
        for name, table in tables.items():  # [loop], [budget], [hooks], [sandbox]
            toml += ["", f"[{name}]", *(f"{k} = {json.dumps(v)}" for k, v in table.items())]
        toml += ["", "[guard]", f"command = {json.dumps(guard)}"]
        toml += ["", "[agent]", 'backend = "command"', f"command = {json.dumps(agent)}"]
        self.config_path.write_text("\n".join(toml) + "\n", encoding="utf-8")

    def write_tree(self, tree: Mapping[str, Any]) -> None:
        self.tree_path.write_text(json.dumps(tree, indent=2) + "\n", encoding="utf-8")

    def agent_script(self, actions: Mapping[int, Mapping[str, Any]]) -> None:
        text = json.dumps({str(iteration): action for iteration, action in actions.items()})
        (self.harness / "agent.json").write_text(text, encoding="utf-8")

    def agent_script_by_node(self, runs: Mapping[tuple[str, int], Mapping[str, Any]]) -> None:
        """The agent's n-th run on a node does `runs[(node id, n)]`, whatever its iteration."""
        text = json.dumps({f"{node_id}#{n}": action for (node_id, n), action in runs.items()})
        (self.harness / "agent.json").write_text(text, encoding="utf-8")

    def guard_script(self, calls: Sequence[Mapping[str, Any]]) -> None:
        (self.harness / "guard.json").write_text(json.dumps(list(calls)), encoding="utf-8")

    def guard_script_by_iteration(
        self, iterations: Mapping[int, Mapping[str, Any]], default: Mapping[str, Any]
    ) -> None:
        """The guard of iteration n (its own run or its run again after a merge) does
        `iterations[n]`, any other iteration's does `default`."""
        script = {str(n): dict(action) for n, action in iterations.items()}
        script["default"] = dict(default)
        (self.harness / "guard.json").write_text(json.dumps(script), encoding="utf-8")

    # ---------------------------------------------------------------- reading back

    @property
    def runner_dir(self) -> Path:
        return self.root / ".runner"

    @property
    def config_path(self) -> Path:
        return self.runner_dir / "state" / "config.toml"

    @property
    def tree_path(self) -> Path:
        return self.runner_dir / "state" / "tree.json"

    @property
    def goal_path(self) -> Path:
        return self.runner_dir / "GOAL.md"

    @property
    def run_state_path(self) -> Path:
        return self.runner_dir / "state" / "run_state.json"

    def tree(self) -> dict[str, Any]:
        return json.loads(self.tree_path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]

    def run_state(self) -> dict[str, Any]:
        return json.loads(self.run_state_path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]

    def head_chain(self) -> str:
        """The `Runner-Chain` trailer of the last commit."""
        return self.git("log", "-1", "--format=%(trailers:key=Runner-Chain,valueonly)").strip()

    def iter_dir(self, iteration: int) -> Path:
        return self.runner_dir / "iterations" / self.run_id / str(iteration)

    def meta(self, iteration: int) -> dict[str, Any]:
        return json.loads((self.iter_dir(iteration) / "meta.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]

    def record(self, iteration: int) -> dict[str, Any]:
        """What the fake agent saw in `iteration`: env, prompt and context files."""
        path = self.harness / "records" / f"{iteration}.json"
        return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]

    def guard_calls(self) -> int:
        path = self.harness / "guard_calls.txt"
        return int(path.read_text()) if path.exists() else 0

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def subjects(self) -> list[str]:
        """Commit subjects, oldest first."""
        return self.git("log", "--reverse", "--format=%s").splitlines()

    def status(self) -> str:
        return self.git("status", "--porcelain=v1", "--untracked-files=all")

    def snapshot(self) -> dict[str, bytes]:
        """Every file of the working tree (outside .git) with its bytes."""
        files: dict[str, bytes] = {}
        for directory, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [name for name in dirnames if name != ".git"]
            for name in filenames:
                path = Path(directory) / name
                files[str(path.relative_to(self.root))] = path.read_bytes()
        return files


ProjectFactory = Callable[[Path, str], Project]


def lines(text: str) -> list[str]:
    return text.splitlines()


def assert_one_error_line(result: subprocess.CompletedProcess[str], code: int = 1) -> str:
    """The process failed with `code` and said why in one stderr line, no traceback.

    Returns that line without its `runner: ` prefix.
    """
    assert result.returncode == code, (result.stdout, result.stderr)
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("runner: "), result.stderr
    return result.stderr.rstrip("\n").removeprefix("runner: ")
