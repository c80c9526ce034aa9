"""runner's benchmark: where users feel speed, each figure a ratio against a floor of the same run.

    python benchmarks/bench.py                    # full run: 1k, 10k, 100k and 1M nodes
    python benchmarks/bench.py --quick            # 1k and 10k only, fewer repeats
    python benchmarks/bench.py --compare OLD.json NEW.json

Every row is a median of several runs of runner's code beside the median of a floor measured in
the same run on the same input, so figures from different machines and commits compare as
ratios. Trees are generated from a fixed seed: depth 3-12, fan-out 2-20, the first half of the
leaves passed (as in a run half done) and their parents derived. Results go to a table on stdout
and to JSON (default `benchmarks/results/latest.json`). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import random
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

import runner_core
from runner_core import AgentStatus, GuardOutcome, Node, dumps_tree, parse_tree, select_leaf
from runner_core.tree import serialization as tree_json
from runner_core.tree.state_update import apply_state_updates
from runner_core.validation.immutability import passed_node_findings
from runner_core.validation.schema import TREE_SCHEMA_FILE, load_schema, schema_findings

# One module whether run as a script or imported: steps.py imports this one as `bench`.
sys.modules.setdefault("bench", sys.modules[__name__])

import bench_docs  # noqa: E402
import disk  # noqa: E402
import parallel  # noqa: E402
import proxy_cost  # noqa: E402
import sandbox_cost  # noqa: E402
import steps  # noqa: E402
import temporal_runs  # noqa: E402
import views  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "latest.json"
FULL_SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000)
# Sizes at which whole processes and the jsonschema comparison run: each of these reads the
# whole tree many times, and jsonschema alone needs about a minute per 1M-node document.
PROCESS_SIZES = (1_000, 10_000, 100_000)
# The tree of the `big` group's whole-step row.
BIG_STEP_SIZE = 100_000
SEED = 6
MAX_DEPTH = 12
MAX_FAN_OUT = 20
# The 1M-node tree is half a gigabyte of JSON; a few runs give a stable median.
LARGE_TREE_NODES = 1_000_000
LARGE_TREE_REPEAT = 3
SMALL_TREE_NODES = 10_000
SMALL_TREE_REPEAT_FACTOR = 3
# Processes run as after `pip install`, which byte-compiles: with bytecode caching on, even
# where the environment turned it off.
PROCESS_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
# The largest tree.json the runner reads (older commits had no limit).
READ_LIMIT_BYTES: int = getattr(tree_json, "TREE_MAX_BYTES", 2**63)
GUARD_OUTPUT_BYTES = 1024 * 1024 * 1024
RSS_LIMIT_BYTES = 64 * 1024 * 1024
# A guard.log holds at most the cap of each stream plus section headers and truncation marks.
LOG_OVERHEAD_BYTES = 4096
GIT_IDENTITY = ("-c", "user.name=runner bench", "-c", "user.email=bench@example.invalid")
NOOP_AGENT = (
    "sh",
    "-c",
    """printf '{"status": "done", "summary": "no-op"}' > "$RUNNER_OUTPUT_PATH\"""",
)
GUARD_LOUD_SOURCE = """\
import sys
line = b"g" * 1023 + b"\\n"
chunk = line * 1024
write = sys.stdout.buffer.write
for _ in range({output_bytes} // len(chunk)):
    write(chunk)
"""

# The agent that prints: the same bytes as the loud guard, then its output file.
AGENT_LOUD_SOURCE = (
    GUARD_LOUD_SOURCE
    + """import os
with open(os.environ["RUNNER_OUTPUT_PATH"], "w", encoding="utf-8") as handle:
    handle.write('{{"status": "done", "summary": "loud"}}')
"""
)
AGENT_OUTPUT_TARGET = 1.1

# ---------------------------------------------------------------- trees


_WORDS = [
    "parser",
    "config",
    "cache",
    "index",
    "schema",
    "retry",
    "guard",
    "report",
    "export",
    "import",
    "session",
    "token",
    "migration",
    "handler",
    "endpoint",
    "query",
    "batch",
    "stream",
    "queue",
    "worker",
    "scheduler",
    "metrics",
    "log",
    "adapter",
    "client",
    "server",
    "storage",
    "snapshot",
    "diff",
    "merge",
    "layout",
    "render",
    "validate",
    "encode",
]


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def _new_node(rng: random.Random, node_id: str, order: int) -> dict[str, Any]:
    return {
        "id": node_id,
        "order": order,
        "title": f"Implement the {_sentence(rng, 3)}",
        "goal": f"Make the {_sentence(rng, 6)} work end to end, tested by {_sentence(rng, 2)}.",
        "acceptance": [f"The {_sentence(rng, 4)} passes" for _ in range(rng.randint(1, 3))],
        "next": "execute",
        "passes": False,
        "attempts": 0,
        "max_attempts": 3,
        "children": [],
    }


def _preorder(root: dict[str, Any]) -> Iterator[dict[str, Any]]:
    stack = [root]
    while stack:
        item = stack.pop()
        yield item
        stack.extend(reversed(item["children"]))


