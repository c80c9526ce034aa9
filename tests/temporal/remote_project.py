"""A run on `runner worker` processes the tests in tests/temporal drive: a project whose
`[executor]` sends its jobs to a task queue of its own, the bare repository it shares with its
workers, and the workers, each with a work directory of its own."""

from __future__ import annotations

import itertools
import signal
import subprocess
import time
import tomllib
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from runner_shell.remote.keys import new_key_file
from tests.helpers.e2e import PYTHON, Project, ProjectFactory, node
from tests.temporal.conftest import TemporalServer

DONE = {"status": "done", "summary": "did it"}
LEAVES = [f"root.{n}" for n in range(1, 6)]
TREE = node(
    "root",
    next_="decompose",
    children=[node(leaf, order=n) for n, leaf in enumerate(LEAVES)],
)
SCRIPT: dict[tuple[str, int], dict[str, object]] = {
    (leaf, 1): {"files": {f"{leaf}.txt": f"{leaf}\n"}, "output": DONE} for leaf in LEAVES
}
_QUEUES = itertools.count()
DISHONEST = Path(__file__).with_name("dishonest_worker.py")


def bare(path: Path) -> str:
    subprocess.run(["git", "init", "--bare", "--quiet", str(path)], check=True)
    return str(path)


class Workers:
    """`runner worker` processes on one task queue, each with a work directory of its own."""

    def __init__(self, project: Project, server: TemporalServer, queue: str, url: str) -> None:
        self.project, self.server, self.queue, self.url = project, server, queue, url
        self.address = server.address  # where they reach the server (a TLS front, ...)
        self.key_file = Path(executor_table(project)["key_file"])
        self.processes: list[subprocess.Popen[str]] = []

    def start(
        self,
        name: str,
        lying: str | None = None,
        extra: Sequence[str] = (),
        prefix: Sequence[str] = (),
    ) -> subprocess.Popen[str]:
        """An honest `runner worker` (with `extra` options, started as `prefix` says: on a
        machine of its own), or with `lying` one of dishonest_worker.py's MODEs."""
        runner = ["-m", "runner_shell"] if lying is None else [str(DISHONEST), lying]
        argv = [*prefix, PYTHON, *runner, "worker", "--address", self.address, *extra]
        argv += ["--task-queue", self.queue, "--repo-url", self.url, "--identity", name]
        argv += ["--dir", str(self.project.harness.parent / name), "--key-file", str(self.key_file)]
        # The worker's own sandbox (the request's [sandbox] is not its): the scripted agent
        # writes its records in the harness.
        argv += ["--writable", str(self.project.harness)]
        process = subprocess.Popen(
            argv,
            cwd=self.project.harness.parent,
            env=self.project.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        assert process.stdout is not None
        assert "worker: polling" in process.stdout.readline()
        self.processes.append(process)
        return process

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


SENT_SECS = 60.0


def until_sent(project: Project, count: int, pattern: str = "*.request") -> None:
    """Until `count` remote jobs have their files of `pattern` beside the loop's journals;
    fails the test when they are not there within SENT_SECS (what follows assumes them)."""
    kept = project.root / ".git" / "runner-jobs"
    deadline = time.monotonic() + SENT_SECS
    while (found := len(list(kept.glob(pattern)))) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"{found} of {count} jobs' {pattern} sent in {SENT_SECS:g} s")
        time.sleep(0.05)


def executor_table(project: Project) -> dict[str, str]:
    config = tomllib.loads(project.config_path.read_text(encoding="utf-8"))
    table = config["executor"]
    assert isinstance(table, dict)
    return table


def remote_project(
    base: Path, make_project: ProjectFactory, server: TemporalServer
) -> tuple[Project, str, str]:
    base.mkdir()
    project = make_project(base, "started")
    queue = f"loop-{next(_QUEUES)}"
    url = bare(base / "shared.git")
    key_file = base / "job.key"
    new_key_file(key_file)
    executor = {"kind": "temporal", "address": server.address, "task_queue": queue}
    executor["key_file"] = str(key_file)
    project.prepare(TREE, parallel={"slots": 4}, executor={**executor, "remote": url})
    project.agent_script_by_node(SCRIPT)
    return project, queue, url


@pytest.fixture
def remote(
    tmp_path: Path, make_project: ProjectFactory, temporal_server: TemporalServer
) -> Iterator[tuple[Project, Workers]]:
    project, queue, url = remote_project(tmp_path / "remote", make_project, temporal_server)
    workers = Workers(project, temporal_server, queue, url)
    try:
        yield project, workers
    finally:
        workers.stop()
