"""runner_shell/views/echo.py: a line is written as `typer.echo` writes it, style codes kept
for a terminal only, UTF-8 where the stream was left on ASCII."""

from __future__ import annotations

import io

from runner_shell.views.echo import write_line


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Broken(io.StringIO):
    def isatty(self) -> bool:
        raise ValueError("closed")


def test_style_codes_are_dropped_off_a_terminal_and_kept_on_one() -> None:
    plain, terminal, broken = io.StringIO(), Terminal(), Broken()
    for stream in (plain, terminal, broken):
        write_line(stream, "\033[1mstuck\033[0m root.2")
    assert plain.getvalue() == broken.getvalue() == "stuck root.2\n"
    assert terminal.getvalue() == "\033[1mstuck\033[0m root.2\n"


def test_an_ascii_stream_gets_utf8_bytes_in_order() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    stream.write("first ")
    write_line(stream, "naïve → done")
    stream.flush()
    assert raw.getvalue() == "first naïve → done\n".encode()
