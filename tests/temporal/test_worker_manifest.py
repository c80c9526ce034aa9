"""The README's Kubernetes example runs `runner worker` with flags the command has."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.helpers.e2e import PYTHON

MANIFEST = Path(__file__).resolve().parents[2] / "docs" / "examples" / "kubernetes-worker.yaml"


def test_the_example_deployment_runs_runner_worker_with_its_own_flags() -> None:
    text = MANIFEST.read_text(encoding="utf-8")
    args = re.findall(r"^ {12}- (\S+)$", text.split("args:")[1].split("env:")[0], re.M)
    helped = subprocess.run(
        [PYTHON, "-m", "runner_shell", "worker", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout

    assert args[:2] == ["runner", "worker"]
    flags = [arg for arg in args[2:] if arg.startswith("--")]
    assert flags and all(re.search(rf"^\s+{re.escape(flag)}\b", helped, re.M) for flag in flags)
    assert {"--address", "--task-queue", "--repo-url"} <= set(flags)
    assert "\t" not in text
