"""runner_shell/steer/commits.py in this process: `runner tell` and `runner node ...` commit
one change under the lock (a draft's tree is changed in place), and an operator's file is
read whole, capped, or refused in one line naming it."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from runner_core import Config, Node
from runner_core.run.operations import NodeOperation
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.setup.scaffold import init_runner
from runner_shell.steer.commits import (
    OPERATOR_FILE_MAX_BYTES,
    add_guidance,
    apply_node_operation,
    read_operator_json,
)
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_tree
from tests.helpers.git_repos import git, new_repo, started_run, subjects


def retitled(tree: Node, _max_attempts: int) -> Node:
    return attrs.evolve(tree, title="Renamed goal")


def test_guidance_is_appended_and_committed(tmp_path: Path) -> None:
    run_id = started_run(tmp_path)
    paths, repo = RunnerPaths(tmp_path), Repo(tmp_path)
    assert add_guidance(paths, repo, "Prefer small functions.") == run_id
    assert add_guidance(paths, repo, "Keep the API.") == run_id
    text = paths.guidance.read_text(encoding="utf-8")
    assert text.index("Prefer small functions.") < text.index("Keep the API.")
    assert git(tmp_path, "status", "--porcelain") == ""
    assert len([s for s in subjects(tmp_path) if run_id in s]) >= 3


def test_a_node_change_on_a_run_is_committed_and_recorded_as_an_event(tmp_path: Path) -> None:
    run_id = started_run(tmp_path)
    paths, repo = RunnerPaths(tmp_path), Repo(tmp_path)
    before = subjects(tmp_path)
    applied = apply_node_operation(paths, repo, NodeOperation.EDIT, "root", retitled)
    assert applied.run_id == run_id and applied.after.title == "Renamed goal"
    assert load_tree(paths).title == "Renamed goal"
    assert len(subjects(tmp_path)) == len(before) + 1
    assert git(tmp_path, "status", "--porcelain") == ""
    events = paths.events_log(run_id).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["type"] for line in events] == ["operator"]


def test_a_draft_tree_is_changed_in_place_without_a_commit(tmp_path: Path) -> None:
    new_repo(tmp_path)
    paths = RunnerPaths(tmp_path)
    init_runner(paths, force=False, config=Config())
    before = subjects(tmp_path)
    applied = apply_node_operation(paths, Repo(tmp_path), NodeOperation.EDIT, "root", retitled)
    assert applied.run_id == "draft" and load_tree(paths).title == "Renamed goal"
    assert subjects(tmp_path) == before


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"{not json", "not JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b'{"a": 1, "a": 2}', "not JSON"),
        (b"x" * (OPERATOR_FILE_MAX_BYTES + 1), f"over {OPERATOR_FILE_MAX_BYTES} bytes"),
    ],
)
def test_an_operator_file_that_is_no_plan_is_one_line_naming_it(
    tmp_path: Path, content: bytes, said: str
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_bytes(content)
    with pytest.raises(UserFacingError) as refused:
        read_operator_json(plan, "--from")
    assert str(refused.value).startswith(f"--from {plan}: {said}")
    assert "\n" not in str(refused.value)


def test_an_operator_file_is_read_as_json(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text('{"children": []}', encoding="utf-8")
    assert read_operator_json(plan) == {"children": []}
    with pytest.raises(UserFacingError, match=r"^--file .*gone\.json: "):
        read_operator_json(tmp_path / "gone.json", "--file")
