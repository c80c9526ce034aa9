"""A parallel loop whose jobs run on a worker's job in this very process: an executor that hands
each request straight to `runner_shell.remote.worker_job.run_job` when asked for its result,
and `runner loop` run in this process with its jobs sent to it. The transport is Temporal's
(tests/temporal); these tests pin what a job run elsewhere does with its request and answer."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from runner_shell.loop import parallel_loop
from runner_shell.loop.night_loop import LoopRun
from runner_shell.loop.parallel_merges import ParallelLoop
from runner_shell.remote.coordinator import RemoteJobs
from runner_shell.remote.live_events import JobProgress
from tests.helpers.e2e import Project


@attrs.define
class InProcess:
    """An executor that runs each job on `worker` (a function of the request) when asked for
    its result; it keeps every request and answer it carried."""

    worker: Callable[[str], str]
    asked: dict[str, str] = attrs.field(factory=dict)
    answered: dict[str, str] = attrs.field(factory=dict)

    def submit(self, job_id: str, request_json: str) -> None:
        self.asked.setdefault(job_id, request_json)

    def result(self, job_id: str, timeout_secs: float) -> str:
        self.answered[job_id] = self.worker(self.asked[job_id])
        return self.answered[job_id]

    def workers(self) -> tuple[object, ...]:
        return ("this process",)

    def progress(self, job_id: str) -> JobProgress | None:
        return None  # its jobs run in `result`: none is pending while the loop looks

    def cancel(self, job_id: str) -> bool:
        return False  # its jobs ran to their end in `result`: none is running

    def close(self) -> None:
        pass


def bare(path: Path) -> str:
    subprocess.run(["git", "init", "--bare", "--quiet", str(path)], check=True)
    return str(path)


def loop_in_process(project: Project, sent_to: RemoteJobs, monkeypatch: pytest.MonkeyPatch) -> int:
    """`runner loop` in this process, its jobs sent to `remote`."""

    def remote_loop(
        run: LoopRun, slots: int, max_steps: int | None, remote: RemoteJobs | None
    ) -> ParallelLoop:
        del remote  # the config's: local
        return ParallelLoop(run, slots, max_steps, remote=sent_to)

    monkeypatch.setattr(parallel_loop, "ParallelLoop", remote_loop)
    monkeypatch.chdir(project.root)
    for key, value in project.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(sys, "argv", ["runner", "loop"])
    from runner_shell.cli.entry import main

    with pytest.raises(SystemExit) as ended:
        main()
    return int(ended.value.code or 0)
