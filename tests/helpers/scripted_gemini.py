"""The Gemini API's side of the scripted model (tests.helpers.scripted_model): what Gemini CLI
and Qwen Code's Gemini mode send to `POST .../models/<model>:streamGenerateContent?alt=sse` and
`:generateContent`, and `:countTokens`.

The script is the scripted model's: a request whose last turn carries no function response yet
is answered with a call of the CLI's shell tool running `command`; one that does is answered with
`final_text`. A request that offers no tools (the CLI's own side requests: a title, a check
whether to continue) gets a short JSON text. Every answer reports the model's usage figures.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from tests.helpers.scripted_usage import CACHED_TOKENS, INPUT_TOKENS, OUTPUT_TOKENS

# Gemini CLI's side requests ask for JSON (next speaker, loop checks): a valid object for each.
SIDE_JSON = {"next_speaker": "user", "reasoning": "scripted", "is_loop": False}


def _has_function_response(body: Mapping[str, Any]) -> bool:
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return False
    last = contents[-1] if isinstance(contents[-1], dict) else {}
    parts = last.get("parts")
    return isinstance(parts, list) and any(
        isinstance(part, dict) and "functionResponse" in part for part in parts
    )


def _function_names(body: Mapping[str, Any]) -> list[str]:
    names: list[str] = []
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else []:
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        for declaration in declarations if isinstance(declarations, list) else []:
            if isinstance(declaration, dict) and isinstance(declaration.get("name"), str):
                names.append(declaration["name"])
    return names


def gemini_usage() -> dict[str, Any]:
    return {
        "promptTokenCount": INPUT_TOKENS,
        "cachedContentTokenCount": CACHED_TOKENS,
        "candidatesTokenCount": OUTPUT_TOKENS,
        "totalTokenCount": INPUT_TOKENS + OUTPUT_TOKENS,
    }


def gemini_part(body: Mapping[str, Any], command: str, final_text: str) -> dict[str, Any]:
    """The one part answering `body`: a shell call, the final text or a side answer."""
    names = _function_names(body)
    if not names:
        return {"text": json.dumps(SIDE_JSON)}
    if not _has_function_response(body):
        shell = "run_shell_command" if "run_shell_command" in names else names[0]
        return {"functionCall": {"name": shell, "args": {"command": command}}}
    return {"text": final_text}


def gemini_response(body: Mapping[str, Any], command: str, final_text: str) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [gemini_part(body, command, final_text)]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": gemini_usage(),
        "modelVersion": "scripted-model",
    }


def gemini_chunks(body: Mapping[str, Any], command: str, final_text: str) -> Iterator[Any]:
    """`streamGenerateContent`'s SSE chunks: the whole answer in one."""
    yield gemini_response(body, command, final_text)


def gemini_quota_error(retry_secs: int) -> dict[str, Any]:
    """The 429 the Gemini API answers when a quota is used up, retryable in `retry_secs`."""
    return {
        "error": {
            "code": 429,
            "message": (
                "You exceeded your current quota, please check your plan and billing details. "
                f"Please retry in {retry_secs}s."
            ),
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [
                        {
                            "quotaMetric": "generativelanguage.googleapis.com/generate_requests",
                            "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                        }
                    ],
                },
                {
                    "@type": "type.googleapis.com/google.rpc.RetryInfo",
                    "retryDelay": f"{retry_secs}s",
                },
            ],
        }
    }
