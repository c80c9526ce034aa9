"""How the runner makes any text one line: error messages, excerpts and table cells.

Decides the one rule for flattening (whitespace runs become one space, cut with a mark) and for
the line an error prints (control characters escaped, cut at MESSAGE_MAX_CHARS). Never prints.
"""

from __future__ import annotations

# An error is one line: a longer one (every node of a huge tree broken) is cut, not flooded.
MESSAGE_MAX_CHARS = 10_000


def flatten(text: str, limit: int | None = None, mark: str = "…") -> str:
    """`text` on one line, whitespace runs collapsed; at most `limit` characters with `mark`."""
    flat = " ".join(text.split())
    if limit is None or len(flat) <= limit:
        return flat
    return flat[: limit - len(mark)] + mark


def error_line(message: str) -> str:
    """`message` cut to MESSAGE_MAX_CHARS, with line breaks and control characters escaped."""
    if len(message) > MESSAGE_MAX_CHARS:
        cut = len(message) - MESSAGE_MAX_CHARS
        message = f"{message[:MESSAGE_MAX_CHARS]} [... {cut} more characters]"
    if message.isprintable():
        return message
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in message
    )
