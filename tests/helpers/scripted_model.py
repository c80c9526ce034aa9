"""A scripted model on loopback for the real agent CLIs: two turns, streamed as the real APIs do.

Codex CLI streams the OpenAI Responses API (`POST .../responses`, server-sent events) and Claude
Code the Anthropic Messages API (`POST .../v1/messages` with `"stream": true`); Gemini CLI the
Gemini API (`tests.helpers.scripted_gemini`) and the OpenAI-compatible CLIs the Chat Completions
API (`tests.helpers.scripted_chat`). All are served here from one stdlib HTTP server on
127.0.0.1 and a free port, run in a thread.

The script is the same for both: a request that carries no tool result yet is answered with a
call of the agent's shell tool running `command` in its working directory; a request that does
is answered with `final_text`, the agent's last message. Claude Code's side requests (no tools
offered) get a short text. Every answer reports `USAGE`, so the token figures the CLIs print
are the ones this server sent; `requests` keeps every request body for the test to read.
`limited_requests=n` answers the first n requests that offer tools with the wire API's own
usage-limit response instead (HTTP 429, retry in `limit_retry_secs`), a limit the loop waits out.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.helpers.scripted_chat import chat_chunks, chat_completion, chat_quota_error
from tests.helpers.scripted_gemini import gemini_chunks, gemini_quota_error, gemini_response
from tests.helpers.scripted_usage import CACHED_TOKENS, INPUT_TOKENS, OUTPUT_TOKENS

__all__ = ["CACHED_TOKENS", "INPUT_TOKENS", "OUTPUT_TOKENS", "ScriptedModel"]

SIDE_TEXT = "ok"


class ScriptedModel:
    """The server; use as a context manager. `url` is its base, `requests` what it received."""

    def __init__(
        self,
        command: str,
        final_text: str,
        *,
        limited_requests: int = 0,
        limit_retry_secs: int = 2,
        finals: Mapping[str, str] | None = None,
    ) -> None:
        self.command = command
        self.final_text = final_text
        self.limited_requests = limited_requests
        self.limit_retry_secs = limit_retry_secs
        self.limited: list[str] = []  # the paths answered with a usage limit
        # marker -> final text: the first marker found in a request (the command's output the
        # CLI sent back, e.g. `role=decomposer`) picks its final text instead of `final_text`.
        self.finals = dict(finals or {})
        self.requests: list[dict[str, Any]] = []  # {"method", "path", "body"}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def record(self, method: str, path: str, body: Any) -> None:
        with self._lock:
            self.requests.append({"method": method, "path": path, "body": body})

    def final_for(self, body: Any) -> str:
        """The final text answering `body`: that of the first marker it holds, else the one."""
        text = json.dumps(body)
        return next((t for marker, t in self.finals.items() if marker in text), self.final_text)

    def take_limit(self, path: str, body: Any) -> bool:
        """Whether this request is one of the first `limited_requests` offering tools."""
        with self._lock:
            if not (isinstance(body, dict) and body.get("tools")):
                return False
            if len(self.limited) >= self.limited_requests:
                return False
            self.limited.append(path)
            return True

    def model_requests(self, suffix: str) -> list[dict[str, Any]]:
        """The POSTs to a path ending in `suffix` (query string ignored) that offered tools."""
        with self._lock:
            return [
                request
                for request in self.requests
                if request["method"] == "POST"
                and request["path"].split("?")[0].endswith(suffix)
                and isinstance(request["body"], dict)
                and request["body"].get("tools")
            ]


def _handler(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the test reads `requests`, not the server's log

        def do_GET(self) -> None:
            model.record("GET", self.path, None)
            self._json(404, {"error": {"type": "not_found", "message": "scripted model"}})

        def do_HEAD(self) -> None:
            model.record("HEAD", self.path, None)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                body = None
            model.record("POST", self.path, body)
            path = self.path.split("?")[0]
            if not isinstance(body, dict):
                self._json(400, {"error": {"type": "invalid_request", "message": "no JSON"}})
            elif model.take_limit(path, body):
                self._limit(path)
            elif path.endswith(":streamGenerateContent"):
                self._data(gemini_chunks(body, model.command, model.final_for(body)))
            elif path.endswith(":generateContent"):
                self._json(200, gemini_response(body, model.command, model.final_for(body)))
            elif path.endswith(":countTokens"):
                self._json(200, {"totalTokens": INPUT_TOKENS})
            elif path.endswith("/chat/completions"):
                if body.get("stream"):
                    self._data(chat_chunks(body, model.command, model.final_for(body)), done=True)
                else:
                    self._json(200, chat_completion(body, model.command, model.final_for(body)))
            elif path.endswith("/responses"):
                self._events(openai_events(body, model.command, model.final_for(body)))
            elif path.endswith("/messages/count_tokens"):
                self._json(200, {"input_tokens": INPUT_TOKENS})
            elif path.endswith("/messages"):
                events = anthropic_events(body, model.command, model.final_for(body))
                if body.get("stream"):
                    self._events(events)
                else:
                    self._json(200, anthropic_message(body, model.command, model.final_for(body)))
            else:
                self._json(404, {"error": {"type": "not_found", "message": path}})

        def _limit(self, path: str) -> None:
            secs = model.limit_retry_secs
            if ":" in path.rsplit("/", 1)[-1]:
                self._json(429, gemini_quota_error(secs), retry_after=secs)
            else:
                self._json(429, chat_quota_error(secs), retry_after=secs)

        def _data(self, chunks: Iterator[Any], *, done: bool = False) -> None:
            # Gemini's and Chat Completions' streams: `data:` lines only, no event names.
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for chunk in chunks:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            if done:
                self.wfile.write(b"data: [DONE]\n\n")

        def _json(self, status: int, payload: Any, retry_after: int | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            if retry_after is not None:
                self.send_header("Retry-After", str(retry_after))
                # A service out of quota tells the OpenAI SDKs not to retry on their own.
                self.send_header("x-should-retry", "false")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _events(self, events: Iterator[dict[str, Any]]) -> None:
            # Both APIs name each event in an `event:` line and repeat its type in the data.
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for event in events:
                data = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
                self.wfile.write(data.encode())
                self.wfile.flush()

    return Handler


# ---------------------------------------------------------------- OpenAI Responses API


def _has_openai_tool_output(body: Mapping[str, Any]) -> bool:
    items = body.get("input")
    return isinstance(items, list) and any(
        isinstance(item, dict) and str(item.get("type", "")).endswith("call_output")
        for item in items
    )


def _tool_names(body: Mapping[str, Any]) -> list[str]:
    tools = body.get("tools")
    names = []
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict):
            name = tool.get("name") or (tool.get("function") or {}).get("name")
            if isinstance(name, str):
                names.append(name)
    return names


def openai_shell_call(tools: Sequence[str], command: str) -> tuple[str, dict[str, Any]]:
    """`(tool name, arguments)` that run `command` with whichever shell tool codex offered."""
    if "shell_command" in tools:
        return "shell_command", {"command": command}
    if "exec_command" in tools:
        return "exec_command", {"cmd": command}
    return "shell", {"command": ["bash", "-lc", command]}


def openai_usage() -> dict[str, Any]:
    return {
        "input_tokens": INPUT_TOKENS,
        "input_tokens_details": {"cached_tokens": CACHED_TOKENS},
        "output_tokens": OUTPUT_TOKENS,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
    }


def openai_events(
    body: Mapping[str, Any], command: str, final_text: str
) -> Iterator[dict[str, Any]]:
    """The Responses API's stream: one output item (a shell call or the final message)."""
    number = 1 if not _has_openai_tool_output(body) else 2
    response = {"id": f"resp_{number}", "object": "response", "status": "in_progress"}
    yield {"type": "response.created", "response": response}
    if number == 1:
        name, arguments = openai_shell_call(_tool_names(body), command)
        item: dict[str, Any] = {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": name,
            "arguments": json.dumps(arguments),
            "status": "completed",
        }
        yield {"type": "response.output_item.added", "output_index": 0, "item": item}
    else:
        item = {
            "type": "message",
            "id": "msg_2",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": final_text, "annotations": []}],
        }
        started = {**item, "status": "in_progress", "content": []}
        yield {"type": "response.output_item.added", "output_index": 0, "item": started}
        yield {
            "type": "response.output_text.delta",
            "item_id": "msg_2",
            "output_index": 0,
            "content_index": 0,
            "delta": final_text,
        }
    yield {"type": "response.output_item.done", "output_index": 0, "item": item}
    done = {**response, "status": "completed", "output": [item], "usage": openai_usage()}
    yield {"type": "response.completed", "response": done}


