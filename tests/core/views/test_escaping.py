"""What a text view may send to a terminal: the agent's control and bidi characters escaped,
its line breaks and tabs kept, everything printable as it was."""

from __future__ import annotations

import pytest

from runner_core.views.text import error_line, terminal_text

OSC_TITLE = "\x1b]0;pwned\x07"
OSC_LINK = "\x1b]8;;http://evil.invalid\x1b\\click\x1b]8;;\x1b\\"


@pytest.mark.parametrize(
    ("written", "printed"),
    [
        ("plain text, ünïcödé and 中文", "plain text, ünïcödé and 中文"),
        ("two\nlines\tand a tab", "two\nlines\tand a tab"),
        (f"{OSC_TITLE}done", "\\x1b]0;pwned\\x07done"),
        (OSC_LINK, "\\x1b]8;;http://evil.invalid\\x1b\\click\\x1b]8;;\\x1b\\"),
        ("\x1b[2J\x1b[Hcleared", "\\x1b[2J\\x1b[Hcleared"),
        ("over\rwritten", "over\\rwritten"),
        ("\x9b31mred", "\\x9b31mred"),
        ("txt.\u202eexe", "txt.\\u202eexe"),
        ("\u202a\u202b\u202c\u202d", "\\u202a\\u202b\\u202c\\u202d"),
        ("\u2066\u2067\u2068\u2069", "\\u2066\\u2067\\u2068\\u2069"),
        ("nul\x00bell\x07del\x7f", "nul\\x00bell\\x07del\\x7f"),
    ],
    ids=[
        "printable",
        "line-breaks-and-tabs",
        "osc-title",
        "osc-hyperlink",
        "csi",
        "carriage-return",
        "c1-csi",
        "rlo",
        "embeddings-and-overrides",
        "isolates",
        "c0-and-del",
    ],
)
def test_terminal_text_escapes_what_a_terminal_would_act_on(written: str, printed: str) -> None:
    assert terminal_text(written) == printed


def test_an_error_line_escapes_line_breaks_too() -> None:
    assert error_line("a\nb\u202ec") == "a\\nb\\u202ec"
