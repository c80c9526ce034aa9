"""Specification of the launcher's fast path (runner_shell/entry.py): `runner select`,
`runner validate` and `runner step` without typer print the very bytes, on stdout and stderr,
and exit with the very code the typer commands do, whatever the outcome.

Each case runs the same command twice on identical copies of a project: once through
`python -m runner_shell` (the launcher, which takes the fast path) and once through
`runner_shell.cli.app.main` (typer). Paths that name the copy are replaced by `<root>`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.e2e import PYTHON, Project, child_spec, node

TYPER_CLI = "import sys; from runner_shell.cli.app import main; sys.argv[0] = 'runner'; main()"

Setup = Callable[[Project], None]


def run(project: Project, argv: list[str]) -> tuple[int, str, str]:
    result = subprocess.run(
        argv, cwd=project.root, env=project.env, capture_output=True, text=True, timeout=60
    )
    root = str(project.root)
    return (
        result.returncode,
        result.stdout.replace(root, "<root>"),
        result.stderr.replace(root, "<root>"),
    )


def both(project: Project, tmp_path: Path, command: str) -> tuple[tuple[int, str, str], ...]:
    """(launcher, typer) results of `runner <command>` on two copies of `project`."""
    twin_root = tmp_path / "twin" / "repo"
    shutil.copytree(project.root, twin_root, symlinks=True)
    twin = Project(twin_root, project.harness, project.scripts, project.env)
    fast = run(project, [PYTHON, "-m", "runner_shell", command])
    typer = run(twin, [PYTHON, "-c", TYPER_CLI, command])
    return fast, typer


def with_tree(tree: dict[str, object]) -> Setup:
    def setup(project: Project) -> None:
        project.prepare(tree)

    return setup


def tree_text(text: str) -> Setup:
    def setup(project: Project) -> None:
        project.tree_path.write_text(text, encoding="utf-8")
        project.commit_setup()

    return setup


def no_tree(project: Project) -> None:
    project.tree_path.unlink()


def bad_config(project: Project) -> None:
    project.config_path.write_text("max_iterations = 0\n", encoding="utf-8")


def dirty(project: Project) -> None:
    (project.root / "notes.txt").write_text("uncommitted\n", encoding="utf-8")


def agent_does(action: dict[str, object], next_: str = "execute") -> Setup:
    def setup(project: Project) -> None:
        project.prepare(node("root", next_=next_, max_attempts=5))
        project.agent_script({1: action, 2: action})

    return setup


def at_limit(project: Project) -> None:
    project.prepare(node("root", max_attempts=5), max_iterations=1)
    project.run_state_path.write_text(
        json.dumps({**project.run_state(), "next_iter": 2}), encoding="utf-8"
    )
    project.commit_setup()


CASES: dict[str, tuple[str, int, Setup]] = {
    "select open": (
        "select",
        0,
        with_tree(node("root", children=[node("root.1"), node("root.2", order=1)])),
    ),
    "select complete": ("select", 2, with_tree(node("root", passes=True))),
    "select stuck": ("select", 3, with_tree(node("root", attempts=3, max_attempts=3))),
    "select schema error": ("select", 1, tree_text('{"id": "root", "children": 3}')),
    "select invariant error": (
        "select",
        1,
        with_tree(node("root", children=[node("a"), node("a")])),
    ),
    "select bad json": ("select", 1, tree_text("{")),
    "select no tree": ("select", 1, no_tree),
    "validate ok": ("validate", 0, with_tree(node("root"))),
    "validate bad config": ("validate", 1, bad_config),
    "validate bad tree": ("validate", 1, tree_text("[]")),
    "step decomposes": (
        "step",
        0,
        agent_does({"output": {"summary": "split", "children": [child_spec("A")]}}, "decompose"),
    ),
    "step retries": ("step", 0, agent_does({"output": {"status": "retry", "summary": "not yet"}})),
    "step runner error": ("step", 1, agent_does({"exit": 3})),
    "step complete": ("step", 2, with_tree(node("root", passes=True))),
    "step stuck": ("step", 3, with_tree(node("root", attempts=3, max_attempts=3))),
    "step limit": ("step", 1, at_limit),
    "step dirty tree": ("step", 1, dirty),
}


@pytest.mark.parametrize(("command", "code", "setup"), CASES.values(), ids=CASES.keys())
def test_the_fast_path_prints_what_typer_prints(
    project: Project, tmp_path: Path, command: str, code: int, setup: Setup
) -> None:
    setup(project)

    fast, typer = both(project, tmp_path, command)

    assert fast == typer
    assert fast[0] == code, fast
    assert fast[1] or fast[2], "the command printed nothing"


def test_outside_a_git_repository_the_error_is_the_same(tmp_path: Path, project: Project) -> None:
    outside = Project(tmp_path / "outside", project.harness, project.scripts, project.env)
    outside.root.mkdir()
    for command in ("select", "validate", "step"):
        fast = run(outside, [PYTHON, "-m", "runner_shell", command])
        typer = run(outside, [PYTHON, "-c", TYPER_CLI, command])
        assert fast == typer
        assert fast[0] == 1


def test_before_runner_init_the_error_is_the_same(tmp_path: Path, project: Project) -> None:
    shutil.rmtree(project.runner_dir)
    for command in ("select", "validate", "step"):
        fast = run(project, [PYTHON, "-m", "runner_shell", command])
        typer = run(project, [PYTHON, "-c", TYPER_CLI, command])
        assert fast == typer
        assert fast[0] == 1


@pytest.mark.parametrize("command", ["select", "validate", "step"])
def test_the_fast_path_never_imports_typer(project: Project, command: str) -> None:
    shown = "sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich'))"
    assert after_command(project, command, shown) == "[]"


@pytest.mark.parametrize("command", ["validate", "step"])
def test_a_command_that_only_reads_the_config_never_imports_its_writer(
    project: Project, command: str
) -> None:
    shown = "'runner_core.run._config_validator' in sys.modules, 'tomli_w' in sys.modules"
    assert after_command(project, command, shown) == "True False"


@pytest.mark.parametrize("command", ["select", "validate", "status"])
def test_a_command_that_reads_documents_never_imports_the_schema_compiler(
    project: Project, command: str
) -> None:
    # The shipped schemas come compiled (scripts/gen_validators.py); reading one needs neither
    # fastjsonschema nor decimal (decoded JSON holds no Decimal).
    shown = "sorted(m for m in sys.modules if m.split('.')[0] in ('fastjsonschema', 'decimal'))"
    assert after_command(project, command, shown) == "[]"


def after_command(project: Project, command: str, shown: str) -> str:
    """What `print(<shown>)` says in a process that has just run `runner <command>` on a
    one-node tree (its modules still loaded)."""
    project.prepare(node("root", passes=True))
    return loaded_after(project, command, shown)


def loaded_after(project: Project, command: str, shown: str) -> str:
    """What `print(<shown>)` says in a process that has just run `runner <command>` on the
    project as it is (its modules still loaded)."""
    probe = (
        "import sys, runpy\n"
        f"sys.argv = ['runner', {command!r}]\n"
        "try:\n"
        "    runpy.run_module('runner_shell', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print({shown})\n"
    )
    _, stdout, _ = run(project, [PYTHON, "-c", probe])
    return stdout.splitlines()[-1]


# Modules only a step, an audit or a history reading needs: defining their classes costs
# `validate` and `status` more start-up than the command's own work on a small tree.
CONFINEMENT = ("runner_shell.sandbox.bwrap", "runner_shell.sandbox.proxy")
HISTORY_READING = ("runner_shell.git.history_sources", "runner_core.history.records")
HAND_EDIT_AUDIT = ("runner_core.audit.hand_edits", "runner_core.tree.diff")


def loaded(modules: tuple[str, ...]) -> str:
    return f"[m for m in {modules!r} if m in sys.modules]"


def test_validate_on_a_runner_commit_reads_no_history_and_confines_nothing(
    project: Project,
) -> None:
    # The run branch's last commit is `runner start`'s: no hand edit can be there.
    shown = loaded((*CONFINEMENT, *HISTORY_READING, *HAND_EDIT_AUDIT))
    assert loaded_after(project, "validate", shown) == "[]"


def test_validate_after_a_hand_commit_audits_it(project: Project) -> None:
    project.prepare(node("root", passes=True))  # the test's own commit: not the runner's
    assert loaded_after(project, "validate", loaded(HAND_EDIT_AUDIT)) == repr(list(HAND_EDIT_AUDIT))


# What only a step, an operator's command, `--follow`, a ratchet run or a budget needs.
STATUS_SPARES = (
    "runner_core.loop.budget",
    "runner_core.run.operations",
    "runner_core.iteration.plan",
    "runner_core.views.follow",
    "runner_shell.views.follow",
    "runner_shell.guard.baselines",
    # A record's reader, a committed tree's parser and a ratchet's nearest test ids.
    "runner_core.tree.state_update",
    "runner_core.validation.loading",
    "difflib",
    # A ratchet run's report model and pattern rules; git's history of a run with iterations.
    "runner_core.guard.ratchet",
    "runner_core.guard.report",
    "runner_core.iteration.guard_stage",
    "runner_shell.git.history_sources",
    *CONFINEMENT,
)


def test_status_between_iterations_spares_the_tree_rules_follow_views_and_baselines(
    project: Project,
) -> None:
    assert after_command(project, "status", loaded(STATUS_SPARES)) == "[]"


def test_options_and_help_go_to_typer(project: Project) -> None:
    code, stdout, _ = run(project, [PYTHON, "-m", "runner_shell", "select", "--help"])
    assert code == 0
    assert "Print the next leaf" in stdout


def test_select_on_a_valid_tree_builds_no_node_and_imports_no_attrs(project: Project) -> None:
    # Importing attrs costs a process about what decoding a 10,000-node tree costs.
    project.prepare(node("root", children=[node("a", passes=True), node("b", order=1)]))
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['runner', 'select']\n"
        "try:\n"
        "    runpy.run_module('runner_shell', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('attr', 'attrs')))\n"
        "print('runner_core.tree.model' in sys.modules)\n"
    )
    _, stdout, _ = run(project, [PYTHON, "-c", probe])
    assert stdout.splitlines() == [
        "select: status=open id=b path=root/b attempts=0/3",
        "[]",
        "False",
    ]


# What `validate` needs only once there is a journal to read, a tree to write or blobs to write.
VALIDATE_SPARES = ("runner_core.iteration.recovery", "runner_core.tree.serialization", "tempfile")


def test_validate_between_iterations_reads_no_journal_model_and_writes_no_blob(
    project: Project,
) -> None:
    # The run branch's last commit is `runner start`'s: no hand edit to audit (which diffs trees).
    assert loaded_after(project, "validate", loaded(VALIDATE_SPARES)) == "[]"


def test_status_on_a_valid_tree_parses_no_node(project: Project) -> None:
    # Building a 10,000-node tree's Nodes costs `runner status` as much as decoding its JSON.
    project.prepare(node("root", children=[node("a", passes=True), node("b", order=1)]))
    probe = (
        "import sys, runpy\n"
        "import runner_core.validation.loading as loading\n"
        "parsed = []\n"
        "def counted(data, parse=loading.parse_tree):\n"
        "    parsed.append(data)\n"
        "    return parse(data)\n"
        "loading.parse_tree = counted\n"
        "sys.argv = ['runner', 'status']\n"
        "try:\n"
        "    runpy.run_module('runner_shell', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(len(parsed))\n"
    )
    _, stdout, _ = run(project, [PYTHON, "-c", probe])
    assert "status: selected=open id=b path=root/b attempts=0/3" in stdout.splitlines()
    assert stdout.splitlines()[-1] == "0"


@pytest.mark.parametrize(
    ("command", "collecting"),
    [("select", False), ("validate", False), ("status", False), ("step", True)],
)
def test_a_read_only_command_runs_without_the_cyclic_collector_and_a_step_with_it(
    project: Project, command: str, collecting: bool
) -> None:
    assert after_command(project, command, "__import__('gc').isenabled()") == str(collecting)
