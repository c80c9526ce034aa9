"""How the terminal views lay out what they show: columns, durations and token counts.

Decides the one way every table of `runner history`, `show` and `report` aligns its columns
and writes a duration or a token count. Never prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from runner_core.history.records import TokenUsage


def duration_text(ms: int) -> str:
    if ms < 1000:
        return f"{ms}ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f}s"
    minutes, seconds = divmod(ms // 1000, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def tokens_text(tokens: TokenUsage | None) -> str:
    return "-" if tokens is None else f"{tokens.input}/{tokens.output}/{tokens.cached}"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], indent: str = "") -> list[str]:
    """Left-aligned columns two spaces apart, no trailing blanks.

    Written with `map` over whole columns and rows: `runner history` lays out a row per
    iteration, tens of thousands of cells at a time.
    """
    body = [tuple(headers), *map(tuple, rows)]
    widths = [max(map(len, column)) for column in zip(*body, strict=True)]
    return [(indent + "  ".join(map(str.ljust, row, widths))).rstrip() for row in body]