def generate_tree(size: int, seed: int = SEED) -> dict[str, Any]:
    """A valid canonical tree of exactly `size` nodes as JSON data, the same for the same seed.

    Grows by giving a random unexpanded node 2-20 children; a third of the picks go to the
    newest node, which makes the deep, uneven branches real plans have (depth at most 12).
    """
    rng = random.Random(seed * 10_000_019 + size)
    root = _new_node(rng, "root", 0)
    frontier: list[tuple[dict[str, Any], int]] = [(root, 1)]
    count = 1
    while count < size:
        index = len(frontier) - 1 if rng.random() < 1 / 3 else rng.randrange(len(frontier))
        parent, depth = frontier[index]
        frontier[index] = frontier[-1]
        frontier.pop()
        fan_out = min(rng.randint(2, MAX_FAN_OUT), size - count)
        parent["next"] = "decompose"
        for order in range(fan_out):
            child = _new_node(rng, f"{parent['id']}.{order + 1}", order)
            parent["children"].append(child)
            if depth + 1 < MAX_DEPTH:
                frontier.append((child, depth + 1))
        count += fan_out
    leaves = [item for item in _preorder(root) if not item["children"]]
    for position, leaf in enumerate(leaves):
        leaf["passes"] = position < len(leaves) // 2
        leaf["attempts"] = rng.randint(0, 2)
    for item in reversed(list(_preorder(root))):
        if item["children"]:
            item["passes"] = all(child["passes"] for child in item["children"])
    return root


def tree_text(tree: dict[str, Any]) -> str:
    return json.dumps(tree, indent=2) + "\n"


def tree_shape(tree: dict[str, Any]) -> dict[str, int]:
    depth_of = {id(tree): 1}
    nodes = passed = depth = fan_out = 0
    for item in _preorder(tree):
        nodes += 1
        passed += item["passes"]
        depth = max(depth, depth_of[id(item)])
        fan_out = max(fan_out, len(item["children"]))
        for child in item["children"]:
            depth_of[id(child)] = depth_of[id(item)] + 1
    return {"nodes": nodes, "passed": passed, "max_depth": depth, "max_fan_out": fan_out}


def agent_edited_text(tree: dict[str, Any]) -> str:
    """The tree as an executor might leave it: its leaf's title and acceptance refined and the
    goal of the last open leaf reworded. Passed nodes are untouched."""
    leaves = [item for item in _preorder(tree) if not item["children"]]
    selected = next(leaf for leaf in leaves if not leaf["passes"])
    last = leaves[-1]
    saved = (selected["title"], selected["acceptance"], last["goal"])
    selected["title"] += " (refined)"
    selected["acceptance"] = [*selected["acceptance"], "Edge cases are covered"]
    last["goal"] = "Reworded: " + last["goal"]
    try:
        return tree_text(tree)
    finally:
        selected["title"], selected["acceptance"], last["goal"] = saved


# ---------------------------------------------------------------- measuring


@attrs.frozen
class Row:
    metric: str
    size: int | None
    runner: float
    floor: float
    unit: str  # "s", "x" (a ratio of medians), "bytes", "count", "/s" or "%" (of one core)
    target: str  # e.g. "<= 2x", "" for figures reported without a target
    met: bool | None
    runner_runs: tuple[float, ...] = ()
    floor_runs: tuple[float, ...] = ()
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.runner / self.floor if self.floor else float("inf")

    @property
    def figure(self) -> float:
        """What the target is about: the ratio of two timings, else runner's own figure."""
        return self.ratio if self.unit == "s" else self.runner


Timing = tuple[float, tuple[float, ...]]  # the median and every run, in seconds


def _timed(action: Callable[[], object], gc_paused: bool) -> float:
    gc.collect()
    if gc_paused:
        gc.disable()
    try:
        started = time.perf_counter()
        action()
        return time.perf_counter() - started
    finally:
        gc.enable()


def paired_times(
    measured: Callable[[], object],
    floor: Callable[[], object],
    repeat: int,
    gc_paused: bool = False,
) -> tuple[Timing, Timing]:
    """Medians of `repeat` runs of each, alternating, so a busy moment hits both alike."""
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(repeat):
        ours.append(_timed(measured, gc_paused))
        theirs.append(_timed(floor, gc_paused))
    return (statistics.median(ours), tuple(ours)), (statistics.median(theirs), tuple(theirs))


def ratio_row(
    metric: str,
    size: int | None,
    runner: Timing,
    floor: Timing,
    limit: float | None,
    note: str = "",
) -> Row:
    ratio = runner[0] / floor[0]
    return Row(
        metric=metric,
        size=size,
        runner=runner[0],
        floor=floor[0],
        unit="s",
        target="" if limit is None else f"<= {limit:g}x",
        met=None if limit is None else ratio <= limit,
        runner_runs=runner[1],
        floor_runs=floor[1],
        note=note,
    )


