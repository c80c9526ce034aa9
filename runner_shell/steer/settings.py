"""`runner config set|unset`, `runner tell --clear` and `runner answer`: an operator's change
to the run's config, guidance or questions, checked by the core and committed.

Under the lock, on the run branch with a clean tree (a step's own preconditions): read the
file, ask runner_core for its new text, write it atomically and commit it with trailers naming
the run and the operator, which `runner audit` accepts. Decides nothing itself.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from runner_core.run.config import Config, ConfigError, render_config
from runner_core.run.config_change import (
    config_commit_message,
    typed_value,
    with_setting,
    without_setting,
)
from runner_core.run.guidance import cleared_guidance_message
from runner_core.run.questions import answer_commit_message, answered, open_questions
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.step.lock_and_journal import exclusive_lock
from runner_shell.step.runner import load_for_step
from runner_shell.store.files import atomic_write_text, read_bytes_capped
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import (
    SMALL_FILE_MAX_BYTES,
    load_config_table,
    read_bytes,
    read_optional_text,
)

# What `runner tell --file` and `runner answer --file` read at most: a note, never a dump.
NOTE_MAX_BYTES = 1024 * 1024


@attrs.frozen(slots=True)
class ConfigChanged:
    run_id: str
    config: Config
    changed: bool


def read_note(path: Path, command: str) -> str:
    """The text of an operator's `--file`, at most NOTE_MAX_BYTES of UTF-8."""
    try:
        return read_bytes_capped(path, NOTE_MAX_BYTES).decode("utf-8")
    except OSError as error:
        raise UserFacingError(f"{command}: --file {path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise UserFacingError(f"{command}: --file {path}: not UTF-8 ({error.reason})") from None


def _changed_config(paths: RunnerPaths, verb: str, key: str, value: str | None) -> Config:
    """The config with `key` set to the typed `value` (None: unset), checked by the core."""
    data = load_config_table(paths)
    try:
        if value is None:
            return without_setting(data, key)[1]
        return with_setting(data, key, typed_value(key, value))[1]
    except ConfigError as error:
        raise UserFacingError(f"config {verb}: {error}") from None


def change_config(paths: RunnerPaths, repo: Repo, key: str, value: str | None) -> ConfigChanged:
    """Set `key` to the typed `value` (None: unset it), validate, write canonically, commit."""
    verb = "unset" if value is None else "set"
    if _is_draft(paths):
        return _change_draft_config(paths, verb, key, value)
    with exclusive_lock(repo):
        loaded = load_for_step(paths, repo)
        config = _changed_config(paths, verb, key, value)
        text = render_config(config)
        if config == loaded.config and text.encode("utf-8") == read_bytes(paths.config):
            return ConfigChanged(loaded.run_id, config, changed=False)
        atomic_write_text(paths.config, text)
        repo.commit_all(config_commit_message(loaded.run_id, verb, key, repo.actor()))
    return ConfigChanged(loaded.run_id, config, changed=True)


def _is_draft(paths: RunnerPaths) -> bool:
    """`.runner/` as `runner init` wrote it, before `runner start`: the user's to change."""
    from runner_shell.store.state_files import load_run_state

    return paths.run_state.is_file() and load_run_state(paths).run_id is None


def _change_draft_config(
    paths: RunnerPaths, verb: str, key: str, value: str | None
) -> ConfigChanged:
    """A draft's config changed in place (nothing to commit: `runner start` moves it)."""
    config = _changed_config(paths, verb, key, value)
    text = render_config(config)
    if text.encode("utf-8") == read_bytes(paths.config):
        return ConfigChanged("draft", config, changed=False)
    atomic_write_text(paths.config, text)
    return ConfigChanged("draft", config, changed=True)


def clear_guidance(paths: RunnerPaths, repo: Repo) -> str:
    """Remove guidance.md and commit it; returns the run id."""
    with exclusive_lock(repo):
        run_id = load_for_step(paths, repo).run_id
        current = read_optional_text(paths.guidance, SMALL_FILE_MAX_BYTES)
        if current is None or not current.strip():
            raise UserFacingError("tell --clear: there is no guidance to clear")
        paths.guidance.unlink()
        repo.commit_all(cleared_guidance_message(run_id, repo.actor()))
    return run_id


def answer_questions(paths: RunnerPaths, repo: Repo, answer: str) -> str:
    """Close the open questions with the operator's answer, joined to the guidance; commit."""
    with exclusive_lock(repo):
        run_id = load_for_step(paths, repo).run_id
        questions = read_optional_text(paths.questions, SMALL_FILE_MAX_BYTES)
        guidance = read_optional_text(paths.guidance, SMALL_FILE_MAX_BYTES)
        try:
            remaining, new_guidance = answered(questions, guidance, answer)
        except ValueError as error:
            raise UserFacingError(f"answer: {error}") from None
        asked = open_questions(questions, guidance)
        atomic_write_text(paths.guidance, new_guidance)
        atomic_write_text(paths.questions, remaining)
        repo.commit_all(answer_commit_message(run_id, repo.actor(), asked))
    return run_id
