"""The OpenAI Chat Completions API's side of the scripted model (tests.helpers.scripted_model):
what OpenAI-compatible CLIs (Qwen Code, OpenCode) send to `POST .../chat/completions`.

The script is the scripted model's: a request whose last message is not a tool result is
answered with a call of the CLI's shell tool running `command`; one whose last message is a tool
result is answered with `final_text`. A request without tools (a title, a summary) gets a short
text. Streamed requests get `chat.completion.chunk` events, the usage in the last chunk (as
`stream_options.include_usage` asks), then `[DONE]`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tests.helpers.scripted_usage import CACHED_TOKENS, INPUT_TOKENS, OUTPUT_TOKENS

SIDE_TEXT = "scripted"
# Each CLI's shell tool and the name of its command argument.
SHELL_TOOLS = (("run_shell_command", "command"), ("bash", "command"), ("shell", "command"))


def _tool_names(body: Mapping[str, Any]) -> list[str]:
    tools = body.get("tools")
    names = []
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function") if isinstance(tool, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if isinstance(name, str):
            names.append(name)
    return names


def _after_tool_result(body: Mapping[str, Any]) -> bool:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return False
    last = messages[-1]
    return isinstance(last, dict) and last.get("role") == "tool"


def shell_call(tools: Sequence[str], command: str) -> tuple[str, dict[str, Any]]:
    """`(tool name, arguments)` that run `command` with the shell tool the CLI offered."""
    for name, argument in SHELL_TOOLS:
        if name in tools:
            extra = {"description": "scripted command"} if name == "bash" else {}
            return name, {argument: command, **extra}
    return (tools[0] if tools else "shell"), {"command": command}


def chat_usage() -> dict[str, Any]:
    return {
        "prompt_tokens": INPUT_TOKENS,
        "completion_tokens": OUTPUT_TOKENS,
        "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
        "prompt_tokens_details": {"cached_tokens": CACHED_TOKENS},
    }


def chat_message(body: Mapping[str, Any], command: str, final_text: str) -> dict[str, Any]:
    """The assistant message answering `body`, and why it stopped (`finish_reason`)."""
    tools = _tool_names(body)
    if not tools:
        return {"role": "assistant", "content": SIDE_TEXT}
    if not _after_tool_result(body):
        name, arguments = shell_call(tools, command)
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "assistant", "content": final_text}


def chat_completion(body: Mapping[str, Any], command: str, final_text: str) -> dict[str, Any]:
    message = chat_message(body, command, final_text)
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "scripted-model"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }
        ],
        "usage": chat_usage(),
    }


def chat_chunks(body: Mapping[str, Any], command: str, final_text: str) -> Iterator[Any]:
    """The streamed completion: the role, the content or tool call, the finish, the usage."""
    whole = chat_completion(body, command, final_text)
    message, finish = whole["choices"][0]["message"], whole["choices"][0]["finish_reason"]
    head = {key: whole[key] for key in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"

    def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]}

    yield chunk({"role": "assistant", "content": ""})
    if message.get("tool_calls"):
        call = message["tool_calls"][0]
        yield chunk({"tool_calls": [{"index": 0, **call}]})
    else:
        yield chunk({"content": message["content"]})
    yield chunk({}, finish)
    yield {**head, "choices": [], "usage": chat_usage()}


def chat_quota_error(retry_secs: int) -> dict[str, Any]:
    """The 429 body of an OpenAI-compatible endpoint whose quota is used up until a reset (the
    wording Qwen Code fails fast on rather than retrying: quota, exceeded, will reset)."""
    return {
        "error": {
            "message": (
                "You exceeded your current quota; it will reset in "
                f"{retry_secs}s. Please try again in {retry_secs}s."
            ),
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
