"""Writing a command's lines to stdout or stderr without importing typer.

Importing typer (with click and pydantic) costs more than `runner status` on a long run
spends reading it, so the read-only views and the fast entry point (runner_shell/cli/entry.py)
write their lines here, byte for byte as `typer.echo` writes a string: the line and a newline,
flushed; ANSI style codes dropped when the stream is not a terminal; UTF-8 in place of a
stream left on ASCII by a misconfigured environment.
"""

from __future__ import annotations

import codecs
import re
import sys
from typing import TextIO

# click's pattern for the style codes it strips from output that is not a terminal.
_ANSI_STYLE = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except Exception:
        return False


def write_line(stream: TextIO, line: str) -> None:
    """`line` and a newline on `stream`, flushed, as `typer.echo(line)` writes it there."""
    text = line + "\n"
    if "\033" in text and not _is_terminal(stream):
        text = _ANSI_STYLE.sub("", text)
    encoding = getattr(stream, "encoding", None) or "ascii"
    buffer = getattr(stream, "buffer", None)
    if codecs.lookup(encoding).name == "ascii" and buffer is not None:
        stream.flush()
        buffer.write(text.encode("utf-8", "replace"))
        buffer.flush()
        return
    stream.write(text)
    stream.flush()


def echo(line: str, err: bool = False) -> None:
    """`line` on stdout, or on stderr with `err`."""
    write_line(sys.stderr if err else sys.stdout, line)
