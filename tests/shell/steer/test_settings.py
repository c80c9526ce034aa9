"""runner_shell/steer/settings.py in this process: `config set|unset`, `tell --clear` and
`answer` change one file, commit it with the run's trailers, and refuse in one line."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.setup.scaffold import init_runner
from runner_shell.steer.settings import (
    NOTE_MAX_BYTES,
    answer_questions,
    change_config,
    clear_guidance,
    read_note,
)
from runner_shell.store.layout import RunnerPaths
from tests.helpers.git_repos import git, new_repo, started_run, subjects


def config_data(paths: RunnerPaths) -> dict[str, object]:
    return tomllib.loads(paths.config.read_text(encoding="utf-8"))


def test_a_set_is_written_and_committed_with_the_run_and_the_key(tmp_path: Path) -> None:
    run_id = started_run(tmp_path)
    paths, repo = RunnerPaths(tmp_path), Repo(tmp_path)
    changed = change_config(paths, repo, "max_iterations", "7")
    assert changed.changed and changed.run_id == run_id and changed.config.max_iterations == 7
    assert config_data(paths)["max_iterations"] == 7
    assert subjects(tmp_path)[0] == f"chore(runner): config set max_iterations run {run_id}"
    message = git(tmp_path, "log", "-1", "--format=%B")
    assert f"Runner-Run: {run_id}" in message and "Runner-Config: max_iterations" in message
    assert git(tmp_path, "status", "--porcelain") == ""


def test_the_same_value_again_changes_and_commits_nothing(tmp_path: Path) -> None:
    started_run(tmp_path)
    paths, repo = RunnerPaths(tmp_path), Repo(tmp_path)
    change_config(paths, repo, "max_iterations", "7")
    before = subjects(tmp_path)
    assert not change_config(paths, repo, "max_iterations", "7").changed
    assert subjects(tmp_path) == before


def test_unset_goes_back_to_the_default(tmp_path: Path) -> None:
    run_id = started_run(tmp_path)
    paths, repo = RunnerPaths(tmp_path), Repo(tmp_path)
    default = change_config(paths, repo, "max_iterations", "7").config
    unset = change_config(paths, repo, "max_iterations", None)
    assert unset.changed and unset.config.max_iterations != 7
    assert "max_iterations = 7" not in paths.config.read_text(encoding="utf-8")
    assert subjects(tmp_path)[0] == f"chore(runner): config unset max_iterations run {run_id}"
    assert default.max_iterations == 7


def test_a_bad_value_is_one_line_and_changes_nothing(tmp_path: Path) -> None:
    started_run(tmp_path)
    paths, repo = RunnerPaths(tmp_path), Repo(tmp_path)
    text, before = paths.config.read_bytes(), subjects(tmp_path)
    with pytest.raises(UserFacingError) as refused:
        change_config(paths, repo, "max_iterations", "0")
    assert str(refused.value) == "config set: max_iterations: must be > 0, got 0"
    assert paths.config.read_bytes() == text and subjects(tmp_path) == before


def test_a_draft_config_is_changed_in_place_without_a_commit(tmp_path: Path) -> None:
    new_repo(tmp_path)
    paths = RunnerPaths(tmp_path)
    from runner_core import Config

    init_runner(paths, force=False, config=Config())
    before = subjects(tmp_path)
    changed = change_config(paths, Repo(tmp_path), "parallel.slots", "2")
    assert changed.changed and changed.run_id == "draft" and changed.config.parallel_slots == 2
    assert config_data(paths)["parallel"] == {"slots": 2}
    assert subjects(tmp_path) == before


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (b"max_iterations = [", "is not valid TOML: Invalid value (at end of document)"),
        (b"a = " + b"[" * 5000 + b"]" * 5000, "is not valid TOML: it nests too deep to read"),
        (b"\xff\n", "is not UTF-8 (byte 0: invalid start byte)"),
    ],
)
def test_a_draft_config_that_cannot_be_read_is_one_line_and_kept(
    tmp_path: Path, text: bytes, says: str
) -> None:
    """A draft's config is the user's to edit before `runner start`, and is read unchecked."""
    new_repo(tmp_path)
    paths = RunnerPaths(tmp_path)
    from runner_core import Config

    init_runner(paths, force=False, config=Config())
    paths.config.write_bytes(text)
    for value in ("3", None):
        with pytest.raises(UserFacingError) as refused:
            change_config(paths, Repo(tmp_path), "max_iterations", value)
        assert str(refused.value) == f".runner/state/config.toml {says}"
        assert paths.config.read_bytes() == text


def test_clearing_guidance_commits_its_removal_and_refuses_when_there_is_none(
    tmp_path: Path,
) -> None:
    run_id = started_run(tmp_path)
    paths, repo = RunnerPaths(tmp_path), Repo(tmp_path)
    with pytest.raises(UserFacingError, match=r"^tell --clear: there is no guidance to clear$"):
        clear_guidance(paths, repo)
    paths.guidance.write_text("Prefer small functions.\n", encoding="utf-8")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "guidance")
    assert clear_guidance(paths, repo) == run_id
    assert not paths.guidance.exists()
    assert git(tmp_path, "status", "--porcelain") == ""
    assert "guidance" in git(tmp_path, "show", "--stat", "--format=", "HEAD")


def test_an_answer_closes_the_open_questions_and_joins_the_guidance(tmp_path: Path) -> None:
    run_id = started_run(tmp_path)
    paths, repo = RunnerPaths(tmp_path), Repo(tmp_path)
    with pytest.raises(UserFacingError, match=r"^answer: "):
        answer_questions(paths, repo, "yes")
    asked = paths.questions.read_text(encoding="utf-8") + "\n- Which port should it use?\n"
    paths.questions.write_text(asked, encoding="utf-8")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "a question")
    assert answer_questions(paths, repo, "Port 8080.") == run_id
    assert "Port 8080." in paths.guidance.read_text(encoding="utf-8")
    assert "Which port should it use?" not in paths.questions.read_text(encoding="utf-8")
    assert git(tmp_path, "status", "--porcelain") == ""
    with pytest.raises(UserFacingError, match=r"^answer: "):
        answer_questions(paths, repo, "again")


def test_a_note_file_must_be_utf8_and_readable(tmp_path: Path) -> None:
    note = tmp_path / "note.txt"
    note.write_bytes(b"caf\xe9\n")
    with pytest.raises(UserFacingError, match=r"^tell: --file .*note\.txt: not UTF-8"):
        read_note(note, "tell")
    with pytest.raises(UserFacingError, match=r"^answer: --file .*missing\.txt: "):
        read_note(tmp_path / "missing.txt", "answer")
    note.write_text("é" * 10, encoding="utf-8")
    assert read_note(note, "tell") == "é" * 10
    note.write_bytes(b"x" * (NOTE_MAX_BYTES + 1))
    with pytest.raises(UserFacingError, match=r"^tell: --file "):
        read_note(note, "tell")
