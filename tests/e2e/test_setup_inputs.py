"""`[sandbox] setup_inputs` end to end: a Node project whose agent adds a dependency.

`npm ci` installs `node_modules` from `package-lock.json` when a slot is made (`file:`
dependencies under `vendor/`, so no network is needed). The agent adds one to package.json
(and the lock) and code that needs it: its guard, which requires every dependency package.json
names, passes only on a `node_modules` set up again from the agent's files before it runs. An
agent that changes package.json so that `npm ci` fails is an agent error naming setup, and the
next step's slot is set up on the base again. Run as root and as an unprivileged user, without
and in bubblewrap.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

import pytest

from runner_shell.sandbox.status import probe
from tests.helpers.crash import cli
from tests.helpers.e2e import Project, node

pytestmark = [
    pytest.mark.sandbox_hostile,
    pytest.mark.skipif(
        shutil.which("npm") is None and os.environ.get("CI") != "true",
        reason="npm is not installed here (.ci/run installs it)",
    ),
]

BWRAP = probe()
MODES = [
    "off",
    pytest.param(
        "bwrap",
        marks=pytest.mark.skipif(
            BWRAP.bwrap is None and os.environ.get("CI") != "true",
            reason=f"bubblewrap is not usable here: {BWRAP.problem}",
        ),
    ),
]
TWO_LEAVES = node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)])
NPM = ["--offline", "--no-audit", "--no-fund", "--loglevel=error"]
SETUP = ["npm", "ci", *NPM]
WRITE_DONE = 'printf \'{"status": "done", "summary": "ok"}\' > "$RUNNER_OUTPUT_PATH"'
# Every dependency package.json names must load from node_modules.
GUARD = [
    "node",
    "-e",
    "for (const name of Object.keys(require('./package.json').dependencies)) require(name)",
]
LOCK = f"npm install --package-lock-only {' '.join(NPM)}"
BOTH = {"greet": "file:vendor/greet", "shout": "file:vendor/shout"}


def package(dependencies: dict[str, str]) -> str:
    return json.dumps({"name": "app", "version": "1.0.0", "dependencies": dependencies})


def node_project(project: Project) -> None:
    """package.json depending on vendor/greet, its lock, vendor/shout not yet a dependency."""
    root = project.root
    for name, body in (("greet", "() => 'hello'"), ("shout", "(s) => s.toUpperCase()")):
        (root / "vendor" / name).mkdir(parents=True)
        meta = {"name": name, "version": "1.0.0", "main": "index.js"}
        (root / "vendor" / name / "package.json").write_text(json.dumps(meta))
        (root / "vendor" / name / "index.js").write_text(f"module.exports = {body}\n")
    (root / "package.json").write_text(package({"greet": "file:vendor/greet"}))
    subprocess.run(["npm", "install", "--package-lock-only", *NPM], cwd=root, check=True)
    gitignore = root / ".gitignore"
    old = gitignore.read_text() if gitignore.exists() else ""
    gitignore.write_text(old + "node_modules/\n")


def agent(project: Project, script: str, mode: str, then: str = "true") -> None:
    """The first iteration's agent runs `script`, the second `then`; each then claims done."""
    once = f'case "$RUNNER_ITER_DIR" in */1) {script};; */2) {then};; esac'
    prepare(project, TWO_LEAVES, once, mode)


def prepare(project: Project, tree: dict[str, Any], script: str, mode: str, **config: Any) -> None:
    """The run with `tree`, an agent that runs `script` then claims done, the guard requiring
    every dependency, and setup from package.json and its lock."""
    project.prepare(
        tree,
        agent_command=["sh", "-c", f"{script}\n{WRITE_DONE}"],
        guard_command=GUARD,
        sandbox={
            "mode": mode,
            "setup": SETUP,
            "setup_inputs": ["package-lock.json", "package.json"],
        },
        **config,
    )


def step(project: Project) -> dict[str, Any]:
    result = cli(project, "step")
    assert result.returncode == 0, result.stderr
    assert "internal error" not in result.stderr, result.stderr
    return project.meta(project.run_state()["next_iter"] - 1)


