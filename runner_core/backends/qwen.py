"""What `qwen -p --output-format json` output means (Qwen Code): its stdout is a JSON array of
session messages, Claude Code's `--verbose` shape, whose last `result` message holds the final
text, an error flag and Gemini CLI's `stats`.

Decides which message is the result, what tokens it reports and whether its failure is a limit.
The messages are Qwen Code's own (docs/agent-cli-limits.md). Never reads a file or a clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runner_core.backends.claude import claude_result, claude_usage
from runner_core.backends.gemini import gemini_limit, gemini_usage
from runner_core.backends.limits import LimitSignal
from runner_core.backends.usage import Usage

qwen_result = claude_result


def qwen_usage(result: Mapping[str, Any] | None) -> Usage:
    """The tokens of the result's `stats.models` (prompt with cached included, candidates,
    cached); its Claude-shaped `usage` when it has no stats."""
    usage = gemini_usage(result)
    return usage if usage != Usage() else claude_usage(result)


def qwen_limit(result: Mapping[str, Any] | None) -> LimitSignal | None:
    """The limit a failed result reports: its `error` (`{message}`) or `result` text read as
    Gemini CLI's, whose error handling Qwen Code keeps."""
    if result is None or result.get("is_error") is not True:
        return None
    error = result.get("error")
    message = error.get("message") if isinstance(error, dict) else result.get("result")
    if not isinstance(message, str):
        return None
    status = result.get("api_error_status")
    code = 429 if status == 429 or "429" in message else None
    return gemini_limit({"error": {"message": message, "code": code}})
