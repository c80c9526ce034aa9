"""A directory an interrupted iteration left behind is kept for inspection, never reused."""

from __future__ import annotations

from tests.helpers.e2e import Project, node

DONE = 'printf \'{"status": "done", "summary": "ok"}\' > "$RUNNER_OUTPUT_PATH"'


def test_a_left_over_iteration_directory_is_set_aside(project: Project) -> None:
    project.prepare(
        node("root", next_="decompose", children=[node("root.1")]),
        guard_command=["true"],
        agent_command=["sh", "-c", DONE],
    )
    for name in ("1", "1.interrupted-1"):
        (project.iter_dir(1).parent / name).mkdir(parents=True)
        (project.iter_dir(1).parent / name / "left.txt").write_text(name, encoding="utf-8")

    result = project.runner("step")

    assert result.returncode == 0, result.stderr
    aside = project.iter_dir(1).parent / "1.interrupted-2"
    assert (aside / "left.txt").read_text(encoding="utf-8") == "1"
    assert not (project.iter_dir(1) / "left.txt").exists()
    assert (project.iter_dir(1) / "meta.json").exists()
