"""The JSONL event files the CLIs that stream events leave (OpenCode, Copilot), folded into
a session, and the final JSON a session leaves at the output path.

The fold and the reading of each event are the backend's (runner_core.backends.<name>); this
reads the file in bounded lines, never through a symlink, and writes the output atomically.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from runner_core.backends.claude import last_json_object
from runner_shell.agents._common import excerpt
from runner_shell.agents.codex import _bounded_lines
from runner_shell.store.files import atomic_write_text, open_regular

# A line of an event file longer than this is skipped, never held in memory.
EVENT_LINE_LIMIT_BYTES = 4 * 1024 * 1024

Session = TypeVar("Session")


def fold_event_file(
    path: Path, session: Session, fold: Callable[[Session, bytes], Session]
) -> Session:
    """`session` after each line of the event file at `path` (`fold` skips what it cannot
    read); `session` itself when there is no regular file there."""
    try:
        file = open_regular(path)
    except OSError:
        return session
    with file:
        for line in _bounded_lines(file, EVENT_LINE_LIMIT_BYTES):
            session = fold(session, line)
    return session


def settle_output(
    program: str, error: str | None, last_text: str | None, output_path: Path, said: str
) -> str | None:
    """Leave the run's final JSON at `output_path` and return None, or return why there is
    none: the error `program` reported, or its last text (`said`: what the CLI calls it)
    holding no JSON object when the agent wrote no output file."""
    if error is not None:
        output_path.unlink(missing_ok=True)  # a failed session's file is not its output
        return f"{program} reported an error: {excerpt(error)}"
    if output_path.exists():
        return None
    found = last_json_object(last_text) if last_text is not None else None
    if found is None:
        return f"{program}'s {said} holds no JSON object and the agent wrote no output file"
    atomic_write_text(output_path, found + "\n")
    return None
