"""What `opencode run --format json` output means (OpenCode): its JSONL events, the final text,
the tokens and cost its steps report, and the error it ended on.

Decides which line is an event, what the `step_finish` events add up to (input is the step's
uncached input plus its cache reads, as codex counts it), which `text` part is the last message
and whether an `error` event is a limit. The messages are OpenCode's own
(docs/agent-cli-limits.md). Never reads a file or a clock: the shell hands in the lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from runner_core.backends._json import parse_json
from runner_core.backends.gemini import gemini_limit
from runner_core.backends.limits import LimitSignal
from runner_core.backends.usage import Usage, cost_usd, token_count


def opencode_event(line: str | bytes) -> dict[str, Any] | None:
    """One line of `opencode run --format json` output as an event; None for anything else."""
    event = parse_json(line)
    return event if isinstance(event, dict) and isinstance(event.get("type"), str) else None


def _add(total: int | float | None, value: int | float | None) -> Any:
    return total if value is None else (total or 0) + value


@attrs.frozen(slots=True)
class OpencodeSession:
    """What the events so far say, fed in order (`after`): the last text part, the last error
    message, and the usage summed over `step_finish` events."""

    last_text: str | None = None
    error: str | None = None
    usage: Usage = attrs.field(factory=Usage)

    def after(self, event: Mapping[str, Any]) -> OpencodeSession:
        kind = event.get("type")
        part = event.get("part")
        part = part if isinstance(part, dict) else {}
        if kind == "text" and isinstance(part.get("text"), str):
            return attrs.evolve(self, last_text=part["text"])
        if kind == "error":
            return attrs.evolve(self, error=_error_message(event.get("error")))
        if kind == "step_finish":
            return attrs.evolve(self, usage=_usage_after(self.usage, part))
        return self


def _error_message(error: object) -> str:
    if not isinstance(error, dict):
        return "opencode reported an error"
    data = error.get("data")
    message = data.get("message") if isinstance(data, dict) else None
    name = error.get("name")
    if isinstance(message, str) and message.strip():
        return message
    return name if isinstance(name, str) else "opencode reported an error"


def _usage_after(usage: Usage, part: Mapping[str, Any]) -> Usage:
    tokens = part.get("tokens")
    tokens = tokens if isinstance(tokens, dict) else {}
    cache = tokens.get("cache")
    cached = token_count(cache.get("read")) if isinstance(cache, dict) else None
    uncached = token_count(tokens.get("input"))
    step_input = None if uncached is None else uncached + (cached or 0)
    return Usage(
        input_tokens=_add(usage.input_tokens, step_input),
        output_tokens=_add(usage.output_tokens, token_count(tokens.get("output"))),
        cached_input_tokens=_add(usage.cached_input_tokens, cached),
        cost_usd=_add(usage.cost_usd, cost_usd(part.get("cost"))),
    )


def opencode_limit(error: str | None) -> LimitSignal | None:
    """The limit an error event's message reports, read as the provider's quota or rate-limit
    text (OpenCode passes the API's message on)."""
    if error is None:
        return None
    code = 429 if "429" in error or "Too Many Requests" in error else None
    return gemini_limit({"error": {"message": error, "code": code}})
