"""The state files read back (runner_shell/store/state_files.py): whatever the user's checkout
holds, a config or run state that does not read is one line naming the file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from runner_shell.errors import UserFacingError
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import load_config, load_run_state

DEEP_TOML = "x = " + "[" * 5_000 + "]" * 5_000 + "\n"
DEEP_JSON = "[" * 5_000 + "]" * 5_000
CONFIG, RUN_STATE = ".runner/state/config.toml", ".runner/state/run_state.json"


@pytest.mark.parametrize(
    ("name", "load", "text", "said"),
    [
        (CONFIG, load_config, "max_iterations = ", "not valid TOML: "),
        (CONFIG, load_config, DEEP_TOML, "not valid TOML: it nests too deep"),
        (RUN_STATE, load_run_state, "{", "not valid JSON: "),
        (RUN_STATE, load_run_state, DEEP_JSON, "not valid JSON: it nests deeper than"),
    ],
)
def test_a_state_file_that_does_not_read_is_one_line_naming_it(
    tmp_path: Path, name: str, load: Callable[[RunnerPaths], object], text: str, said: str
) -> None:
    path = tmp_path / name
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")

    with pytest.raises(UserFacingError, match=f"^{name} is {said}"):
        load(RunnerPaths(tmp_path))
