"""The `serve` row of bench.py's `cli` group: what `runner serve` costs while nothing happens.

A page left open on a long run is the common case: the server should sleep between its polls,
not re-read the run. The row starts `runner serve` on the views group's long run (with one event
per iteration in its `events.jsonl`, as a loop leaves), connects an event-stream client at once,
lets the server settle, then reads the CPU time the server used over an idle window from
/proc. The floor is `python -m http.server`, idle over the same window. The client must still
be connected at the end: a server that replays a long run's events into its clients drops them.
"""

from __future__ import annotations

import http.client
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import bench

from runner_core.loop.events import EventOrigin, event_line, operator

IDLE_SECS = 10.0
SETTLE_SECS = 3.0
START_SECS = 60.0
IDLE_TARGET_PERCENT = 2.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid`, all its threads, from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat
    return ticks / 100.0  # USER_HZ is 100 on Linux


def write_events(repo: Path, run_dir: str, iterations: int) -> None:
    """One event per iteration in the run's events.jsonl, as a loop would have left."""
    run_id = Path(run_dir).name
    lines = (
        event_line(operator(EventOrigin(run_id, n, None, "2026-01-01T00:00:00Z"), "tell", "hi"))
        for n in range(1, iterations + 1)
    )
    (Path(run_dir) / "events.jsonl").write_text("".join(lines), encoding="utf-8")


def wait_until_answering(port: int, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_SECS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited {server.returncode} before answering")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/")
            if connection.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing answered on port {port} within {START_SECS:.0f} s")


class StreamClient:
    """An `/api/events` subscriber reading in a thread; `open` is false once the server hung up."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.connection.request("GET", "/api/events")
        self.response = self.connection.getresponse()
        self.messages = 0
        self.open = True
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for line in self.response:
                if line.startswith(b"event: "):
                    self.messages += 1
        except OSError:
            pass
        self.open = False


def idle_share(argv: Sequence[str], cwd: Path, port: int, client: bool) -> tuple[float, bool]:
    """The share of one core (percent) the server at `argv` uses over IDLE_SECS once settled,
    and whether an early client is still connected at the end (True without a client)."""
    server = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=bench.PROCESS_ENV,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until_answering(port, server)
        stream = StreamClient(port) if client else None
        time.sleep(SETTLE_SECS)
        before = cpu_seconds(server.pid)
        time.sleep(IDLE_SECS)
        share = (cpu_seconds(server.pid) - before) / IDLE_SECS * 100
        return share, stream is None or stream.open
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def bench_serve_idle(
    repo: Path, run_dir: str, iterations: int, log: Callable[[str], None]
) -> bench.Row:
    log(f"cli: `runner serve` idle on a run of {iterations} iterations")
    write_events(repo, run_dir, iterations)
    port = free_port()
    share, connected = idle_share(
        [*bench.runner_command(), "serve", "--port", str(port)], repo, port, client=True
    )
    if not connected:
        raise RuntimeError("`runner serve` dropped a client that connected at once")
    floor_port = free_port()
    floor, _ = idle_share(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(floor_port)],
        repo,
        floor_port,
        client=False,
    )
    return bench.Row(
        metric=f"`runner serve` idle at {iterations // 1000}k iterations, % of a core",
        size=None,
        runner=share,
        floor=floor,
        unit="%",
        target=f"<= {IDLE_TARGET_PERCENT:g}%",
        met=share <= IDLE_TARGET_PERCENT,
        note="floor: python -m http.server, idle; an event-stream client connected at once",
    )


# `runner serve` beside a loop on a long run: the loop's steps, and what the server
# may spend on them, against the loop's own CPU (its children, the agent and git, included).
LOOP_STEPS = 5
LOOP_TARGET = 0.1


def total_cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid` and of the children it has waited for."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return sum(int(field) for field in fields[11:15]) / 100.0  # utime stime cutime cstime


def bench_serve_loop(
    repo: Path, iterations: int, log: Callable[[str], None], target: bool
) -> bench.Row:
    """One page open (an event-stream client) on `runner serve` while `runner loop` takes
    LOOP_STEPS steps on a run of `iterations` iterations: the server's CPU over the loop and
    until it has settled after it, vs the loop's."""
    import resource

    log(f"cli: `runner serve` during {LOOP_STEPS} loop steps at {iterations} iterations")
    config = repo / ".runner" / "state" / "config.toml"
    text = config.read_text(encoding="utf-8")
    limit = f"max_iterations = {iterations + 10 * LOOP_STEPS}"
    config.write_text(re.sub(r"(?m)^max_iterations = \d+$", limit, text), encoding="utf-8")
    bench.run(["git", *bench.GIT_IDENTITY, "commit", "--quiet", "-am", "bench: room"], repo)
    port = free_port()
    server = subprocess.Popen(
        [*bench.runner_command(), "serve", "--port", str(port)],
        cwd=repo,
        env=bench.PROCESS_ENV,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until_answering(port, server)
        stream = StreamClient(port)
        time.sleep(SETTLE_SECS)
        server_before = total_cpu_seconds(server.pid)
        children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [*bench.runner_command(), "loop", "--max-steps", str(LOOP_STEPS)],
            cwd=repo,
            env=bench.PROCESS_ENV,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=True,
        )
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        time.sleep(SETTLE_SECS)  # the server reads the loop's last change
        served = total_cpu_seconds(server.pid) - server_before
        if not stream.open:
            raise RuntimeError("`runner serve` dropped its client during the loop")
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    looped = (children_after.ru_utime + children_after.ru_stime) - (
        children_before.ru_utime + children_before.ru_stime
    )
    ratio = served / looped if looped > 0 else float("inf")
    # Shown as a ratio of CPU seconds: the `s` unit makes the figure runner / floor.
    return bench.Row(
        metric=f"`runner serve` (one page open) during `runner loop` at {iterations} "
        "iterations: its CPU vs the loop's",
        size=None,
        runner=served,
        floor=looped,
        unit="s",
        target=f"<= {LOOP_TARGET:g}x" if target else "",
        met=ratio <= LOOP_TARGET if target else None,
        note=f"{LOOP_STEPS} no-op steps; the server's CPU includes its git processes",
    )
