"""`runner audit` flags a runner-owned file an iteration commit changed: an
iteration commit writes only the tree, the run state and the notes under `.runner/state/`, so
a config.toml changed by one (a remote answer let in, or a commit rewritten) is a finding."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.e2e import ProjectFactory, node

DONE = {"status": "done", "summary": "did it"}
IDENTITY = ("-c", "user.name=t", "-c", "user.email=t@x")


def test_an_iteration_commit_that_changed_config_toml_is_a_finding(
    tmp_path: Path, make_project: ProjectFactory
) -> None:
    project = make_project(tmp_path, "started")
    project.prepare(node("root", next_="decompose", children=[node("root.1")]))
    project.agent_script_by_node({("root.1", 1): {"files": {"a.txt": "a\n"}, "output": DONE}})
    assert project.runner("step").returncode == 0
    before = _findings(project.runner("audit").stdout)
    assert all(" iter=- " in line for line in before)  # the test's own setup commit only
    config = project.root / ".runner/state/config.toml"
    config.write_text(
        config.read_text(encoding="utf-8") + '\n[hooks]\non_iteration = ["sh", "-c", "id"]\n',
        encoding="utf-8",
    )
    project.git(*IDENTITY, "commit", "-q", "--amend", "--no-edit", "--", str(config))
    sha = project.git("rev-parse", "HEAD").strip()

    result = project.runner("audit")

    assert result.returncode != 0
    finding = (
        f"audit: finding commit={sha[:8]} iter=1 node=- "
        "runner-owned file .runner/state/config.toml changed by an iteration commit"
    )
    assert _findings(result.stdout) == [*before, finding], result.stdout


def _findings(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("audit: finding ")]