def core_pipeline(text: str, edited: Node) -> str:
    """parse (schema + invariants) → select → immutability → state updates → canonical text."""
    prev = parse_tree(text)
    selection = select_leaf(prev)
    assert selection.node is not None
    problems = passed_node_findings(prev, edited)
    assert not problems, problems
    tree, _ = apply_state_updates(
        prev, edited, selection.node.id, AgentStatus.DONE, GuardOutcome.PASS
    )
    return dumps_tree(tree)


def json_floor(text: str) -> str:
    return json.dumps(json.loads(text), indent=2)


# Sizes at which the core pipeline is also timed with the cyclic GC paused.
GC_PAUSED_SIZES = (10_000, 100_000)


def _core_at(
    size: int, repeat: int, log: Callable[[str], None]
) -> tuple[tuple[Timing, Timing], tuple[Timing, Timing] | None]:
    """(pipeline, floor) under the default GC and, at GC_PAUSED_SIZES, with it paused."""
    log(f"core: generating a {size}-node tree")
    tree = generate_tree(size)
    text = tree_text(tree)
    edited = parse_tree(agent_edited_text(tree))
    del tree
    if size < LARGE_TREE_NODES:  # the 1M-node check alone would take half a minute
        assert dumps_tree(parse_tree(text)) == text, "the generated tree is not canonical"
    log(f"core: {size} nodes, {len(text) / 1e6:.1f} MB, {repeat} runs each")

    def pipeline() -> str:
        return core_pipeline(text, edited)

    def floor() -> str:
        return json_floor(text)

    default = paired_times(pipeline, floor, repeat)
    paused = (
        paired_times(pipeline, floor, repeat, gc_paused=True) if size in GC_PAUSED_SIZES else None
    )
    return default, paused


def _growth_row(metric: str, small: int, large: int, runner: float, floor: float) -> Row:
    return Row(
        metric=metric,
        size=large,
        runner=runner,
        floor=floor,
        unit="x",
        target="<= 11x",
        met=runner <= 11,
        note=f"runner {large}/{small} beside json {large}/{small}",
    )


def _core_runs(size: int, repeat: int) -> int:
    """Fewer runs of the 1M-node tree; more of small trees, whose runs are short and noisy."""
    if size >= LARGE_TREE_NODES:
        return min(repeat, LARGE_TREE_REPEAT)
    return repeat * SMALL_TREE_REPEAT_FACTOR if size <= SMALL_TREE_NODES else repeat


def bench_core(sizes: Sequence[int], repeat: int, log: Callable[[str], None]) -> list[Row]:
    rows: list[Row] = []
    timings: dict[int, tuple[Timing, Timing]] = {}
    paused: dict[int, tuple[Timing, Timing]] = {}
    for size in sizes:
        runs = _core_runs(size, repeat)
        timings[size], paused_at = _core_at(size, runs, log)
        if paused_at is not None:
            paused[size] = paused_at
        rows.append(
            ratio_row(
                "core pipeline vs json.loads+dumps(indent=2)",
                size,
                *timings[size],
                2.0 if size == 100_000 else None,
            )
        )
    for small, large in ((10_000, 100_000), (100_000, 1_000_000)):
        if small in timings and large in timings:
            rows.append(
                _growth_row(
                    f"core pipeline growth {large // small}x nodes",
                    small,
                    large,
                    timings[large][0][0] / timings[small][0][0],
                    timings[large][1][0] / timings[small][1][0],
                )
            )
        if small in paused and large in paused:
            rows.append(
                _growth_row(
                    f"core pipeline growth {large // small}x nodes, cyclic GC paused",
                    small,
                    large,
                    paused[large][0][0] / paused[small][0][0],
                    paused[large][1][0] / paused[small][1][0],
                )
            )
    return rows


def bench_schema(sizes: Sequence[int], repeat: int, log: Callable[[str], None]) -> list[Row]:
    try:
        import jsonschema
    except ImportError:
        log("schema: jsonschema is not installed (pip install -e '.[test]'); skipped")
        return []
    rows: list[Row] = []
    validator = jsonschema.Draft202012Validator(dict(load_schema(TREE_SCHEMA_FILE)))
    schema_findings({})  # compile outside the timing, as every later call finds it compiled
    for size in sizes:
        document = json.loads(tree_text(generate_tree(size)))
        assert schema_findings(document) == ()
        log(f"schema: {size} nodes")
        ours, theirs = paired_times(
            lambda: schema_findings(document),  # noqa: B023
            lambda: validator.validate(document),  # noqa: B023
            repeat,
        )
        rows.append(
            ratio_row(
                "schema validation vs jsonschema",
                size,
                ours,
                theirs,
                0.1 if size == 100_000 else None,
            )
        )
    return rows


# ---------------------------------------------------------------- whole processes


def runner_command() -> list[str]:
    """The installed `runner` script beside this interpreter, else `python -m runner_shell`."""
    script = Path(sys.executable).with_name("runner")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "runner_shell"]


