"""A tree.json the agent broke in its scratch checkout is the agent's error, worded for it: the
runner resets the checkout, so the error names what the agent did and never an operator's fix
(`runner init`, `git checkout`) for a run whose own tree is intact."""

from __future__ import annotations

import pytest

from tests.helpers.crash import cli
from tests.helpers.e2e import Project, node

TWO_LEAVES = node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)])
WRITE_DONE = 'printf \'{"status": "done", "summary": "ok"}\' > "$RUNNER_OUTPUT_PATH"'
TREE = ".runner/state/tree.json"
NOT_READ = "not a regular file; the runner does not read it"


@pytest.mark.parametrize(
    ("script", "error"),
    [
        (f"rm {TREE}", f"tree.json after the agent: {TREE} is missing"),
        (
            f"rm {TREE} && mkdir {TREE}",
            f"tree.json after the agent: {TREE} is a directory, {NOT_READ}",
        ),
        (
            f"rm {TREE} && mkfifo {TREE}",
            f"tree.json after the agent: {TREE} is a FIFO, {NOT_READ}",
        ),
    ],
    ids=["deleted", "directory", "fifo"],
)
def test_a_tree_the_agent_broke_is_its_error_without_an_operator_fix(
    project: Project, script: str, error: str
) -> None:
    project.prepare(TWO_LEAVES, agent_command=["sh", "-c", f"{script}\n{WRITE_DONE}"])

    result = cli(project, "step")

    assert result.returncode == 0, result.stderr
    record = project.meta(1)
    assert record["error_kind"] == "agent"
    assert record["error"] == error
    assert project.tree()["children"][0]["attempts"] == 1
    assert cli(project, "step").returncode == 0  # the run's own tree was never touched


@pytest.mark.parametrize(
    "script",
    [
        'ln -s /etc/hostname "$RUNNER_OUTPUT_PATH"',
        'mkfifo "$RUNNER_OUTPUT_PATH"',
        'mkdir "$RUNNER_OUTPUT_PATH"',
    ],
    ids=["symlink", "fifo", "directory"],
)
def test_an_output_file_the_agent_made_no_regular_file_is_its_error_and_the_loop_goes_on(
    project: Project, script: str
) -> None:
    project.prepare(TWO_LEAVES, agent_command=["sh", "-c", f"cat > /dev/null\n{script}"])

    result = cli(project, "step")

    assert result.returncode == 0, result.stderr
    record = project.meta(1)
    assert record["error_kind"] == "agent"
    assert record["error"].startswith("output: output file ")
    assert record["error"].endswith("is not a regular file")
    assert project.tree()["children"][0]["attempts"] == 1
    assert cli(project, "step").returncode == 0
