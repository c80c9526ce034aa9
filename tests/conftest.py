"""Fixtures of the end-to-end CLI tests: an isolated environment and a project per test.

`runner init` and `runner start` run once per session on template repositories (a process
start of the CLI is the dominant cost of these tests); each test gets its own copy. Under
pytest-xdist every worker has its own session: its own templates, tmp directories and (in
tests/temporal) its own Temporal server on free ports.

With RUNNER_TEST_LOOP_LOG set to a file, each test of tests/e2e whose body starts a `runner
loop` process appends its node id to that file (its module's path when a fixture started it),
unless the project's config names `[parallel]` itself: `.ci/run` runs the four-slot pass on
those alone, since `[parallel] slots` changes nothing but the loop
(runner_shell/loop/command.py), and RUNNER_TEST_SLOTS nothing but a config without the table.
"""

from __future__ import annotations

import compileall
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.e2e import AGENT_SOURCE, GUARD_SOURCE, IDENTITY, Project, ProjectFactory

TEMPLATE_GOAL = "# Goal\n\nDo what the fake agent's script says, until the guard passes.\n"
ROOT = Path(__file__).resolve().parents[1]
# The packages every `runner` process imports from this checkout.
RUNNER_PACKAGES = ("runner_core", "runner_shell")


def pytest_configure(config: pytest.Config) -> None:
    """Where PYTHONDONTWRITEBYTECODE is set, no process writes the bytecode of runner's own
    modules, and each `runner` process the suite starts (thousands) would compile them again:
    about 0.4 s of a 0.75 s step, two thirds more time for the end-to-end tests. The suite
    writes it first (compileall leaves what is up to date as it is)."""
    if sys.dont_write_bytecode:
        for package in RUNNER_PACKAGES:
            compileall.compile_dir(ROOT / package, quiet=1)


def isolated_env(home: Path, harness: Path) -> dict[str, str]:
    """The environment the runner runs in: no git identity, no user or system git config."""
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("GIT_", "RUNNER_"))
    }
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        RUNNER_TEST_HARNESS=str(harness),
    )
    return env


def init_git_repo(root: Path, env: dict[str, str]) -> None:
    """`git init` on main and a first commit made with the tests' own identity."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "README.md").write_text("# demo project\n", encoding="utf-8")

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)

    git("init", "--quiet", "--initial-branch=main")
    git("add", "-A")
    git(*IDENTITY, "commit", "--quiet", "-m", "initial commit")


@pytest.fixture(scope="session")
def scripts_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fake agent and guard programs."""
    scripts = tmp_path_factory.mktemp("e2e-scripts")
    (scripts / "agent.py").write_text(AGENT_SOURCE, encoding="utf-8")
    (scripts / "guard.py").write_text(GUARD_SOURCE, encoding="utf-8")
    return scripts


@pytest.fixture(scope="session")
def templates(tmp_path_factory: pytest.TempPathFactory, scripts_dir: Path) -> dict[str, Path]:
    """`initialized`: `.runner/` from the real `runner init`, untracked, on main, configured
    for the fake agent and guard, with a goal in GOAL.md; `started`: the same after the real
    `runner start`."""
    base = tmp_path_factory.mktemp("e2e-templates")
    project = Project(
        base / "initialized",
        base / "harness",
        scripts_dir,
        isolated_env(base / "home", base / "harness"),
    )
    init_git_repo(project.root, project.env)
    result = project.runner("init")
    assert result.returncode == 0, result.stderr
    project.set_config()
    # As a user does before `runner start`, which refuses init's placeholder goal.
    project.goal_path.write_text(TEMPLATE_GOAL, encoding="utf-8")
    started = base / "started"
    shutil.copytree(project.root, started, symlinks=True)
    result = Project(started, project.harness, scripts_dir, project.env).runner("start", "--here")
    assert result.returncode == 0, result.stderr
    return {"initialized": project.root, "started": started}


