"""`runner` without the `cli` extra (pyproject.toml) says so in one line and exits 1, for a
command typer runs and for one whose own import is missing; a missing module of the runner's
own is still a bug."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runner_shell.cli.extra import MISSING_EXTRA

# `runner ARGS` with MODULE impossible to import, as where it is not installed.
WITHOUT = """
import sys
sys.modules[sys.argv[1]] = None
sys.argv = ["runner", *sys.argv[2:]]
from runner_shell.cli.entry import main
main()
"""


def runner_without(module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, module, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        check=False,
    )


@pytest.mark.parametrize(
    ("module", "args"), [("typer", ("init",)), ("starlette", ("serve", "--port", "0"))]
)
def test_a_command_without_the_cli_extra_says_how_to_install_it(
    module: str, args: tuple[str, ...], tmp_path: Path
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    done = runner_without(module, *args, cwd=tmp_path)

    assert done.returncode == 1, done.stdout
    assert done.stderr == MISSING_EXTRA.format(name=module) + "\n"


def test_a_missing_module_of_the_runners_own_is_not_an_extra(tmp_path: Path) -> None:
    done = runner_without("runner_shell.cli.running", "init", cwd=tmp_path)

    assert done.returncode == 1
    assert "cli extra" not in done.stderr
