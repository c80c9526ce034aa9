"""runner_shell/setup/demo.py and command_agent.py: the demo builds its repository only in a
new or empty directory, and the template agent never overwrites the user's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner_core.run.template_agent import TEMPLATE_AGENT_PATH
from runner_shell.errors import UserFacingError
from runner_shell.setup.command_agent import write_template_agent
from runner_shell.setup.demo import refuse_used_directory
from runner_shell.store.layout import RunnerPaths


def test_the_demo_takes_a_new_or_empty_directory_only(tmp_path: Path) -> None:
    refuse_used_directory(tmp_path / "new")
    refuse_used_directory(tmp_path)
    (tmp_path / "work.txt").write_text("mine\n", encoding="utf-8")
    with pytest.raises(UserFacingError, match=r"^demo: --dir .* is not an empty directory"):
        refuse_used_directory(tmp_path)
    with pytest.raises(UserFacingError, match=r"is not an empty directory"):
        refuse_used_directory(tmp_path / "work.txt")
    assert (tmp_path / "work.txt").read_text(encoding="utf-8") == "mine\n"


def test_the_template_agent_is_written_executable_once(tmp_path: Path) -> None:
    paths = RunnerPaths(tmp_path)
    target = tmp_path / TEMPLATE_AGENT_PATH
    target.parent.mkdir(parents=True, exist_ok=True)
    assert write_template_agent(paths)
    assert os.access(target, os.X_OK)
    assert "def main()" in target.read_text(encoding="utf-8")
    target.write_text("# the user's own agent\n", encoding="utf-8")
    assert not write_template_agent(paths)
    assert target.read_text(encoding="utf-8") == "# the user's own agent\n"