def run(
    argv: Sequence[str], cwd: Path, env: dict[str, str] | None = None, check: bool = True
) -> str:
    result = subprocess.run(
        list(argv),
        cwd=cwd,
        env=PROCESS_ENV if env is None else env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} exited {result.returncode}: {result.stderr}")
    return result.stdout


def config_text(
    guard: Sequence[str],
    agent: Sequence[str],
    max_iterations: int = 100,
    sandbox_mode: str | None = None,
) -> str:
    def toml_list(values: Sequence[str]) -> str:
        return "[" + ", ".join(json.dumps(value) for value in values) + "]"

    sandbox = "" if sandbox_mode is None else f'\n[sandbox]\nmode = "{sandbox_mode}"\n'
    return (
        f"max_iterations = {max_iterations}\n\n"
        f"[guard]\ncommand = {toml_list(guard)}\n\n"
        f'[agent]\nbackend = "command"\ncommand = {toml_list(agent)}\n'
        f"{sandbox}"
    )


def make_repo(
    directory: Path,
    tree: str,
    guard: Sequence[str],
    agent: Sequence[str] = NOOP_AGENT,
    max_iterations: int = 100,
    sandbox_mode: str | None = None,
    extra_config: str = "",
) -> Path:
    """A git repository with a started run whose tree.json and config.toml are the given ones
    (`[sandbox] mode` the default unless `sandbox_mode` names one; `extra_config` appended)."""
    directory.mkdir(parents=True)
    run(["git", "init", "--quiet", "--initial-branch=main"], directory)
    (directory / "README.md").write_text("bench\n", encoding="utf-8")
    run(["git", *GIT_IDENTITY, "add", "-A"], directory)
    run(["git", *GIT_IDENTITY, "commit", "--quiet", "-m", "initial"], directory)
    runner = runner_command()
    run([*runner, "init"], directory)
    (directory / ".runner" / "GOAL.md").write_text("# Goal\n\nBenchmark.\n", encoding="utf-8")
    state = directory / ".runner" / "state"
    (state / "tree.json").write_text(tree, encoding="utf-8")
    (state / "config.toml").write_text(
        config_text(guard, agent, max_iterations, sandbox_mode) + extra_config, encoding="utf-8"
    )
    # In place (`--here`): the benchmark's own throw-away repository, whose files the rows read.
    run([*runner, "start", "--here"], directory)
    assert not run(["git", "status", "--porcelain"], directory), "start left a dirty tree"
    return directory


def process(
    argv: Sequence[str],
    cwd: Path,
    expect: Sequence[int] = (0,),
    timeout_secs: float | None = None,
) -> Callable[[], None]:
    """A callable running `argv` to completion, failing on an unexpected exit code (and with
    subprocess.TimeoutExpired, the process killed, past `timeout_secs`)."""

    def once() -> None:
        result = subprocess.run(
            list(argv),
            cwd=cwd,
            env=PROCESS_ENV,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout_secs,
        )
        if result.returncode not in expect:
            raise RuntimeError(f"{shlex.join(argv)} exited {result.returncode}: {result.stderr!r}")

    return once


def paired_processes(
    measured: Callable[[], None], floor: Callable[[], None], repeat: int
) -> tuple[Timing, Timing]:
    measured()  # warm the page cache and the bytecode caches
    floor()
    return paired_times(measured, floor, repeat)


# Each whole-process view on a 10k-node tree vs `json.load` of it: `status` prints a
# summary of the tree by default, so it costs about what reading the tree costs.
CLI_TARGETS = {"select": 1.5, "validate": 2.0, "status": 2.0}


def bench_cli(
    sizes: Sequence[int], repeat: int, workdir: Path, log: Callable[[str], None]
) -> list[Row]:
    rows: list[Row] = []
    runner = runner_command()
    for size in sizes:
        text = tree_text(generate_tree(size))
        if len(text.encode("utf-8")) > READ_LIMIT_BYTES:
            log(f"cli: a {size}-node tree is over the {READ_LIMIT_BYTES}-byte read limit; skipped")
            continue
        log(f"cli: repository with a {size}-node tree")
        repo = make_repo(workdir / f"cli-{size}", text, ["true"])
        tree_path = repo / ".runner" / "state" / "tree.json"
        floor = process(
            [sys.executable, "-c", f"import json; json.load(open({str(tree_path)!r}))"], repo
        )
        for command in ("select", "validate", "status"):
            measured, floor_time = paired_processes(
                process([*runner, command], repo), floor, repeat
            )
            limit = CLI_TARGETS[command] if size == 10_000 else None
            rows.append(
                ratio_row(
                    f"`runner {command}` vs python json.load", size, measured, floor_time, limit
                )
            )
        shutil.rmtree(repo)
    return rows


TYPER_HELLO_SOURCE = """import typer

app = typer.Typer()


def show_version(value: bool) -> None:
    if value:
        typer.echo("hello 1.0")
        raise typer.Exit(0)


@app.command()
def hello(
    version: bool = typer.Option(False, "--version", callback=show_version, is_eager=True),
) -> None:
    typer.echo("hello")


app()
"""


