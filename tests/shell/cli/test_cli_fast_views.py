"""The launcher's fast path for the read-only views: exactly `runner status`, `runner history`
and `runner report` print, without typer, the very bytes and exit code the typer commands do,
warnings about damaged or stray iteration files included."""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import pytest

from tests.helpers.e2e import PYTHON, Project, node
from tests.shell.cli.test_cli_fast_path import TYPER_CLI, run

VIEWS = ("status", "history", "report")

Setup = Callable[[Project], None]


def both(project: Project, command: str) -> tuple[tuple[int, str, str], ...]:
    """(launcher, typer) results of `runner <command>`: a view writes nothing, so both read
    the same project (a FIFO planted in it could not be copied)."""
    fast = run(project, [PYTHON, "-m", "runner_shell", command])
    typer = run(project, [PYTHON, "-c", TYPER_CLI, command])
    return fast, typer


def two_iterations(project: Project) -> None:
    project.prepare(node("root", children=[node("root.1"), node("root.2", order=1)]))
    project.agent_script({1: {"output": {"summary": "one"}}, 2: {"output": {"summary": "two"}}})
    for _ in range(2):
        project.runner("step")


def damaged_records(project: Project) -> None:
    """Every way the history read skips an iteration or an entry, each with its warning."""
    two_iterations(project)
    run_dir = project.iter_dir(1).parent
    meta = json.loads((run_dir / "2" / "meta.json").read_text(encoding="utf-8"))
    (run_dir / "2" / "meta.json").write_text(json.dumps({**meta, "iter": "x"}), encoding="utf-8")
    (run_dir / "1" / "meta.json").unlink()
    os.mkfifo(run_dir / "1" / "meta.json")
    for stray in ("007", "notes"):
        (run_dir / stray).mkdir()
    os.symlink("2", run_dir / "3")


def not_started(project: Project) -> None:
    project.prepare(node("root"))
    (project.runner_dir / "state" / "run_state.json").unlink()


CASES: dict[str, Setup] = {
    "two iterations": two_iterations,
    "damaged records": damaged_records,
    "no run state": not_started,
}


@pytest.mark.parametrize("command", VIEWS)
@pytest.mark.parametrize("setup", CASES.values(), ids=CASES.keys())
def test_the_fast_path_prints_what_typer_prints(
    project: Project, command: str, setup: Setup
) -> None:
    setup(project)

    fast, typer = both(project, command)

    assert fast == typer
    assert fast[1] or fast[2], "the command printed nothing"


def test_damaged_records_are_each_one_warning(project: Project) -> None:
    damaged_records(project)

    fast, _ = both(project, "history")

    warnings = [line for line in fast[2].splitlines() if line.startswith("runner: warning:")]
    assert any("/007: not an iteration directory; skipped" in line for line in warnings)
    assert any("/3: not an iteration directory; skipped" in line for line in warnings)
    assert any("/2/meta.json: iter: must be an integer >= 1, got 'x'" in line for line in warnings)
    assert any("/1/meta.json: unreadable: [Errno 22] is a FIFO" in line for line in warnings)


@pytest.mark.parametrize("command", VIEWS)
def test_the_views_fast_path_never_imports_typer(project: Project, command: str) -> None:
    two_iterations(project)
    probe = (
        "import sys, runpy\n"
        f"sys.argv = ['runner', {command!r}]\n"
        "try:\n"
        "    runpy.run_module('runner_shell', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich')))\n"
    )
    _, stdout, _ = run(project, [PYTHON, "-c", probe])
    assert stdout.splitlines()[-1] == "[]"


def test_the_report_spares_the_follow_views_and_the_loop_policy(project: Project) -> None:
    # Its budget and subtree lines need the budgets' arithmetic alone, not the event model.
    two_iterations(project)
    spared = ("runner_core.views.follow", "runner_core.loop.policy", "runner_core.loop.events")
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['runner', 'report']\n"
        "try:\n"
        "    runpy.run_module('runner_shell', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print([m for m in {spared!r} if m in sys.modules])\n"
    )
    _, stdout, _ = run(project, [PYTHON, "-c", probe])
    assert "subtree totals:" in stdout.splitlines()
    assert stdout.splitlines()[-1] == "[]"
