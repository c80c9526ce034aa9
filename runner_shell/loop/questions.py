"""Agents' new questions after an iteration: a `question` event, which fires `on_question`.

Reads questions.md before and after a step; runner_core.run.questions decides what is new.
"""

from __future__ import annotations

from runner_core.loop.events import EventOrigin, question
from runner_core.run.config import Config
from runner_core.run.questions import new_questions
from runner_shell.step.event_sink import sink_for
from runner_shell.store.iteration_log import utc_now
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.state_files import SMALL_FILE_MAX_BYTES, read_optional_text


def read_questions(paths: RunnerPaths) -> str | None:
    """questions.md as it is now; an unreadable one is no question (validate names it)."""
    try:
        return read_optional_text(paths.questions, SMALL_FILE_MAX_BYTES)
    except (OSError, UnicodeDecodeError):
        return None


def announce_new_questions(
    paths: RunnerPaths, config: Config, run_id: str, iteration: int, before: str | None
) -> None:
    """Record (and hook) the questions the iteration added to questions.md, if any."""
    added = new_questions(before, read_questions(paths))
    if added is None:
        return
    origin = EventOrigin(run_id, iteration, None, utc_now())
    sink_for(paths, config, run_id).emit((question(origin, added),), fsync=True)