@pytest.fixture(scope="session")
def make_project(templates: dict[str, Path], scripts_dir: Path) -> ProjectFactory:
    """`make_project(base, kind)`: a project in `base/repo`, harness in `base/harness`.

    kind `fresh`: a repository on main with a first commit and no `.runner/`; `initialized`:
    `runner init` done (untracked), fake agent and guard configured, no run started;
    `started`: a started run on its branch with a clean working tree.
    """

    def make(base: Path, kind: str) -> Project:
        harness = base / "harness"
        harness.mkdir()
        root = base / "repo"
        project = Project(root, harness, scripts_dir, isolated_env(base / "home", harness))
        if kind == "fresh":
            init_git_repo(root, project.env)
        else:
            shutil.copytree(templates[kind], root, symlinks=True)
        return project

    return make


@pytest.fixture
def fresh_project(tmp_path: Path, make_project: ProjectFactory) -> Project:
    """A repository on main with a first commit and no `.runner/`."""
    return make_project(tmp_path, "fresh")


@pytest.fixture
def unstarted_project(tmp_path: Path, make_project: ProjectFactory) -> Project:
    """`runner init` done (untracked), fake agent and guard configured, no run started."""
    return make_project(tmp_path, "initialized")


@pytest.fixture
def project(tmp_path: Path, make_project: ProjectFactory) -> Project:
    """A started run on its branch with a clean working tree, fake agent and guard configured.

    Tests change config.toml or tree.json with `set_config`/`write_tree` and commit the change
    with `commit_setup()` (or both with `prepare`), as a user would before the first step.
    """
    return make_project(tmp_path, "started")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under `pytest -n N --dist loadgroup`, tests/temporal runs on one worker, against one
    Temporal server, beside the others (the server and its polls stay out of each other's way)."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if "temporal" in item.path.parts and "tests" in item.path.parts:
            item.add_marker(pytest.mark.xdist_group("temporal"))


LOOP_LOG = os.environ.get("RUNNER_TEST_LOOP_LOG")
# A command line that starts the loop: `runner loop`, `python -m runner_shell loop ...`, or a
# shell line (a README walk-through, a tmux pane) that contains one.
LOOP_WORD = re.compile(r"\b(runner|runner_shell)\b.*\bloop\b", re.DOTALL)
PARALLEL_TABLE = re.compile(r"(?m)^\[parallel\]\s*$")


def starts_a_loop(args: Any) -> bool:
    """Whether a Popen argument list or shell string starts `runner loop` (over-inclusive:
    a test wrongly counted runs once more, one wrongly left out would miss the four-slot pass)."""
    words = [args] if isinstance(args, str | bytes | os.PathLike) else list(args)
    text = " ".join(os.fsdecode(word) for word in words)
    return "loop" in words or LOOP_WORD.search(text) is not None


def sets_its_own_slots(cwd: str | os.PathLike[str] | None) -> bool:
    """Whether the loop started in `cwd` reads a config.toml that names `[parallel]` itself: then
    RUNNER_TEST_SLOTS changes nothing for it (tests/helpers/e2e.py adds the table only to a
    config without one), and the four-slot pass would run the same loop again."""
    config = Path(cwd if cwd is not None else os.getcwd()) / ".runner" / "state" / "config.toml"
    try:
        text = config.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False  # not a project's root: counted, as `starts_a_loop` is over-inclusive
    return PARALLEL_TABLE.search(text) is not None


def loop_test_id(current: str) -> str:
    """What the four-slot pass must run for a loop started while PYTEST_CURRENT_TEST is
    `current`: the test itself when its body started it; its whole module when a fixture did
    (a module-scoped fixture's loop serves every test of the module)."""
    node_id, _, phase = current.rpartition(" ")
    return node_id if phase == "(call)" else node_id.split("::")[0]


@pytest.fixture(scope="session", autouse=True)
def _note_loop_processes() -> Iterator[None]:
    if LOOP_LOG is None:
        yield
        return
    original = subprocess.Popen.__init__
    log = LOOP_LOG

    def noting(self: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> None:
        current = os.environ.get("PYTEST_CURRENT_TEST", "")
        if (
            current.startswith("tests/e2e/")
            and starts_a_loop(args)
            and not sets_its_own_slots(options.get("cwd"))
        ):
            with open(log, "a", encoding="utf-8") as file:  # O_APPEND: whole lines
                file.write(loop_test_id(current) + "\n")
        original(self, args, *rest, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "__init__", noting)
        yield
