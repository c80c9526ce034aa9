"""A worker keeps its own rules (docs/temporal.md, "The worker's own rules"): its sandbox is
its own whatever a request says, a request's hooks never run on it, its guard reaches the
network only when the worker allows it, and with `--allow-command` set an argv that matches
none is refused before anything runs."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import attrs
import pytest

from runner_core.iteration.facts import IterationFacts
from runner_shell.remote import wire
from runner_shell.remote.errors import JobRefused
from runner_shell.remote.worker_job import run_job
from runner_shell.remote.worker_rules import (
    WorkerRules,
    job_commands,
    refused_command,
    worker_config,
)
from tests.helpers import ROOT
from tests.helpers.e2e import PYTHON
from tests.temporal.forged import forged_request

CLI_SECS = 60


def test_a_request_cannot_turn_the_workers_sandbox_off_or_widen_it(tmp_path: Path) -> None:
    request = forged_request(tmp_path / "ran", sandbox="off")
    config = wire.loads(request.facts, IterationFacts).config
    assert (config.sandbox.mode, config.sandbox.writable) == ("off", ("/",))

    own = worker_config(config, WorkerRules("bwrap", read_only=("/opt/tools",)))

    assert own.sandbox.mode == "bwrap"
    assert (own.sandbox.writable, own.sandbox.read_only) == ((), ("/opt/tools",))
    assert own.hooks.on_iteration == ()
    assert own.agent_command == config.agent_command  # what the worker cannot know is kept
    assert own.guard_command == config.guard_command


@pytest.mark.parametrize(
    ("asked", "allowed", "guard_network"),
    [
        (True, True, True),
        (True, False, False),
        (False, True, False),
    ],
)
def test_a_guard_reaches_the_network_only_when_the_worker_allows_it(
    tmp_path: Path, asked: bool, allowed: bool, guard_network: bool
) -> None:
    config = wire.loads(forged_request(tmp_path / "x").facts, IterationFacts).config
    config = attrs.evolve(config, guard_network=asked)

    rules = WorkerRules(guard_network=allowed)
    assert worker_config(config, rules).guard_network is guard_network


def test_an_argv_no_allow_command_matches_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "ran"
    request = forged_request(marker)
    rules = WorkerRules("auto", allow_commands=("codex exec *", "just ci"))

    with pytest.raises(JobRefused) as refused:
        run_job(tmp_path / "work", "file:///nowhere", request.to_json(), print, rules)

    assert str(refused.value) == (
        f"job 1: its agent command \"sh -c 'touch {marker}'\" "
        "matches no --allow-command of this worker"
    )
    assert not marker.exists() and not (tmp_path / "work").exists()


def test_allow_command_patterns_cover_the_agent_the_guard_and_the_setup(tmp_path: Path) -> None:
    config = wire.loads(forged_request(tmp_path / "m").facts, IterationFacts).config
    whats = [what for what, _ in job_commands(config)]
    assert whats == ["agent command", "guard command"]

    assert refused_command(config, WorkerRules()) is None  # no list: any argv
    assert refused_command(config, WorkerRules(allow_commands=("sh -c *",))) is None
    only_agent = WorkerRules(allow_commands=(f"sh -c 'touch {tmp_path / 'm'}' never",))
    assert refused_command(config, only_agent) is not None


def _runner(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "runner_shell", *arguments],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=CLI_SECS,
    )


def test_workers_new_key_writes_a_0600_key_and_never_overwrites_one(tmp_path: Path) -> None:
    made = _runner("workers", "--new-key", str(tmp_path / "job.key"), cwd=tmp_path)
    again = _runner("workers", "--new-key", str(tmp_path / "job.key"), cwd=tmp_path)

    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("workers: new key ") and made.stdout.count("\n") == 1
    assert (tmp_path / "job.key").stat().st_mode & 0o777 == 0o600
    assert (again.returncode, again.stdout) == (1, "")
    assert (
        again.stderr
        == f"runner: {tmp_path / 'job.key'}: already exists; a key file is never overwritten\n"
    )


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        ((), "--key-file: the key jobs are sealed with is required; make one with"),
        (("--key-file", "KEY", "--sandbox", "off"), "--sandbox: must be bwrap or auto, got 'off'"),
        (("--key-file", "KEY", "--writable", "rel"), "--writable: must be an absolute path"),
        (("--key-file", "LOOSE"), "mode 0644 lets others read it"),
    ],
)
def test_a_worker_refuses_to_start_without_its_own_rules_in_one_line(
    tmp_path: Path, extra: tuple[str, ...], line: str
) -> None:
    new_key = tmp_path / "job.key"
    loose = tmp_path / "loose.key"
    for path in (new_key, loose):
        _runner("workers", "--new-key", str(path), cwd=tmp_path)
    loose.chmod(0o644)
    named = {"KEY": str(new_key), "LOOSE": str(loose)}
    argv = [named.get(arg, arg) for arg in extra]

    result = _runner(
        "worker",
        "--address",
        "127.0.0.1:1",
        "--task-queue",
        "q",
        "--repo-url",
        "u",
        *argv,
        cwd=tmp_path,
    )

    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("runner: ") and line in result.stderr
    assert result.stderr.count("\n") == 1


def test_workers_dev_server_serves_on_loopback_until_stopped(tmp_path: Path) -> None:
    from runner_shell.remote.errors import TemporalUnavailable
    from runner_shell.remote.temporal import TemporalExecutor
    from tests.temporal.conftest import free_port

    port = free_port()
    server = subprocess.Popen(
        [PYTHON, "-m", "runner_shell", "workers", "--dev-server", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,
    )
    try:
        assert server.stdout is not None
        said = server.stdout.readline()
        for _ in range(300):
            try:
                with TemporalExecutor.connect(f"127.0.0.1:{port}", "default", "q", 5) as client:
                    assert client.workers() == ()
                break
            except TemporalUnavailable:
                time.sleep(0.2)
        else:
            raise AssertionError("the development server never answered")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)

    assert said == f"workers: development server on 127.0.0.1:{port} (Ctrl-C stops it)\n"