def bench_version(repeat: int, workdir: Path, log: Callable[[str], None]) -> list[Row]:
    """`runner --version` beside a typer hello-world's `--version`: start-up alone."""
    log("start: `runner --version` beside a typer hello-world's")
    hello = workdir / "typer_hello.py"
    hello.write_text(TYPER_HELLO_SOURCE, encoding="utf-8")
    measured, floor = paired_processes(
        process([*runner_command(), "--version"], workdir),
        process([sys.executable, str(hello), "--version"], workdir),
        repeat * SMALL_TREE_REPEAT_FACTOR,
    )
    return [
        ratio_row(
            "`runner --version` vs a typer hello-world's --version",
            None,
            measured,
            floor,
            1.0,
            note="both are Python scripts started by the same interpreter",
        )
    ]


def step_tree(leaves: int) -> str:
    root: dict[str, Any] = {
        "id": "root",
        "order": 0,
        "title": "Benchmark goal",
        "goal": "Pass every leaf.",
        "acceptance": ["every leaf passes"],
        "next": "decompose",
        "passes": False,
        "attempts": 0,
        "max_attempts": 3,
        "children": [],
    }
    for order in range(leaves):
        root["children"].append(
            {
                **root,
                "id": f"root.{order + 1}",
                "order": order,
                "title": f"Leaf {order + 1}",
                "next": "execute",
                "children": [],
            }
        )
    return tree_text(root)


EARLY_ITERATION = 10
# Steps of each run whose growth of .git/objects is averaged (disk.py).
OBJECTS_STEPS = 3


def bench_run_length(
    length: int, repeat: int, workdir: Path, log: Callable[[str], None]
) -> list[Row]:
    """Whether an iteration costs the same late in a run as early: iteration `length` vs 10
    (vs `length` itself in a run shorter than that, which only checks the group runs).

    Two runs of the same tree: one is stepped to iteration `length`, the other to iteration
    10 (untimed); then steps of the two alternate, so a busy moment on the machine hits both.
    """
    early_at = min(EARLY_ITERATION, length)
    log(f"run: stepping one run to iteration {length} and another to {early_at}")
    leaves = length + 2 * repeat + 10 + OBJECTS_STEPS
    late = make_repo(workdir / "run-late", step_tree(leaves), ["true"], max_iterations=leaves)
    early = make_repo(workdir / "run-early", step_tree(leaves), ["true"], max_iterations=leaves)
    for repo, count in ((late, length - 1), (early, early_at - 1)):
        for _ in range(count):
            run([*runner_command(), "step"], repo)
    measured, floor = paired_processes(
        process([*runner_command(), "step"], late),
        process([*runner_command(), "step"], early),
        repeat,
    )
    return [
        ratio_row(
            f"`runner step` at iteration {length} vs at iteration {early_at}",
            None,
            measured,
            floor,
            1.1,
            note="two runs of no-op steps, their steps alternating",
        ),
        disk.objects_row(late, early, length, early_at, OBJECTS_STEPS),
    ]


BIG_FLOOR_SOURCE = """import json, subprocess, sys
path = ".runner/state/tree.json"
with open(path, encoding="utf-8") as handle:
    tree = json.load(handle)
tree["attempts"] = tree["attempts"] + 1
with open(path, "w", encoding="utf-8") as handle:
    handle.write(json.dumps(tree, indent=2) + "\\n")
subprocess.run(["git", "add", "-A"], check=True)
identity = ["-c", "user.name=runner", "-c", "user.email=runner@localhost"]
subprocess.run(["git", *identity, "commit", "--quiet", "-m", "step"], check=True)
"""


def bench_big_step(size: int, repeat: int, workdir: Path, log: Callable[[str], None]) -> list[Row]:
    """A step on a `size`-node tree vs load, change, dump, write, add, commit; and its RSS."""
    log(f"big: `runner step` on a {size}-node tree")
    text = tree_text(generate_tree(size))
    repo = make_repo(workdir / "big", text, ["true"])
    floor_repo = make_repo(workdir / "big-floor", text, ["true"])
    floor_script = workdir / "big_floor.py"
    floor_script.write_text(BIG_FLOOR_SOURCE, encoding="utf-8")
    measured, floor = paired_processes(
        process([*runner_command(), "step"], repo),
        process([sys.executable, str(floor_script)], floor_repo),
        repeat,
    )
    peak = peak_rss_of([*runner_command(), "step"], repo)
    tree_path = repo / ".runner" / "state" / "tree.json"
    load = f"import json; json.load(open({str(tree_path)!r}))"
    json_peak = peak_rss_of([sys.executable, "-c", load], repo)
    disk_row = disk.work_tree_row(repo, size)
    return [
        ratio_row(
            "`runner step` vs load, change, dump, write, add, commit",
            size,
            measured,
            floor,
            1.3,
            note="the floor is a Python script doing exactly that with json",
        ),
        Row(
            metric="peak RSS of `runner step` vs `json.load` of the tree",
            size=size,
            runner=peak,
            floor=json_peak,
            unit="bytes",
            target="<= 2x json.load",
            met=peak <= 2 * json_peak,
            note=f"ratio {peak / json_peak:.2f}",
        ),
        disk_row,
    ]


