"""The state files read back (runner_shell/store/state_files.py): whatever the user's checkout
holds, a config or run state that does not read is one line naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner_shell.errors import UserFacingError
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_config, load_run_state

DEEP_TOML = "x = " + "[" * 5_000 + "]" * 5_000 + "\n"
DEEP_JSON = "[" * 5_000 + "]" * 5_000


@pytest.mark.parametrize(
    ("text", "said"),
    [("max_iterations = ", "not valid TOML: "), (DEEP_TOML, "not valid TOML: it nests too deep")],
)
def test_a_config_that_does_not_read_is_one_line_naming_it(
    tmp_path: Path, text: str, said: str
) -> None:
    paths = RunnerPaths(tmp_path)
    paths.config.parent.mkdir(parents=True)
    paths.config.write_text(text, encoding="utf-8")

    with pytest.raises(UserFacingError, match=f"^.runner/state/config.toml is {said}"):
        load_config(paths)


@pytest.mark.parametrize(
    ("text", "said"),
    [("{", "not valid JSON: "), (DEEP_JSON, "not valid JSON: it nests deeper than")],
)
def test_a_run_state_that_does_not_read_is_one_line_naming_it(
    tmp_path: Path, text: str, said: str
) -> None:
    paths = RunnerPaths(tmp_path)
    paths.run_state.parent.mkdir(parents=True)
    paths.run_state.write_text(text, encoding="utf-8")

    with pytest.raises(UserFacingError, match=f"^.runner/state/run_state.json is {said}"):
        load_run_state(paths)