# ---------------------------------------------------------------- Anthropic Messages API


def _has_anthropic_tool_result(body: Mapping[str, Any]) -> bool:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return False
    content = messages[-1].get("content") if isinstance(messages[-1], dict) else None
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


def anthropic_usage(output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": INPUT_TOKENS,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": CACHED_TOKENS,
        "output_tokens": output_tokens,
    }


def anthropic_block(body: Mapping[str, Any], command: str, final_text: str) -> dict[str, Any]:
    """The one content block answering `body`: a Bash call, the final text or a side answer."""
    if not body.get("tools"):
        return {"type": "text", "text": SIDE_TEXT}
    if not _has_anthropic_tool_result(body):
        return {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": command}}
    return {"type": "text", "text": final_text}


def anthropic_message(body: Mapping[str, Any], command: str, final_text: str) -> dict[str, Any]:
    block = anthropic_block(body, command, final_text)
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "scripted"),
        "content": [block],
        "stop_reason": "tool_use" if block["type"] == "tool_use" else "end_turn",
        "stop_sequence": None,
        "usage": anthropic_usage(OUTPUT_TOKENS),
    }


def anthropic_events(
    body: Mapping[str, Any], command: str, final_text: str
) -> Iterator[dict[str, Any]]:
    """The Messages API's stream of `anthropic_message`: the block started empty, its content
    as one delta, the stop reason and output tokens at the end."""
    message = anthropic_message(body, command, final_text)
    block = message["content"][0]
    start = {**message, "content": [], "stop_reason": None, "usage": anthropic_usage(1)}
    yield {"type": "message_start", "message": start}
    if block["type"] == "tool_use":
        empty = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        empty = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    yield {"type": "content_block_start", "index": 0, "content_block": empty}
    yield {"type": "content_block_delta", "index": 0, "delta": delta}
    yield {"type": "content_block_stop", "index": 0}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": OUTPUT_TOKENS},
    }
    yield {"type": "message_stop"}