def slot_modules(project: Project) -> list[str]:
    found = os.listdir(project.root / ".git/runner/slots/0/node_modules")
    return sorted(name for name in found if not name.startswith("."))


@pytest.mark.parametrize("mode", MODES)
def test_an_agent_that_adds_a_dependency_is_judged_on_node_modules_set_up_again(
    project: Project, mode: str
) -> None:
    node_project(project)
    new = package(BOTH).replace('"', '\\"')
    agent(project, f'printf "%s" "{new}" > package.json && {LOCK}', mode)

    first = step(project)

    assert first["error_kind"] is None, first
    assert first["guard"] == "pass", first
    assert json.loads(project.git("show", "HEAD:package.json"))["dependencies"] == BOTH
    assert slot_modules(project) == ["greet", "shout"]
    assert (project.iter_dir(1) / "setup.log").is_file()
    second = step(project)  # the base now has the agent's inputs: set up already
    assert second["guard"] == "pass", second
    assert not (project.iter_dir(2) / "setup.log").exists()


@pytest.mark.parametrize("mode", MODES)
def test_an_agent_whose_inputs_break_setup_is_its_error_naming_setup(
    project: Project, mode: str
) -> None:
    node_project(project)
    new = package(BOTH).replace('"', '\\"')
    # The lock no longer agrees with package.json; the next attempt mends it.
    agent(project, f'printf "%s" "{new}" > package.json', mode, then=LOCK)

    first = step(project)

    assert first["error_kind"] == "agent", first
    assert first["guard"] == "skipped", first
    assert first["error"].startswith(
        f"[sandbox] setup ({' '.join(SETUP)}) failed after the agent changed package.json: "
        "exited 1; see "
    ), first["error"]
    assert "npm" in (project.iter_dir(1) / "setup.log").read_text()
    assert "shout" not in project.git("show", "HEAD:package.json")
    second = step(project)  # the same leaf again, from its attempt's files, without node_modules
    assert second["error_kind"] is None and second["guard"] == "pass", second
    assert json.loads(project.git("show", "HEAD:package.json"))["dependencies"] == BOTH
    assert slot_modules(project) == ["greet", "shout"]


def test_validate_names_the_setup_inputs(project: Project) -> None:
    node_project(project)
    agent(project, "true", "off")

    result = cli(project, "validate")

    assert result.returncode == 0, result.stderr
    assert "setup_inputs=package-lock.json,package.json" in result.stdout + result.stderr


THREE_LEAVES = node(
    "root",
    next_="decompose",
    children=[node("root.1"), node("root.2", order=1), node("root.3", order=2)],
)


@pytest.mark.parametrize("mode", MODES)
def test_with_two_slots_every_slot_a_job_or_merge_uses_is_set_up_on_its_base(
    project: Project, mode: str
) -> None:
    """root.1 and root.2 start together; root.2's merge runs its guard again on the moved head
    in the merge queue's slot, set up there on the old inputs. root.3 adds a dependency: its
    merge (the head moved past its base too) runs the guard in that slot reset to a head with
    root.3's package.json, which passes only once setup ran there again from the new inputs."""
    node_project(project)
    new = package(BOTH).replace('"', '\\"')
    adds = f'printf "%s" "{new}" > package.json && {LOCK}'
    by_node = f'case "$RUNNER_NODE_ID" in root.3) {adds};; esac'
    prepare(project, THREE_LEAVES, by_node, mode, parallel={"slots": 2}, iteration_timeout_secs=120)

    result = project.runner("loop", timeout=600)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "loop: status=complete" in result.stdout
    metas = [project.meta(number) for number in (1, 2, 3)]
    assert [meta["guard"] for meta in metas] == ["pass"] * 3, metas
    assert all(meta["error_kind"] is None for meta in metas), metas
    assert (project.iter_dir(3) / "guard.merged.log").is_file()  # judged again after the merge
    assert json.loads(project.git("show", "HEAD:package.json"))["dependencies"] == BOTH
