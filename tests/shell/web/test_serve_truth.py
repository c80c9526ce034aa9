"""`runner serve` beside a real four-slot `runner loop`: what it says on its stderr and on its
page is true while iterations are in progress (none is called interrupted)."""

from __future__ import annotations

import subprocess
import threading
import time

import httpx2 as httpx

from tests.e2e.test_parallel_loop import _flat_tree, _setup
from tests.helpers.e2e import PYTHON, Project
from tests.helpers.serve import free_port, serve_process, wait_until_answering

LEAVES = tuple(f"n{index}" for index in range(1, 9))


def four_slot_run(project: Project, seconds: float) -> None:
    """Eight leaves, four slots, each agent sleeping `seconds`."""
    actions = {leaf: [{"files": {f"{leaf}.txt": f"{leaf}\n"}, "sleep": seconds}] for leaf in LEAVES}
    _setup(project, _flat_tree(list(LEAVES)), actions, slots=4)


def test_serve_never_calls_an_iteration_in_progress_interrupted(project: Project) -> None:
    four_slot_run(project, 1.5)
    port = free_port()
    server = serve_process(project, "--port", str(port))
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(server, base)
        done = threading.Event()
        reader = threading.Thread(target=_read_pages, args=(base, done), daemon=True)
        reader.start()
        loop = subprocess.run(
            [PYTHON, "-m", "runner_shell", "loop"],
            cwd=project.root,
            env=project.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        done.set()
        reader.join(timeout=10)
        assert loop.returncode == 0, loop.stderr
        time.sleep(1.0)  # the server's last polls
        assert httpx.get(f"{base}/api/overview", timeout=5).json()["state"] == "complete"
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=10)
    assert "interrupted" not in stderr, stderr


def _read_pages(base: str, done: threading.Event) -> None:
    """What an open page reads while the loop runs: the documents, again and again."""
    with httpx.Client(base_url=base, timeout=10) as client:
        while not done.is_set():
            for path in ("/api/status", "/api/history", "/api/overview", "/api/nodes/n1"):
                client.get(path)
