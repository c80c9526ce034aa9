"""The sandbox these tests confine real processes in; skipped where bubblewrap does not work,
except in CI (CI=true), which installs it and must run them."""

from __future__ import annotations

import os

import pytest

from runner_core.run.config import Config
from runner_shell.sandbox import SandboxStatus, probe, sandbox_status


@pytest.fixture(scope="session")
def usable_sandbox() -> SandboxStatus:
    found = probe()
    if found.bwrap is None:
        if os.environ.get("CI") == "true":
            raise RuntimeError(
                f"CI needs a working bubblewrap (.ci/run installs it): {found.problem}"
            )
        pytest.skip(f"bubblewrap is not usable here: {found.problem}")
    return sandbox_status(Config(), lambda: found)
