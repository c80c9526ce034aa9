"""The README's commands run: every `runner` command its bash blocks show is accepted by the
CLI (subcommands and options), and the walk-throughs that need no model run for real on the
demo's repository (demo, status, config, finish)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)


def block_commands(block: str) -> list[list[str]]:
    """The `runner ...` commands of one bash block, as argv (comments and `&&` split off)."""
    found: list[list[str]] = []
    for line in block.replace("\\\n", " ").splitlines():  # a line continued with `\`
        command: list[str] = []
        for word in [*shlex.split(line, comments=True), "&&"]:
            if word in ("&&", "||", ";", "|"):
                if command and command[0] == "runner":
                    found.append(command)
                command = []
            else:
                command.append(word)
    return found


def runner_commands(text: str) -> list[list[str]]:
    """Every `runner ...` command of the bash blocks of `text`."""
    return [command for block in bash_blocks(text) for command in block_commands(block)]


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


COMMANDS = runner_commands(README)


def test_the_readme_shows_runner_commands() -> None:
    assert len(COMMANDS) >= 10
    assert ["runner", "demo"] in COMMANDS


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(argv) for argv in COMMANDS])
def test_every_runner_command_of_the_readme_is_one_the_cli_accepts(
    argv: list[str], tmp_path: Path
) -> None:
    (tmp_path / "d").mkdir()  # the directory `-C d` names
    result = run([*argv, "--help"], tmp_path)

    assert result.returncode == 0, result.stderr
    assert "Usage:" in result.stdout


def test_the_demo_config_and_finish_walk_throughs_run(tmp_path: Path) -> None:
    demo = run(["runner", "demo", "--dir", "d"], tmp_path)
    assert demo.returncode == 0, demo.stderr
    repo = tmp_path / "d"
    assert run(["runner", "-C", "d", "status"], tmp_path).returncode == 0
    for block in bash_blocks(README):
        if "runner config show" in block or "runner finish " in block:
            for argv in block_commands(block):
                if argv[:2] == ["runner", "finish"] and "--squash" in argv:
                    continue  # the plain finish below merged the run already
                result = run(argv, repo)
                assert result.returncode == 0, (argv, result.stderr)
    merged = run(["git", "log", "--format=%s", "-1", "main"], repo).stdout
    assert merged.startswith("chore(runner): merge run "), merged
    assert "config set budget.max_cost_usd" in run(["git", "log", "--format=%s"], repo).stdout
