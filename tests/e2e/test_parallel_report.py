"""What parallelism cost, end to end: a real parallel run where two jobs edit one line, the
later one run again after the merge; its record says so and `runner report` totals it."""

from __future__ import annotations

from typing import Any

from runner_core.views.layout import duration_text
from tests.e2e.test_parallel_loop import _audit_finds_only_the_setup, _flat_tree, _loop, _setup
from tests.e2e.test_views import json_output
from tests.helpers.e2e import Project

ACTIONS = {
    "a": [{"files": {"shared.txt": "from a\n"}, "sleep": 1}],
    "b": [{"files": {"shared.txt": "from b\n"}, "sleep": 1}],
}


def _one_line_twice(project: Project, slots: int) -> None:
    project.root.joinpath("shared.txt").write_text("zero\n", encoding="utf-8")
    _setup(project, _flat_tree(["a", "b"]), ACTIONS, slots=slots)
    result = _loop(project)
    assert result.returncode == 0, result.stderr


def test_the_report_names_the_rerun_s_node_with_its_time(project: Project) -> None:
    _one_line_twice(project, slots=2)
    rerun = project.meta(2)
    assert (rerun["node_id"], rerun["error_kind"], rerun["merge_rerun"]) == ("b", "runner", True)
    assert all("merge_rerun" not in project.meta(n) for n in (1, 3))
    assert "Runner-Merge-Rerun: true" in project.git("log", "-1", "--format=%B", ":/iter 2 ")
    spent = rerun["duration_ms"]

    text = project.runner("report")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    section = lines[lines.index("merge reruns:") + 1 :][:3]
    assert section[0].split() == [
        "NODE",
        "RERUNS",
        "DURATION",
        "TOKENS",
        "in/out/cached",
        "COST_USD",
    ]
    assert section[1].split()[:3] == ["b", "1", duration_text(spent)]
    assert section[2].startswith(f"  total: reruns=1 duration={duration_text(spent)} ")

    document = json_output(project, "report")
    reruns: dict[str, Any] = document["merge_reruns"]
    assert (reruns["count"], reruns["duration_ms"]) == (1, spent)
    assert [(row["node_id"], row["count"], row["duration_ms"]) for row in reruns["nodes"]] == [
        ("b", 1, spent)
    ]
    assert json_output(project, "show", "2")["meta"]["merge_rerun"] is True
    json_output(project, "history")
    _audit_finds_only_the_setup(project)


def test_one_slot_has_no_rerun_and_the_report_says_nothing_of_them(project: Project) -> None:
    _one_line_twice(project, slots=1)
    assert all("merge_rerun" not in project.meta(n) for n in (1, 2))
    text = project.runner("report")
    assert text.returncode == 0, text.stderr
    assert "merge reruns:" not in text.stdout.splitlines()
    assert "merge_reruns" not in json_output(project, "report")
