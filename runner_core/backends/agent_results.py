"""How the agent CLIs' own output reads: claude's result object and how codex's JSONL ended.

Decides which object on claude's stdout is its result (a stray line around it tolerated), which
line of codex's stream is an event and which event says how the turn ended, and where the last
JSON object in a text is. Never decides success, usage limits or waits; never reads a file: the
shell hands in the text, or codex's lines one at a time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs


def last_json_object(text: str) -> str | None:
    """The last top-level JSON object in `text`, exactly as written there.

    The text may wrap it in prose or a code fence. Each `{` is handed to the JSON decoder, which
    matches braces while honouring strings and escapes; a decoded object is skipped whole, so the
    objects nested inside it never count.
    """
    decoder = json.JSONDecoder()
    last: str | None = None
    start = text.find("{")
    while start != -1:
        try:
            _value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            start = text.find("{", start + 1)
            continue
        last = text[start:end]
        start = text.find("{", end)
    return last


def _json(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


# ---------------------------------------------------------------- claude


def claude_result(stdout: str) -> dict[str, Any] | None:
    """The result object `claude -p --output-format json` printed, None when there is none.

    A stray line around it (a warning printed to stdout) is tolerated: the last top-level object
    counts. `--verbose` prints an array of messages, whose last `result` message counts.
    """
    parsed = _json(stdout)
    if parsed is None:
        found = last_json_object(stdout)
        parsed = _json(found) if found is not None else None
    if isinstance(parsed, list):
        results = [
            item for item in parsed if isinstance(item, dict) and item.get("type") == "result"
        ]
        parsed = results[-1] if results else None
    return parsed if isinstance(parsed, dict) else None


# ---------------------------------------------------------------- codex


def codex_event(line: str | bytes) -> dict[str, Any] | None:
    """One line of `codex exec --json` output as an event; None for a plain-text notice."""
    event = _json(line)
    return event if isinstance(event, dict) else None


def _message(holder: object) -> str | None:
    message = holder.get("message") if isinstance(holder, dict) else None
    return message if isinstance(message, str) and message.strip() else None


@attrs.frozen(slots=True)
class CodexEnding:
    """How a codex turn ended so far, fed its events in order (`after`): the failure is the
    `turn.failed` message, else the last `error` event that is not a retry in progress
    (`Reconnecting... n/5 (M)`); None when neither came."""

    turn_failed: str | None = None
    last_error: str | None = None

    def after(self, event: Mapping[str, Any]) -> CodexEnding:
        kind = event.get("type")
        if kind == "turn.failed" and (message := _message(event.get("error"))) is not None:
            return attrs.evolve(self, turn_failed=message)
        message = _message(event) if kind == "error" else None
        if message is not None and not message.startswith("Reconnecting..."):
            return attrs.evolve(self, last_error=message)
        return self

    @property
    def failure(self) -> str | None:
        return self.turn_failed if self.turn_failed is not None else self.last_error
