"""What `copilot --output-format json` output means (GitHub Copilot CLI): its JSONL session
events, the final message, the error it ended on, and the usage file `--usage-output-file`
writes.

Decides which line is an event, which `assistant.message` is the last answer (one asking for no
more tools), whether a `session.error` is a limit and when to try again, and what the usage
file's per-model token counts add up to. The events and messages are Copilot CLI's own
(docs/agent-cli-limits.md). Never reads a file or a clock: the shell hands in lines and text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from runner_core.backends._json import parse_json
from runner_core.backends.gemini import gemini_limit
from runner_core.backends.limits import LimitKind, LimitSignal
from runner_core.backends.usage import Usage, token_count

# `session.error`'s `errorType`s that are a limit: a rate limit, and a used-up quota (the
# CLI's own classification of a provider's failure).
RATE_LIMIT_ERRORS = ("rate_limit",)
USAGE_LIMIT_ERRORS = ("quota_exhausted", "quota")


def copilot_event(line: str | bytes) -> dict[str, Any] | None:
    """One line of `copilot --output-format json` output as an event; None for anything else."""
    event = parse_json(line)
    return event if isinstance(event, dict) and isinstance(event.get("type"), str) else None


@attrs.frozen(slots=True)
class CopilotError:
    """A `session.error`: its `errorType`, message and HTTP status (None when it gave none)."""

    kind: str
    message: str
    status: int | None = None


@attrs.frozen(slots=True)
class CopilotSession:
    """What the events so far say, fed in order (`after`): the last answer's text, the last
    error, and the exit code of the `result` event that ends the session."""

    last_text: str | None = None
    error: CopilotError | None = None
    exit_code: int | None = None

    def after(self, event: Mapping[str, Any]) -> CopilotSession:
        kind = event.get("type")
        data = event.get("data")
        data = data if isinstance(data, dict) else {}
        if kind == "assistant.message":
            content = data.get("content")
            if isinstance(content, str) and content.strip() and not data.get("toolRequests"):
                return attrs.evolve(self, last_text=content)
            return self
        if kind == "session.error":
            return attrs.evolve(self, error=_error(data))
        if kind == "result":
            code = event.get("exitCode")
            code = code if isinstance(code, int) and not isinstance(code, bool) else None
            return attrs.evolve(self, exit_code=code)
        return self


def _error(data: Mapping[str, Any]) -> CopilotError:
    kind, message, status = data.get("errorType"), data.get("message"), data.get("statusCode")
    return CopilotError(
        kind if isinstance(kind, str) else "unknown",
        message if isinstance(message, str) and message.strip() else "copilot reported an error",
        status if isinstance(status, int) and not isinstance(status, bool) else None,
    )


def copilot_limit(error: CopilotError | None) -> LimitSignal | None:
    """The limit a session's error reports: a `rate_limit` or quota `errorType`, or a 429; a
    used-up quota is a usage limit, the rest a rate limit, retried after the provider's `try
    again in Ns` when its message carries one."""
    if error is None:
        return None
    limited = error.kind in RATE_LIMIT_ERRORS + USAGE_LIMIT_ERRORS or error.status == 429
    if not limited:
        return None
    read = gemini_limit({"error": {"message": error.message, "code": 429}})
    wait = None if read is None else read.retry_after_secs
    if error.kind in USAGE_LIMIT_ERRORS or (
        read is not None and read.kind is LimitKind.USAGE_LIMITED
    ):
        return LimitSignal(LimitKind.USAGE_LIMITED, error.message, retry_after_secs=wait)
    return LimitSignal(LimitKind.RATE_LIMITED, error.message, retry_after_secs=wait)


def copilot_usage(text: str | None) -> Usage:
    """The tokens of the usage file's `modelMetrics`, summed over models: `inputTokens` (cache
    reads included) as input, `outputTokens` as output, `cacheReadTokens` as cached input. Its
    premium requests are no US dollars: no cost is reported."""
    parsed = parse_json(text) if text is not None else None
    models = parsed.get("modelMetrics") if isinstance(parsed, dict) else None
    if not isinstance(models, dict):
        return Usage()
    totals: dict[str, int | None] = {"input": None, "output": None, "cached": None}
    fields = (("input", "inputTokens"), ("output", "outputTokens"), ("cached", "cacheReadTokens"))
    for model in models.values():
        usage = model.get("usage") if isinstance(model, dict) else None
        if not isinstance(usage, dict):
            continue
        for key, field in fields:
            count = token_count(usage.get(field))
            if count is not None:
                totals[key] = (totals[key] or 0) + count
    return Usage(
        input_tokens=totals["input"],
        output_tokens=totals["output"],
        cached_input_tokens=totals["cached"],
    )
