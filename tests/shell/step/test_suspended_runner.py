"""Time the runner spends stopped (Ctrl-Z, SIGSTOP) is not taken from its child's share: a
child that would have finished within its deadline is not killed as timed out because the
runner waiting for it was stopped meanwhile."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import ROOT

CHILD = "import time; open('started', 'w').close(); time.sleep(3); print('finished')"
WATCHER = f"""
import json, os, sys
from pathlib import Path
from runner_shell.sandbox.processes import run_process
result = run_process(
    [sys.executable, "-c", {CHILD!r}],
    cwd=Path.cwd(), env=dict(os.environ), stdin_path=None, timeout_secs=2.0,
    log_path=Path(sys.argv[1]), limit_bytes=10_000,
)
print(json.dumps({{"timed_out": result.timed_out, "exit_code": result.exit_code}}))
"""


def test_a_child_keeps_its_share_while_the_runner_is_stopped(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    watcher = subprocess.Popen(
        [sys.executable, "-c", WATCHER, str(tmp_path / "child.log")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30  # a loaded machine may take long to start them
    while not (tmp_path / "started").exists():
        assert watcher.poll() is None and time.monotonic() < deadline, "the child never started"
        time.sleep(0.05)
    time.sleep(0.3)  # the watcher waits for the child
    os.kill(watcher.pid, signal.SIGSTOP)
    try:
        time.sleep(4.0)  # past the child's 2 s deadline, while the child runs on
    finally:
        os.kill(watcher.pid, signal.SIGCONT)
    out, _ = watcher.communicate(timeout=30)

    assert '"timed_out": false' in out, out
    assert '"exit_code": 0' in out
    assert "finished" in (tmp_path / "child.log").read_text(encoding="utf-8")