def peak_rss_of(argv: Sequence[str], cwd: Path) -> int:
    """Peak RSS in bytes of a process and every descendant it waited for, each on its own."""
    probe = (
        "import resource, subprocess, sys\n"
        "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL,"
        " stderr=subprocess.DEVNULL).returncode\n"
        "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    code, kib = run([sys.executable, "-c", probe, *argv], cwd).split()
    if code != "0":
        raise RuntimeError(f"{shlex.join(argv)} exited {code}")
    return int(kib) * 1024


def _amount(size: int) -> str:
    return f"{size / 2**30:g} GiB" if size >= 2**30 else f"{size / 2**20:g} MiB"


def bench_rss(output_bytes: int, workdir: Path, log: Callable[[str], None]) -> list[Row]:
    """A step whose guard prints `output_bytes` (a whole number of MiB): its peak RSS and log."""
    amount = _amount(output_bytes)
    guard_script = workdir / "guard_loud.py"
    guard_script.write_text(GUARD_LOUD_SOURCE.format(output_bytes=output_bytes), encoding="utf-8")
    loud = make_repo(workdir / "rss", step_tree(4), [sys.executable, str(guard_script)])
    quiet = make_repo(workdir / "rss-floor", step_tree(4), ["true"])
    log(f"rss: one step whose guard prints {amount}, beside one whose guard prints nothing")
    started = time.perf_counter()
    peak = peak_rss_of([*runner_command(), "step"], loud)
    elapsed = time.perf_counter() - started
    floor = peak_rss_of([*runner_command(), "step"], quiet)
    logs = sorted((loud / ".runner" / "iterations").glob("*/*/guard.log"))
    assert len(logs) == 1, logs
    log_bytes = logs[0].stat().st_size
    cap = 100_000  # guard_output_limit_bytes' default, which make_repo's config keeps
    log_text = logs[0].read_text(encoding="utf-8")
    cut = re.search(r"\[truncated (\d+) bytes\]", log_text)
    printed = int(cut.group(1)) + cap if cut else 0
    assert printed == output_bytes, f"the guard printed {printed} bytes, not {amount}"
    return [
        Row(
            metric=f"peak RSS of `runner step`, guard prints {amount}",
            size=None,
            runner=peak,
            floor=floor,
            unit="bytes",
            target="<= 64 MiB",
            met=peak <= RSS_LIMIT_BYTES,
            note=f"floor: the same step with guard `true`; {amount} step took {elapsed:.1f} s",
        ),
        *bench_agent_output(output_bytes, workdir, log),
        Row(
            metric=f"guard.log size after {amount} of guard output",
            size=None,
            runner=log_bytes,
            floor=cap,
            unit="bytes",
            target=f"<= cap + {LOG_OVERHEAD_BYTES} B",
            met=log_bytes <= cap + LOG_OVERHEAD_BYTES,
            note="floor: guard_output_limit_bytes",
        ),
    ]


def bench_agent_output(output_bytes: int, workdir: Path, log: Callable[[str], None]) -> list[Row]:
    """A step whose agent prints `output_bytes` on stdout vs a no-op step plus the same agent
    piped into `cat`: what the runner adds to reading an agent's output (the capped log, the
    raw copy, the live output events), its fixed cost per step left out."""
    amount = _amount(output_bytes)
    agent_script = workdir / "agent_loud.py"
    agent_script.write_text(AGENT_LOUD_SOURCE.format(output_bytes=output_bytes), encoding="utf-8")
    agent = (sys.executable, str(agent_script))
    leaves = step_tree(2 * 4)
    loud = make_repo(workdir / "agent-loud", leaves, ["true"], agent, sandbox_mode="off")
    quiet = make_repo(workdir / "agent-quiet", leaves, ["true"], sandbox_mode="off")
    floor_dir = workdir / "agent-loud-floor"
    floor_dir.mkdir()
    output = shlex.quote(str(floor_dir / "output.json"))
    pipe = f"RUNNER_OUTPUT_PATH={output} {shlex.join(agent)} | cat > /dev/null"
    log(f"rss: one step whose agent prints {amount}, beside a no-op step + the agent into cat")
    quiet_step = process([*runner_command(), "step"], quiet)

    def floor() -> None:
        quiet_step()
        subprocess.run(["sh", "-c", pipe], cwd=floor_dir, env=PROCESS_ENV, check=True)

    measured, floor_time = paired_times(process([*runner_command(), "step"], loud), floor, 3)
    peak = peak_rss_of([*runner_command(), "step"], loud)
    floor_peak = peak_rss_of(["sh", "-c", pipe], floor_dir)
    return [
        ratio_row(
            f"`runner step` whose agent prints {amount} vs a no-op step + the agent into cat",
            None,
            measured,
            floor_time,
            AGENT_OUTPUT_TARGET,
            note="sandbox off: the sandbox's own cost is the step rows'",
        ),
        Row(
            metric=f"peak RSS of `runner step`, agent prints {amount}",
            size=None,
            runner=peak,
            floor=floor_peak,
            unit="bytes",
            target="<= 64 MiB",
            met=peak <= RSS_LIMIT_BYTES,
            note="floor: the agent piped into cat",
        ),
    ]


# ---------------------------------------------------------------- reporting


def record(row: Row) -> dict[str, Any]:
    """A row as the results file holds it."""
    return {**attrs.asdict(row), "ratio": row.ratio, "figure": row.figure}


def table(rows: Sequence[Row]) -> str:
    return bench_docs.full_table([record(row) for row in rows])


# What a results file measured, relative to the repository root.
CODE = (":/runner_core", ":/runner_shell", ":/benchmarks/*.py", ":/schemas", ":/pyproject.toml")


def machine(label: str) -> dict[str, Any]:
    """Where and what was measured: the runner_core imported, and its git commit if any."""
    measured = Path(runner_core.__file__).resolve().parent

    def git(*args: str) -> str:
        result = subprocess.run(["git", *args], cwd=measured, capture_output=True, text=True)
        return result.stdout.strip() if result.returncode == 0 else ""

    commit = git("rev-parse", "HEAD")
    return {
        "label": label or commit[:12] or str(measured),
        "runner_core": str(measured),
        "commit": commit,
        # Whether the measured code differs from the commit (docs being regenerated do not).
        "dirty": bool(commit and git("status", "--porcelain", "--untracked-files=no", *CODE)),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def compare(old_path: Path, new_path: Path) -> str:
    """The figure each target is about, from two result files, matched by metric and size."""
    old = json.loads(old_path.read_text(encoding="utf-8"))
    new = json.loads(new_path.read_text(encoding="utf-8"))
    before = {(row["metric"], row["size"]): row for row in old["results"]}
    lines = [
        f"old: {old['machine']['label']}  new: {new['machine']['label']}",
        f"{'metric':58} {'nodes':>5} {'old':>9} {'new':>9} {'new/old':>8}",
    ]
    for row in new["results"]:
        previous = before.get((row["metric"], row["size"]))
        old_figure = previous["figure"] if previous else float("nan")
        new_figure = row["figure"]
        if row["unit"] == "bytes":
            shown = f"{old_figure / 2**20:8.1f}M {new_figure / 2**20:8.1f}M"
        elif row["unit"] in ("count", "/s", "%"):
            shown = f"{old_figure:9.1f} {new_figure:9.1f}"
        else:
            shown = f"{old_figure:8.2f}x {new_figure:8.2f}x"
        change = f"{new_figure / old_figure:8.2f}"
        if previous is None:
            shown, change = f"{'-':>9} {shown.split()[1]:>9}", f"{'-':>8}"
        size = bench_docs._size(row["size"])
        lines.append(f"{row['metric']:58} {size:>5} {shown} {change}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--sizes", help="comma-separated node counts (default 1000,...,1000000)")
    parser.add_argument("--repeat", type=int, help="runs per median (default 5, quick 3)")
    parser.add_argument("--out", type=Path, help="where to write JSON (default results/latest)")
    parser.add_argument("--quick", action="store_true", help="1k and 10k nodes, 3 runs")
    parser.add_argument(
        "--only",
        default="core,schema,start,cli,step,slot,rss,parallel,proxy",
        help="comma-separated groups (core,schema,start,cli,step,slot,rss,parallel,proxy; the "
        "heavy run,big and temporal; sandbox, the cost of the sandbox per process)",
    )
    parser.add_argument(
        "--run-length", type=int, default=1000, help="steps of the `run` group (default 1000)"
    )
    parser.add_argument(
        "--big-size", type=int, default=BIG_STEP_SIZE, help="nodes of the `big` group's tree"
    )
    parser.add_argument(
        "--slot-files",
        type=int,
        default=steps.SLOT_FILES,
        help=f"files of the `slot` group's repository (default {steps.SLOT_FILES})",
    )
    parser.add_argument(
        "--guard-output",
        type=int,
        default=GUARD_OUTPUT_BYTES,
        help="bytes the `rss` group's guard prints (default 1 GiB)",
    )
    parser.add_argument(
        "--parallel-leaves",
        type=int,
        help=f"leaves of the `parallel` and `temporal` groups' tree (default {parallel.LEAVES}, "
        f"quick {parallel.QUICK_LEAVES})",
    )
    parser.add_argument(
        "--parallel-sleep",
        type=float,
        default=parallel.SLEEP_SECS,
        help=f"seconds the `parallel` and `temporal` groups' agent sleeps (default "
        f"{parallel.SLEEP_SECS:g})",
    )
    parser.add_argument(
        "--parallel-slots",
        default=",".join(map(str, parallel.SLOTS)),
        help="comma-separated `[parallel] slots` of the `parallel` group (default 1,4,8)",
    )
    parser.add_argument("--label", default="", help="name of this run (default: the commit)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"))
    parser.add_argument(
        "--write-docs",
        action="store_true",
        help="write docs/performance.json and regenerate the README's and docs' figures",
    )
    parser.add_argument(
        "--docs-from", type=Path, metavar="RESULTS", help="regenerate the docs only, from RESULTS"
    )
    parser.add_argument(
        "--ignore-targets", action="store_true", help="exit 0 even when a target is missed"
    )
    return parser.parse_args(argv)


def bench_sandbox(repeat: int, workdir: Path, log: Callable[[str], None]) -> list[Row]:
    """The sandbox's own cost per process: `true` started confined vs unconfined."""
    times = sandbox_cost.start_times(repeat, workdir, log)
    if times is None:
        return []
    sandboxed, plain = times
    return [
        ratio_row(
            "start-up of `true` sandboxed (bwrap, seccomp, limits) vs unsandboxed",
            None,
            (statistics.median(sandboxed), sandboxed),
            (statistics.median(plain), plain),
            None,
        )
    ]


def run_groups(args: argparse.Namespace, log: Callable[[str], None]) -> list[Row]:
    if args.sizes:
        sizes = tuple(int(size) for size in args.sizes.split(","))
    else:
        sizes = QUICK_SIZES if args.quick else FULL_SIZES
    groups = args.groups
    repeat = args.repeat
    process_sizes = [size for size in sizes if size <= max(PROCESS_SIZES)]
    rows: list[Row] = []
    one_slots: parallel.OneSlots = {}  # the tree's local one-slot run, shared by two groups
    leaves = args.parallel_leaves or (parallel.QUICK_LEAVES if args.quick else parallel.LEAVES)
    with tempfile.TemporaryDirectory(prefix="runner-bench-") as temp:
        workdir = Path(temp)
        if "core" in groups:
            rows += bench_core(sizes, repeat, log)
        if "schema" in groups:
            rows += bench_schema(process_sizes, repeat, log)
        if "start" in groups:
            rows += bench_version(repeat, workdir, log)
        if "cli" in groups:
            rows += bench_cli(process_sizes, repeat, workdir, log)
            rows += views.bench_views(process_sizes, repeat, workdir, log)
        if "step" in groups:
            rows += steps.bench_step(repeat, workdir, log)
        if "slot" in groups:
            rows += steps.bench_slot_reset(
                args.slot_files, steps.SLOT_FILE_BYTES, repeat, workdir, log
            )
        if "run" in groups:
            rows += bench_run_length(args.run_length, repeat, workdir, log)
        if "big" in groups:
            rows += bench_big_step(args.big_size, min(repeat, 3), workdir, log)
        if "rss" in groups:
            rows += bench_rss(args.guard_output, workdir, log)
        if "proxy" in groups:
            rows += proxy_cost.bench_proxy_round_trip(proxy_cost.REQUESTS, repeat, log)
        if "parallel" in groups:
            slot_counts = [int(slots) for slots in args.parallel_slots.split(",")]
            rows += parallel.bench_parallel(
                leaves, args.parallel_sleep, slot_counts, repeat, workdir, log, one_slots
            )
        if "sandbox" in groups:
            rows += bench_sandbox(repeat, workdir, log)
        if "temporal" in groups:
            rows += temporal_runs.bench_temporal(
                leaves, args.parallel_sleep, repeat, workdir, log, one_slots
            )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print the table, write the results; 1 when a row misses its target."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if args.compare:
        print(compare(*args.compare))
        return 0
    if args.docs_from:
        for path in bench_docs.write_docs(args.docs_from):
            print(f"rewrote {path.relative_to(bench_docs.ROOT)}")
        return 0
    args.repeat = args.repeat or (3 if args.quick else 5)
    args.groups = set(args.only.split(","))

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    started = time.perf_counter()
    rows = run_groups(args, log)
    elapsed = time.perf_counter() - started
    print(table(rows))
    results = {
        "command": shlex.join(["python", "benchmarks/bench.py", *argv]),
        "machine": machine(args.label),
        "args": {"sizes": args.sizes, "repeat": args.repeat, "groups": sorted(args.groups)},
        "elapsed_s": round(elapsed, 1),
        "results": [record(row) for row in rows],
    }
    out = args.out or (bench_docs.RESULTS if args.write_docs else DEFAULT_OUT)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    log(f"done in {elapsed:.0f} s; results in {out}")
    if args.write_docs:
        for path in bench_docs.write_docs(out):
            log(f"rewrote {path.relative_to(bench_docs.ROOT)}")
    for row in rows:
        if row.met is False:
            log(f"target missed: {row.metric} ({bench_docs._size(row.size)}): {row.target}")
    return exit_code(rows, args.ignore_targets)


def exit_code(rows: Sequence[Row], ignore_targets: bool) -> int:
    """1 when a row misses its target: a benchmark run is a check of every target."""
    return 1 if not ignore_targets and any(row.met is False for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
