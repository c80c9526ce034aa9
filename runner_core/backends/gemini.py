"""What `gemini -p --output-format json` output means (Gemini CLI, and Qwen Code, its fork, which
prints the same shape): its result object, the tokens it reports and the limit it ended on.

Decides which JSON object the CLI printed is its result (on stdout when the session ran; on
stderr, after a stack trace, when it failed), what its per-model token counts add up to, and
whether its error is a quota or rate limit and when to try again. The messages are Gemini CLI's
own (docs/agent-cli-limits.md). Never reads a file or a clock.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from runner_core.backends._json import parse_json
from runner_core.backends.claude import last_json_object
from runner_core.backends.limits import LimitKind, LimitSignal
from runner_core.backends.usage import Usage, token_count


def gemini_result(text: str) -> dict[str, Any] | None:
    """The result object in `text` (the whole text, else its last top-level object); None when
    there is none. Its `response` is the final text, its `error` a failure."""
    parsed = parse_json(text)
    if not isinstance(parsed, dict):
        found = last_json_object(text)
        parsed = parse_json(found) if found is not None else None
    if not isinstance(parsed, dict):
        return None
    if not any(key in parsed for key in ("response", "error", "stats", "session_id")):
        return None
    return parsed


def gemini_error(result: Mapping[str, Any] | None) -> tuple[str, int | None] | None:
    """`(message, code)` of the result's `error`, None when it has none."""
    error = result.get("error") if result is not None else None
    if not isinstance(error, dict):
        return None
    message = error.get("message")
    code = error.get("code")
    return (
        message if isinstance(message, str) else "",
        code if isinstance(code, int) and not isinstance(code, bool) else None,
    )


def gemini_usage(result: Mapping[str, Any] | None) -> Usage:
    """The tokens the result's `stats.models` report, summed over models: `prompt` (cached
    included) as input, `candidates` as output, `cached` as cached input. No cost is reported."""
    stats = result.get("stats") if result is not None else None
    models = stats.get("models") if isinstance(stats, dict) else None
    if not isinstance(models, dict):
        return Usage()
    totals: dict[str, int | None] = {"input": None, "output": None, "cached": None}
    for model in models.values():
        tokens = model.get("tokens") if isinstance(model, dict) else None
        if not isinstance(tokens, dict):
            continue
        for key, field in (("input", "prompt"), ("output", "candidates"), ("cached", "cached")):
            count = token_count(tokens.get(field))
            if count is not None:
                totals[key] = (totals[key] or 0) + count
    return Usage(
        input_tokens=totals["input"],
        output_tokens=totals["output"],
        cached_input_tokens=totals["cached"],
    )


# Gemini CLI's messages for a quota it will not retry (TerminalQuotaError), Qwen Code's
# (`Quota exhausted: M`), and the API's own text passed on for one that outlasted the retries.
_USAGE_LIMIT_TEXTS = (
    "You have exhausted your daily quota",
    "Quota exhausted: ",
    "You exceeded your current quota",
    "Quota exceeded",
    "exhausted your capacity",
    "MODEL_CAPACITY_EXHAUSTED",
    "Insufficient balance",
)
_RATE_LIMIT_TEXTS = ("Too Many Requests", "Rate limit", "rate limit", "RESOURCE_EXHAUSTED")
# The API's `Please retry in 13.5s.` / `Please try again in 2s.` (`ms` too).
_RETRY_IN = re.compile(r"(?:retry|try again) in (\d+(?:\.\d+)?)(ms|s)\b")


def _retry_after(message: str) -> int | None:
    found = _RETRY_IN.search(message)
    if found is None:
        return None
    secs = float(found[1]) / (1000 if found[2] == "ms" else 1)
    return max(1, math.ceil(secs))


def gemini_limit(result: Mapping[str, Any] | None) -> LimitSignal | None:
    """The limit the result's error reports, if any: a 429 (Gemini CLI exits with the HTTP code,
    429 as 173) or a quota message. A used-up quota is a usage limit, anything else a rate limit;
    its retry time is the API's `Please retry in Ns` when the message carries one."""
    error = gemini_error(result)
    if error is None:
        return None
    message, code = error
    if any(text in message for text in _USAGE_LIMIT_TEXTS):
        return LimitSignal(LimitKind.USAGE_LIMITED, message, retry_after_secs=_retry_after(message))
    if code == 429 or any(text in message for text in _RATE_LIMIT_TEXTS):
        return LimitSignal(LimitKind.RATE_LIMITED, message, retry_after_secs=_retry_after(message))
    return None
