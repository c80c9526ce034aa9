"""What the `runner serve` tests share: a free port, a real server process, an SSE reader."""

from __future__ import annotations

import contextlib
import json
import resource
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx2 as httpx

from tests.helpers.e2e import PYTHON, Project, ProjectFactory, node

LEAVES = 3


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def leaves_tree(count: int = LEAVES) -> dict[str, Any]:
    """A root already decomposed into `count` leaves, each done in one iteration."""
    children = [node(f"root.{n}", order=n, title=f"Leaf {n}") for n in range(1, count + 1)]
    return node("root", title="Project goal", children=children)


def script_leaves(
    project: Project, count: int, sleep: float, usage: dict[str, Any] | None = None
) -> None:
    """Agent: iteration n finishes leaf n after `sleep` seconds, printing a line and reporting
    `usage` (tokens, cost) if given; guard passes."""
    project.agent_script(
        {
            n: {
                "stdout": f"working on leaf {n}\n",
                "sleep": sleep,
                "output": {"status": "done", "summary": f"Leaf {n} done."},
                **({"usage": usage} if usage is not None else {}),
            }
            for n in range(1, count + 1)
        }
    )
    project.guard_script([{"stdout": "ok\n"}])


def serve_process(project: Project, *options: str) -> subprocess.Popen[str]:
    """`runner serve OPTIONS` started in the project, its output piped."""
    return subprocess.Popen(
        [PYTHON, "-m", "runner_shell", "serve", *options],
        cwd=project.root,
        env=project.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@contextlib.contextmanager
def serving(project: Project, port: int) -> Iterator[str]:
    """A real `runner serve` process on `port`; yields its base URL once it answers."""
    process = serve_process(project, "--port", str(port))
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(process, base)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


def wait_until_answering(process: subprocess.Popen[str], base: str) -> None:
    """Returns once the server at `base` answers `/api/status`, at most 20 s."""
    deadline = time.monotonic() + 20
    while True:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{base}/api/status", timeout=2).status_code == 200:
                return
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "runner serve did not answer in 20 s"
        time.sleep(0.1)


@attrs.define
class SseReader:
    """Reads `/api/events` in a thread, keeping every (id, event, data) it receives."""

    url: str
    messages: list[tuple[int | None, str, str]] = attrs.field(factory=list)
    said_hello: threading.Event = attrs.field(factory=threading.Event)
    hello: dict[str, Any] | None = None
    stop: threading.Event = attrs.field(factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> SseReader:
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        return self

    def _read(self) -> None:
        # The server closing the stream when it stops is the end of the reading, not an error.
        with contextlib.suppress(httpx.TransportError):
            self._read_messages()

    def _read_messages(self) -> None:
        fields: dict[str, str] = {}
        with httpx.stream("GET", self.url, timeout=None) as answer:
            for line in answer.iter_lines():
                if self.stop.is_set():
                    return
                if line.startswith(":"):
                    continue
                if line:
                    key, _, value = line.partition(": ")
                    fields[key] = value
                    continue
                if fields.get("event") == "hello":
                    self.hello = json.loads(fields.get("data", "null"))
                    self.said_hello.set()
                elif "event" in fields:
                    ident = int(fields["id"]) if "id" in fields else None
                    self.messages.append((ident, fields["event"], fields.get("data", "")))
                fields = {}

    def events(self, name: str) -> list[dict[str, Any]]:
        return [json.loads(data) for _, event, data in list(self.messages) if event == name]


# Far more than the server needs, far less than a 300 MB line read whole.
MEMORY_CAP_BYTES = 1024 * 1024 * 1024


def completed_one_leaf(tmp_path: Path, make_project: ProjectFactory) -> Project:
    """A run a real loop completed: one leaf, done in one iteration."""
    project = make_project(tmp_path, "started")
    project.prepare(leaves_tree(1))
    script_leaves(project, 1, sleep=0)
    assert project.runner("loop").returncode == 0
    return project


def events_log(project: Project) -> Path:
    return project.runner_dir / "iterations" / project.run_id / "events.jsonl"


@contextlib.contextmanager
def capped_server(project: Project) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A real `runner serve` with its address space capped; yields it and its base URL."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))

    base = f"http://127.0.0.1:{free_port()}"
    process = subprocess.Popen(
        [PYTHON, "-m", "runner_shell", "serve", "--port", base.rsplit(":", 1)[1]],
        cwd=project.root,
        env=project.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=cap,
    )
    try:
        wait_until_answering(process, base)
        yield process, base
    finally:
        if process.poll() is None:
            process.terminate()
        process.communicate(timeout=10)
