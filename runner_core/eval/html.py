"""The eval's summary as one self-contained HTML page: the table, and an inline SVG plot of each
variant's success rate (with its 95 % interval) against its mean cost per run.

Decides the page's markup only; never reads or writes a file. No script, no external resource:
the page opens from disk, offline, as it was written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from runner_core.eval.summary import TABLE_HEADER, table_cells

WIDTH, HEIGHT, MARGIN = 640, 360, 56
_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem;color:#222}"
    "table{border-collapse:collapse;margin-bottom:2rem}"
    "th,td{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}"
    "th{background:#f3f3f3}svg text{font-size:11px}"
)


def _x(cost: float, top: float) -> float:
    return MARGIN + (cost / top if top > 0 else 0.5) * (WIDTH - 2 * MARGIN)


def _y(rate: float) -> float:
    return HEIGHT - MARGIN - rate * (HEIGHT - 2 * MARGIN)


def plot_svg(rows: Sequence[Mapping[str, Any]]) -> str:
    """Success rate (y, 0..1) against mean cost per run (x), one point per row."""
    top = max((row["mean_cost_usd"] for row in rows), default=0.0)
    parts = [
        f'<svg id="plot" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        'aria-label="success rate against cost per variant">',
        f'<line x1="{MARGIN}" y1="{HEIGHT - MARGIN}" x2="{WIDTH - MARGIN}" '
        f'y2="{HEIGHT - MARGIN}" stroke="#444"/>',
        f'<line x1="{MARGIN}" y1="{MARGIN}" x2="{MARGIN}" y2="{HEIGHT - MARGIN}" stroke="#444"/>',
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 16}" text-anchor="middle">'
        f"mean cost per run (USD, 0 to {top:.4f})</text>",
        f'<text x="14" y="{HEIGHT / 2}" transform="rotate(-90 14 {HEIGHT / 2})" '
        'text-anchor="middle">success rate</text>',
    ]
    for tick in (0.0, 0.5, 1.0):
        parts.append(
            f'<text x="{MARGIN - 6}" y="{_y(tick) + 4:.1f}" text-anchor="end">{tick:.1f}</text>'
        )
    for row in rows:
        x, (low, high) = _x(row["mean_cost_usd"], top), row["interval"]
        label = escape(f"{row['case']} / {row['backend']} / {row['prompts']}")
        parts.append(
            f'<g class="variant"><title>{label}: {row["success_rate"]:.0%}</title>'
            f'<line x1="{x:.1f}" y1="{_y(low):.1f}" x2="{x:.1f}" y2="{_y(high):.1f}" '
            'stroke="#88a"/>'
            f'<circle cx="{x:.1f}" cy="{_y(row["success_rate"]):.1f}" r="5" fill="#2a6"/>'
            f'<text x="{x + 8:.1f}" y="{_y(row["success_rate"]) - 6:.1f}">{label}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def summary_html(document: Mapping[str, Any]) -> str:
    """The page of a `runner eval` summary document."""
    rows = document["rows"]
    head = "".join(f"<th>{escape(name)}</th>" for name in TABLE_HEADER)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in table_cells(row)) + "</tr>"
        for row in rows
    )
    title = escape(f"runner eval {document['eval_id']}")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{title}</h1>"
        f'<table id="summary"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
        f"<h2>Success rate against cost</h2>{plot_svg(rows)}"
        "</body></html>\n"
    )
