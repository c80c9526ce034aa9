"""The sandbox's own cost per process: `true` started by the runner confined and not.

Both go through `run_process`, the runner's only way to start an agent or a guard, with the
confinement an agent gets (`Sandbox.confine`: its user namespace, the listed system, the
seccomp filter, the limits); the floor is the same `true` unconfined. The row is the `sandbox`
group (`--only sandbox`); without a working bubblewrap it is skipped.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

from runner_core.run.config import Config
from runner_shell.sandbox.processes import run_process
from runner_shell.sandbox.status import sandbox_status
from runner_shell.scratch.sandbox import Sandbox

TRUE = "/usr/bin/true" if Path("/usr/bin/true").exists() else "/bin/true"
ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}


def start_times(
    repeat: int, workdir: Path, log: Callable[[str], None]
) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """Seconds of `repeat` sandboxed and unsandboxed starts of `true`, alternating; None
    without a working bubblewrap."""
    status = sandbox_status(Config())
    if status.bwrap is None:
        log(f"sandbox: bubblewrap not usable ({status.problem}); skipped")
        return None
    work = workdir / "sandbox-cost" / "work"
    work.mkdir(parents=True, exist_ok=True)
    box = Sandbox(status, (), workdir / "sandbox-cost" / "homes")
    confinement = box.confine([TRUE], work, None, network=True, home_name="agent")
    log_path = workdir / "sandbox-cost" / "true.log"

    def start(confined: bool) -> float:
        began = time.perf_counter()
        run_process(
            [TRUE],
            cwd=work,
            env=ENV,
            stdin_path=None,
            timeout_secs=30,
            log_path=log_path,
            limit_bytes=1000,
            confinement=confinement if confined else None,
        )
        return time.perf_counter() - began

    start(True)  # the page cache, the filter
    start(False)
    sandboxed: list[float] = []
    plain: list[float] = []
    for _ in range(max(repeat, 5) * 4):
        sandboxed.append(start(True))
        plain.append(start(False))
    log(
        f"sandbox: true sandboxed {statistics.median(sandboxed) * 1000:.1f} ms, "
        f"unsandboxed {statistics.median(plain) * 1000:.1f} ms"
    )
    return tuple(sandboxed), tuple(plain)
