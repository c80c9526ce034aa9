"""The read-side rows of bench.py's `cli` group: `runner status`, `history` and `report` on a run
of many iterations, each beside a floor that reads every record once.

Stepping a run 10,000 times would take most of an hour, so the run is written directly: a
started run, then an iteration directory per iteration (meta.json as a step writes it, a small
output.json and guard.log), one commit per iteration on the run branch with the trailers a step
writes (by `git fast-import`, sharing the start commit's tree), and a run_state.json whose
next_iter and execution counts match. The floor is what any reader of the same records must do:
a Python process listing the run directory, parsing each meta.json once, and running the
`git log` the views run for the operator commits.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import bench
import bench_docs
import serve

# The views rows run at sizes up to this many iterations (their repositories' files and
# commits are written per iteration).
MAX_ITERATIONS = 10_000
TARGET_ITERATIONS = 10_000
VIEWS_TARGET = 1.5
LEAVES = 100  # the run's tree: one root with this many leaves, executed in turn

VIEWS_FLOOR_SOURCE = """import json, os, subprocess, sys
run_dir, branch = sys.argv[1], sys.argv[2]
records = []
for name in os.listdir(run_dir):
    if name.isdigit():
        with open(os.path.join(run_dir, name, "meta.json"), encoding="utf-8") as handle:
            records.append(json.load(handle))
subprocess.run(
    ["git", "log", "--reverse", "-z", "--grep=^Runner-Op: ", "--format=%B", branch],
    check=True, capture_output=True,
)
"""


def _meta(run_id: str, iteration: int) -> dict[str, Any]:
    node = (iteration - 1) % LEAVES + 1
    failed = iteration % 10 == 0
    seconds = iteration % 60
    return {
        "run_id": run_id,
        "iter": iteration,
        "node_id": f"root.{node}",
        "role": "executor",
        "status": "done",
        "guard": "fail" if failed else "pass",
        "execution": (iteration - 1) // LEAVES + 1,
        "started_at": f"2026-01-01T00:00:{seconds:02d}.000Z",
        "ended_at": f"2026-01-01T00:00:{seconds:02d}.500Z",
        "duration_ms": 500 + iteration % 997,
        "error_kind": None,
        "error": None,
        "tokens": {"input": 1000 + iteration, "output": 200, "cached": 50},
        "cost_usd": 0.01,
        "attempts_before": 0,
        "attempts_after": 1 if failed else 0,
        "backend": "command",
    }


def _message(meta: dict[str, Any]) -> str:
    run, iteration, node = meta["run_id"], meta["iter"], meta["node_id"]
    status, guard = meta["status"], meta["guard"]
    return (
        f"chore(loop): run {run} iter {iteration} node {node} status={status} guard={guard}\n\n"
        f"Runner-Run: {run}\nRunner-Iter: {iteration}\nRunner-Node: {node}\n"
        f"Runner-Status: {status}\nRunner-Guard: {guard}\nRunner-Role: executor\n"
        f"Runner-Exec: {meta['execution']}\nRunner-Started-At: {meta['started_at']}\n"
        f"Runner-Ended-At: {meta['ended_at']}\nRunner-Duration-Ms: {meta['duration_ms']}\n"
        f"Runner-Attempts: {meta['attempts_before']}/{meta['attempts_after']}\n"
        "Runner-Backend: command\n"
    )


def _commit_iterations(repo: Path, branch: str, metas: Sequence[dict[str, Any]]) -> None:
    """One commit per iteration on `branch`, each with the start commit's tree."""
    parent = bench.run(["git", "rev-parse", "HEAD"], repo).strip()
    stream: list[bytes] = []
    for number, meta in enumerate(metas, 1):
        message = _message(meta).encode("utf-8")
        stream.append(
            f"commit refs/heads/{branch}\n"
            f"committer runner <runner@localhost> {1_767_225_600 + number} +0000\n"
            f"data {len(message)}\n".encode()
            + message
            + (f"from {parent}\n\n".encode() if number == 1 else b"\n")
        )
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(stream), check=True)
    bench.run(["git", "reset", "--quiet", "--hard", branch], repo)


def make_long_run(directory: Path, iterations: int) -> tuple[Path, str, str]:
    """A repository whose run has `iterations` iterations; its run directory and branch."""
    repo = bench.make_repo(directory, bench.step_tree(LEAVES), ["true"])
    state_path = repo / ".runner" / "state" / "run_state.json"
    state = json.loads(state_path.read_text(encoding="utf-8"))
    run_id = state["run_id"]
    branch = bench.run(["git", "symbolic-ref", "--short", "HEAD"], repo).strip()
    run_dir = repo / ".runner" / "iterations" / run_id
    metas = [_meta(run_id, iteration) for iteration in range(1, iterations + 1)]
    for meta in metas:
        iteration_dir = run_dir / str(meta["iter"])
        iteration_dir.mkdir(parents=True)
        (iteration_dir / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
        (iteration_dir / "output.json").write_text('{"status": "done", "summary": "no-op"}\n')
        (iteration_dir / "guard.log").write_text("")
    _commit_iterations(repo, branch, metas)
    executions: dict[str, int] = {}
    for meta in metas:
        executions[meta["node_id"]] = executions.get(meta["node_id"], 0) + 1
    last = metas[-1] if metas else None
    state.update(
        next_iter=iterations + 1,
        last_status=None if last is None else last["status"],
        last_guard=None if last is None else last["guard"],
        executions=executions,
    )
    state_path.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    bench.run(["git", *bench.GIT_IDENTITY, "commit", "--quiet", "-am", "bench: run state"], repo)
    return repo, str(run_dir), branch


def bench_views(
    sizes: Sequence[int], repeat: int, workdir: Path, log: Callable[[str], None]
) -> list[bench.Row]:
    """`runner status`, `history` and `report` on a run of `size` iterations, each beside a
    process reading every meta.json once and running the same `git log`."""
    rows: list[bench.Row] = []
    floor_script = workdir / "views_floor.py"
    floor_script.write_text(VIEWS_FLOOR_SOURCE, encoding="utf-8")
    run_sizes = [size for size in sizes if size <= MAX_ITERATIONS]
    for size in run_sizes:
        log(f"cli: a run of {size} iterations")
        repo, run_dir, branch = make_long_run(workdir / f"views-{size}", size)
        floor = bench.process([sys.executable, str(floor_script), run_dir, branch], repo)
        for command in ("status", "history", "report"):
            measured, floor_time = bench.paired_processes(
                bench.process([*bench.runner_command(), command], repo), floor, repeat
            )
            limit = VIEWS_TARGET if size == TARGET_ITERATIONS else None
            rows.append(
                bench.ratio_row(
                    f"`runner {command}` at {bench_docs._size(size)} iterations vs "
                    "reading each meta.json once + the same git log",
                    None,
                    measured,
                    floor_time,
                    limit,
                )
            )
        if size == TARGET_ITERATIONS:
            rows.append(serve.bench_serve_idle(repo, run_dir, size, log))
        if size == max(run_sizes):  # last: the loop adds iterations to this run
            rows.append(serve.bench_serve_loop(repo, size, log, size == TARGET_ITERATIONS))
    return rows
