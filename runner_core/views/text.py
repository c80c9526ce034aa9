"""How the runner makes any text one line, and safe for a terminal: error messages, excerpts,
table cells and the text views.

Decides the one rule for flattening (whitespace runs become one space, cut with a mark), for
the line an error prints (control characters escaped, cut at MESSAGE_MAX_CHARS) and for what a
text view may send to a terminal (what the agent wrote, escaped). Never prints.
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
    return _escaped(message, keep="")


def terminal_text(text: str) -> str:
    """`text` as a text view prints it: every character that is not printable escaped as
    Python writes it (`\\x1b`, `\\u202e`), line breaks and tabs kept.

    What an agent wrote (a summary, a title, a log line) reaches the terminal through this: a
    control character would start an escape sequence (a title, a hyperlink, a cleared screen) and
    a format character (the bidi overrides and isolates) would reorder what follows it.
    """
    return _escaped(text, keep="\n\t")


def _escaped(text: str, keep: str) -> str:
    # A whole view is one string of many lines: asked of the string at once (the characters
    # kept taken out), "is anything to escape?" is a C loop, not a Python one per character.
    rest = text
    for char in keep:
        rest = rest.replace(char, "")
    if rest.isprintable():
        return text
    return "".join(
        char if char.isprintable() or char in keep else char.encode("unicode_escape").decode()
        for char in text
    )
