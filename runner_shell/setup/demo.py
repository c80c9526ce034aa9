"""`runner demo`: a throw-away repository, the built-in demo agent, a real guard, a real loop.

Shows a newcomer the whole cycle in seconds, with no network and no real agent installed.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import typer

from runner_core import Config
from runner_core.prompt.pack import DEFAULT_PROMPT_BUDGET
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo, refuse_newline_path
from runner_shell.loop.command import run_loop
from runner_shell.setup.scaffold import init_runner, start_run
from runner_shell.store.files import atomic_write_text
from runner_shell.store.layout import RunnerPaths

CALC = '''"""A tiny calculator for the runner demo."""


def add(a, b):
    raise NotImplementedError


def multiply(a, b):
    raise NotImplementedError
'''

CHECK = '''"""The demo's guard: exit 0 when every implemented function is right."""

import sys

import calc

CASES = {"add": [((2, 3), 5), ((-1, 1), 0)], "multiply": [((2, 3), 6), ((-2, 3), -6)]}
failed = False
for name, cases in CASES.items():
    for args, expected in cases:
        try:
            got = getattr(calc, name)(*args)
        except NotImplementedError:
            print(f"skip {name}: not implemented yet")
            break
        ok = got == expected
        failed |= not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}{args} == {got!r} (expected {expected!r})")
sys.exit(1 if failed else 0)
'''

GOAL = """# Goal

Implement `add` and `multiply` in `calc.py` so that `python check.py` passes.
"""


def refuse_used_directory(directory: Path) -> None:
    """The demo builds its own repository: in a directory that holds anything (someone's
    repository, a work in progress) its `git init`, commits and checkouts would overwrite
    that work, so only a new or empty directory is accepted."""
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise UserFacingError(
            f"demo: --dir {directory} is not an empty directory; give a new or empty "
            "directory, or leave out --dir for a new temporary one"
        )


def run_demo(directory: Path | None) -> int:
    if directory is not None:
        refuse_newline_path(directory.absolute())
        refuse_used_directory(directory)
    root = Path(tempfile.mkdtemp(prefix="runner-demo-")) if directory is None else directory
    root.mkdir(parents=True, exist_ok=True)
    # Said first: if anything below fails, the user knows which directory to look at or remove.
    typer.echo(f"demo: repository {root}")
    repo = Repo(root)
    repo.git("init", "--quiet")
    repo.git("symbolic-ref", "HEAD", "refs/heads/main")
    atomic_write_text(root / "calc.py", CALC)
    atomic_write_text(root / "check.py", CHECK)
    repo.commit_all("demo project: a calculator to finish")
    paths = RunnerPaths(root)
    config = Config(
        guard_command=(sys.executable, "check.py"),
        agent_backend="command",
        agent_command=(sys.executable, "-m", "runner_shell.agents.demo_agent"),
        iteration_timeout_secs=120,
        max_iterations=20,
    )
    init_runner(paths, force=False, config=config)
    atomic_write_text(paths.goal, GOAL)
    started = start_run(paths, repo)
    typer.echo(f"started run={started.run_id} branch={started.branch}")
    try:
        code = run_loop(paths, repo, DEFAULT_PROMPT_BUDGET, typer.echo)
    except UserFacingError as error:
        typer.echo(f"runner: {error}", err=True)
        code = 1
    typer.echo(
        f"demo: done. Inspect it: cd {root} && git log --oneline && "
        f"ls .runner/iterations/{started.run_id}/"
    )
    return code
