"""`runner --version` and `-V` are answered by the launcher (runner_shell/cli/entry.py) without
loading typer, with the same bytes and exit code as typer's `--version` option."""

from __future__ import annotations

import subprocess

import pytest

from tests.helpers.e2e import PYTHON, Project

TYPER_CLI = "import sys; from runner_shell.cli.app import main; sys.argv[0] = 'runner'; main()"
LOADED_CLI = (
    "import sys, runpy\n"
    "sys.argv = ['runner', sys.argv[1]]\n"
    "try:\n"
    "    runpy.run_module('runner_shell', run_name='__main__')\n"
    "except SystemExit as end:\n"
    "    print('exit', end.code)\n"
    "print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich')))\n"
)


def run(project: Project, argv: list[str]) -> tuple[int, str, str]:
    result = subprocess.run(
        argv, cwd=project.root, env=project.env, capture_output=True, text=True, timeout=60
    )
    return result.returncode, result.stdout, result.stderr


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_the_launcher_prints_what_typer_prints(project: Project, flag: str) -> None:
    launcher = run(project, [PYTHON, "-m", "runner_shell", flag])
    assert launcher == run(project, [PYTHON, "-c", TYPER_CLI, flag])
    assert launcher[0] == 0 and launcher[1].startswith("runner ")


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_the_version_never_imports_typer(project: Project, flag: str) -> None:
    _, stdout, _ = run(project, [PYTHON, "-c", LOADED_CLI, flag])
    assert stdout.splitlines()[-2:] == ["exit 0", "[]"]
