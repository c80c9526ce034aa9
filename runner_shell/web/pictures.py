"""The pictures of `runner serve`'s page and snapshot: SVG drawn from runner_core.views.charts.

The tree's progress, the tests passing per iteration, tokens and cost over time and the slots'
timeline, each readable without colour: every series has its own pattern, dash or marker and a
label in words, and every mark a hover title. Everything shown is escaped: node ids, titles and
errors come from the agent's tree and output.
"""

from __future__ import annotations

import bisect
import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime

from runner_core.history.records import ExecutionHistory
from runner_core.views.charts import (
    Progress,
    SpendPoint,
    TestsPoint,
    Timeline,
    duration_text,
    slot_timeline,
    spend_series,
    tests_series,
    tree_progress,
)
from runner_shell.web.facts import PageFacts

WIDTH = 440  # the small pictures' drawing width (they show at about this size)
WIDE = 1200  # the timeline's
# The timeline shows the latest iterations only: at thousands, bars a pixel wide would show
# nothing but cost a redrawing of every one at each new iteration.
TIMELINE_BARS = 200
# The tests picture shows the latest reports only, for the same reason: its plot is about
# 390 pixels wide, so at thousands of iterations each bar would be a pixel at most.
TESTS_BARS = 200


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


# ---------------------------------------------------------------- the pictures


# What each picture was last drawn from and its SVG, kept by a long-lived reader (`runner
# serve`'s watcher) between two drawings.
DrawingMemo = dict[str, tuple[tuple[object, ...], str]]


def pictures_html(facts: PageFacts, memo: DrawingMemo | None = None) -> str:
    """The four pictures, each a figure with its SVG: the server sends this whole on change.

    With `memo`, a picture drawn from the very same objects as last time (`_same`) is not
    drawn again: the status document and the history are the objects the server's status
    cache keeps while no file they were read from changes, and a change to the events log
    alone (an agent's output) changes neither. Only the timeline reads the clock, and only
    while an iteration runs (its bar ends now). On a long run drawing a picture costs many
    times the reading that asked for it.
    """
    if facts.status is None:
        return '<p class="hint">No run to draw.</p>'
    status, history = facts.status, facts.history
    running = status.get("running") is not None or bool(status.get("jobs"))
    drawings: tuple[tuple[str, tuple[object, ...], Callable[[], str]], ...] = (
        ("progress", (status,), lambda: progress_svg(tree_progress(status["tree"]))),
        ("tests", (history,), lambda: tests_svg(tests_series(history))),
        ("spend", (history,), lambda: spend_svg(spend_series(history))),
        (
            "timeline",
            (history, status, facts.slots, facts.now if running else None),
            lambda: timeline_svg(slot_timeline(_latest(history), status, facts.now, facts.slots)),
        ),
    )
    svgs = {name: _drawn(name, inputs, draw, memo) for name, inputs, draw in drawings}
    return "".join(
        (
            _figure_html("Tree progress", svgs["progress"]),
            _figure_html("Tests passing per iteration", svgs["tests"]),
            _figure_html("Spent over time (cumulative)", svgs["spend"]),
            _figure_html("Slots timeline", svgs["timeline"], wide=True),
        )
    )


def _latest(history: ExecutionHistory) -> ExecutionHistory:
    """The history's last TIMELINE_BARS records, as the timeline shows them."""
    if len(history.records) <= TIMELINE_BARS:
        return history
    return ExecutionHistory(history.records[-TIMELINE_BARS:])


def _drawn(
    name: str, inputs: tuple[object, ...], draw: Callable[[], str], memo: DrawingMemo | None
) -> str:
    if memo is None:
        return draw()
    known = memo.get(name)
    if known is not None and _same(known[0], inputs):
        return known[1]
    svg = draw()
    memo[name] = (inputs, svg)
    return svg


def _same(these: tuple[object, ...], those: tuple[object, ...]) -> bool:
    """The very same objects, one by one (no deep comparison of a history of thousands of
    records); the slots and the clock compared by value."""
    return len(these) == len(those) and all(
        this is that or (type(this) in (int, datetime) and this == that)
        for this, that in zip(these, those, strict=True)
    )


def _figure_html(caption: str, svg: str, wide: bool = False) -> str:
    kind = ' class="wide"' if wide else ""
    return f"<figure{kind}><figcaption>{esc(caption)}</figcaption>{svg}</figure>"


# Each fill: a pattern and a colour, so that no two are told apart by colour alone.
_FILLS = {
    "passed": ("solid", "#2e8b4e"),
    "decomposed": ("dots", "#7a5bbf"),
    "failed": ("hatch", "#c0392b"),
    "retry": ("dots", "#b8651b"),
    "error": ("cross", "#7d1f16"),
    "running": ("stripes", "#2f6fdf"),
    "stuck": ("hatch", "#c0392b"),
    "skipped": ("cross", "#999999"),
    "open": ("solid", "#d8dce3"),
}


def _defs(prefix: str, names: Iterable[str]) -> str:
    """A pattern per fill name, with ids prefixed (every SVG of the page shares one id space)."""
    shapes = {
        "hatch": '<path d="M0,6 L6,0" stroke="#fff" stroke-width="1.6"/>',
        "stripes": '<path d="M0,0 L0,6" stroke="#fff" stroke-width="2"/>',
        "dots": '<circle cx="3" cy="3" r="1.3" fill="#fff"/>',
        "cross": '<path d="M0,0 L6,6 M6,0 L0,6" stroke="#fff" stroke-width="1.2"/>',
    }
    defs = []
    for name in names:
        kind, colour = _FILLS[name]
        if kind == "solid":
            continue
        defs.append(
            f'<pattern id="{prefix}-{name}" width="6" height="6" patternUnits="userSpaceOnUse">'
            f'<rect width="6" height="6" fill="{colour}"/>{shapes[kind]}</pattern>'
        )
    return f"<defs>{''.join(defs)}</defs>"


def _fill(prefix: str, name: str) -> str:
    kind, colour = _FILLS[name]
    return colour if kind == "solid" else f"url(#{prefix}-{name})"


def _legend(
    prefix: str, names: Sequence[str], y: float, labels: Mapping[str, str] | None = None
) -> str:
    items, x = [], 8.0
    for name in names:
        label = (labels or {}).get(name, name)
        items.append(
            f'<rect x="{x}" y="{y - 9}" width="12" height="12" fill="{_fill(prefix, name)}" '
            f'stroke="#556"/><text x="{x + 16}" y="{y + 1}" class="legend">{esc(label)}</text>'
        )
        x += 28 + 7 * len(label)
    return f'<g class="legend">{"".join(items)}</g>'


def _svg(svg_id: str, label: str, height: int, body: str, width: int = WIDTH) -> str:
    return (
        f'<svg id="{svg_id}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="100%" role="img" aria-label="{esc(label)}"><title>{esc(label)}</title>{body}</svg>'
    )


def _empty(svg_id: str, label: str, why: str, width: int = WIDTH) -> str:
    return _svg(svg_id, label, 40, f'<text x="8" y="24" class="empty">{esc(why)}</text>', width)


def progress_svg(progress: Progress) -> str:
    label = f"Leaves: {progress.passed}/{progress.total} passed"
    if progress.total == 0:
        return _empty("progress", label, "no leaves yet")
    names = ("passed", "running", "stuck", "skipped", "open")
    counts = {name: getattr(progress, name) for name in names}
    left, width, parts, x = 8.0, WIDTH - 16.0, [], 8.0
    for name in names:
        if not counts[name]:
            continue
        w = width * counts[name] / progress.total
        parts.append(
            f'<rect class="seg seg-{name}" x="{x:.1f}" y="22" width="{w:.1f}" height="22" '
            f'fill="{_fill("pr", name)}" stroke="#556"><title>{counts[name]} {name}</title></rect>'
        )
        if w > 24:
            parts.append(
                f'<text x="{x + w / 2:.1f}" y="37" text-anchor="middle" class="on-bar">'
                f"{counts[name]}</text>"
            )
        x += w
    del left
    legend_labels = {name: f"{name} {counts[name]}" for name in names}
    body = (
        _defs("pr", names)
        + f'<text x="8" y="15" class="heading">{esc(label)}</text>'
        + "".join(parts)
        + _legend("pr", names, 64, legend_labels)
    )
    return _svg("progress", label, 74, body)


def tests_svg(points: Sequence[TestsPoint]) -> str:
    label = "Tests passing per iteration"
    if not points:
        return _empty("chart-tests", label, "no guard report yet")
    reports = len(points)
    points = points[-TESTS_BARS:]
    top = max(max(point.total for point in points), 1)
    plot_left, plot_right, plot_top, plot_bottom = 40.0, WIDTH - 10.0, 14.0, 150.0
    step = (plot_right - plot_left) / len(points)
    bar = max(min(step * 0.7, 40.0), 1.0)
    parts = [_y_axis(plot_left, plot_right, plot_top, plot_bottom, top, "tests")]
    for index, point in enumerate(points):
        x = plot_left + index * step + (step - bar) / 2
        scale = (plot_bottom - plot_top) / top
        passed_h, failed_h = point.passed * scale, point.failed * scale
        tip = (
            f"iter {point.iteration}: {point.passed}/{point.total} passing, {point.failed} failing"
        )
        parts.append(
            f'<g class="bar" data-iter="{point.iteration}"><title>{esc(tip)}</title>'
            f'<rect class="passed" x="{x:.1f}" y="{plot_bottom - passed_h:.1f}" width="{bar:.1f}" '
            f'height="{passed_h:.1f}" fill="{_fill("te", "passed")}"/>'
            f'<rect class="failed" x="{x:.1f}" y="{plot_bottom - passed_h - failed_h:.1f}" '
            f'width="{bar:.1f}" height="{failed_h:.1f}" fill="{_fill("te", "failed")}"/>'
            "</g>"
        )
        if len(points) <= 24:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{plot_bottom + 12}" text-anchor="middle" '
                f'class="tick">{point.iteration}</text>'
            )
            if bar >= 18:
                parts.append(
                    f'<text x="{x + bar / 2:.1f}" y="{plot_bottom - passed_h - failed_h - 3:.1f}" '
                    f'text-anchor="middle" class="value">{point.passed}/{point.total}</text>'
                )
    shown = (
        "iteration" if reports == len(points) else f"iteration (latest {len(points)} of {reports})"
    )
    parts.append(
        f'<text x="{(plot_left + plot_right) / 2:.1f}" y="{plot_bottom + 25}" text-anchor="middle" '
        f'class="axis-label">{shown}</text>'
    )
    body = _defs("te", ("failed",)) + "".join(parts) + _legend("te", ("passed", "failed"), 196)
    return _svg("chart-tests", label, 206, body)


def _y_axis(left: float, right: float, top: float, bottom: float, most: float, unit: str) -> str:
    lines = []
    for fraction in (0.0, 0.5, 1.0):
        y = bottom - (bottom - top) * fraction
        value = most * fraction
        shown = f"{value:g}" if value < 10_000 else f"{value / 1000:.0f}k"
        lines.append(
            f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
            f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" class="tick">{shown}</text>'
        )
    lines.append(f'<text x="2" y="{top - 4}" class="tick">{esc(unit)}</text>')
    return "".join(lines)


def spend_svg(points: Sequence[SpendPoint]) -> str:
    label = "Tokens and cost spent over time"
    if not points:
        return _empty("chart-spend", label, "no iteration finished yet")
    plot_left, plot_right, plot_top, plot_bottom = 48.0, WIDTH - 56.0, 14.0, 150.0
    span = max(points[-1].secs, 1.0)
    most_tokens = max(points[-1].tokens, 1)
    costs = [point.cost_usd for point in points if point.cost_usd is not None]
    most_cost = max(max(costs, default=0.0), 1e-9)

    def x_of(secs: float) -> float:
        return plot_left + (plot_right - plot_left) * secs / span

    def y_of(value: float, most: float) -> float:
        return plot_bottom - (plot_bottom - plot_top) * value / most

    points = _one_per_column(points, x_of, plot_right - plot_left)
    parts = [_y_axis(plot_left, plot_right, plot_top, plot_bottom, most_tokens, "tokens")]
    token_path = " ".join(
        f"{'M' if i == 0 else 'L'}{x_of(p.secs):.1f},{y_of(p.tokens, most_tokens):.1f}"
        for i, p in enumerate(points)
    )
    parts.append(
        f'<path class="line-tokens" d="{token_path}" fill="none" stroke="#1d2330" '
        'stroke-width="2"/>'
    )
    for p in points:
        parts.append(
            f'<circle class="pt-tokens" cx="{x_of(p.secs):.1f}" '
            f'cy="{y_of(p.tokens, most_tokens):.1f}" '
            f'r="3" fill="#1d2330"><title>iter {p.iteration}: {p.tokens} tokens after '
            f"{esc(duration_text(p.secs))}</title></circle>"
        )
    if costs:
        cost_points = [p for p in points if p.cost_usd is not None]
        cost_path = " ".join(
            f"{'M' if i == 0 else 'L'}{x_of(p.secs):.1f},{y_of(p.cost_usd or 0.0, most_cost):.1f}"
            for i, p in enumerate(cost_points)
        )
        parts.append(
            f'<path class="line-cost" d="{cost_path}" fill="none" stroke="#b8651b" '
            'stroke-width="2" stroke-dasharray="6 4"/>'
        )
        for p in cost_points:
            x, y = x_of(p.secs), y_of(p.cost_usd or 0.0, most_cost)
            parts.append(
                f'<rect class="pt-cost" x="{x - 3:.1f}" y="{y - 3:.1f}" width="6" height="6" '
                f'fill="#b8651b"><title>iter {p.iteration}: ${p.cost_usd:.4f} after '
                f"{esc(duration_text(p.secs))}</title></rect>"
            )
        parts.append(
            f'<text x="{plot_right + 4}" y="{plot_top + 4}" class="tick">${most_cost:.2f}</text>'
            f'<text x="{plot_right + 4}" y="{plot_bottom + 4}" class="tick">$0</text>'
        )
    parts.append(_spend_footer(points, span, plot_left, plot_right, plot_bottom))
    return _svg("chart-spend", label, 200, "".join(parts) + _SPEND_LEGEND)


def _one_per_column(
    points: Sequence[SpendPoint], x_of: Callable[[float], float], columns: float
) -> Sequence[SpendPoint]:
    """`points` (in time order) when the plot has a pixel column for each, else the last point
    of each column: the totals are cumulative, so the line keeps its shape at the picture's
    resolution (the last point, the run's totals, always drawn), and a run of thousands of
    iterations is drawn at the cost of what the picture shows, not of what the run holds: the
    columns of points in time order never decrease, so each column's last is found by bisection."""
    if len(points) <= columns:
        return points

    def column_of(point: SpendPoint) -> int:
        return int(x_of(point.secs))

    kept: list[SpendPoint] = []
    start = 0
    while start < len(points):
        end = bisect.bisect_right(points, column_of(points[start]), lo=start, key=column_of)
        kept.append(points[end - 1])
        start = end
    return kept


def _spend_footer(
    points: Sequence[SpendPoint], span: float, left: float, right: float, bottom: float
) -> str:
    """The time axis's ends and what was spent in all."""
    last = points[-1]
    summary = f"{last.tokens} tokens" + (
        f", ${last.cost_usd:.4f}" if last.cost_usd is not None else ", no cost reported"
    )
    return (
        f'<text x="{left}" y="{bottom + 14}" class="tick">0s</text>'
        f'<text x="{right}" y="{bottom + 14}" text-anchor="end" class="tick">'
        f"{esc(duration_text(span))}</text>"
        f'<text x="{(left + right) / 2:.1f}" y="{bottom + 14}" text-anchor="middle" '
        f'class="value">{esc(summary)}</text>'
    )


_SPEND_LEGEND = (
    '<g class="legend">'
    '<line x1="8" x2="30" y1="190" y2="190" stroke="#1d2330" stroke-width="2"/>'
    '<circle cx="19" cy="190" r="3" fill="#1d2330"/>'
    '<text x="36" y="194" class="legend">tokens (in+out)</text>'
    '<line x1="150" x2="172" y1="190" y2="190" stroke="#b8651b" stroke-width="2" '
    'stroke-dasharray="6 4"/><rect x="158" y="187" width="6" height="6" fill="#b8651b"/>'
    '<text x="178" y="194" class="legend">cost (USD)</text></g>'
)


def timeline_svg(timeline: Timeline) -> str:
    label = "Slots timeline: which node each slot ran, when, and how it ended"
    if not timeline.bars:
        return _empty("timeline", label, "no iteration yet", WIDE)
    lane_h, top, left, right = 26.0, 18.0, 90.0, WIDE - 10.0
    span = max(timeline.span, 1.0)
    height = int(top + lane_h * len(timeline.lanes) + 44)
    names = ("passed", "decomposed", "failed", "retry", "error", "running")
    parts = []
    for index, lane in enumerate(timeline.lanes):
        y = top + index * lane_h
        parts.append(
            f'<text x="4" y="{y + 17:.1f}" class="lane">{esc(lane)}</text>'
            f'<line x1="{left}" x2="{right}" y1="{y + lane_h:.1f}" y2="{y + lane_h:.1f}" '
            'class="grid"/>'
        )
    for bar in timeline.bars:
        x = left + (right - left) * bar.start / span
        w = max((right - left) * (bar.end - bar.start) / span, 2.0)
        y = top + bar.lane * lane_h + 3
        tip = (
            f"iter {bar.iteration} {bar.node_id} ({bar.role}): {bar.outcome}, "
            f"{duration_text(bar.end - bar.start)}, started {bar.started_at}"
        )
        parts.append(
            f'<g class="slot-bar outcome-{bar.outcome}" data-iter="{bar.iteration}" '
            f'data-node="{esc(bar.node_id)}"><title>{esc(tip)}</title>'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{lane_h - 6}" '
            f'fill="{_fill("tl", bar.outcome)}" stroke="#1d2330" stroke-width="0.6"/>'
        )
        text = bar.node_id if len(bar.node_id) * 6.5 + 6 < w else ""
        if text:
            parts.append(
                f'<text x="{x + 3:.1f}" y="{y + 14:.1f}" class="on-bar">{esc(text)}</text>'
            )
        parts.append("</g>")
    axis_y = top + lane_h * len(timeline.lanes) + 12
    parts.append(
        f'<text x="{left}" y="{axis_y:.1f}" class="tick">0s</text>'
        f'<text x="{right}" y="{axis_y:.1f}" text-anchor="end" class="tick">'
        f"{esc(duration_text(span))}</text>"
    )
    body = _defs("tl", names) + "".join(parts) + _legend("tl", names, axis_y + 22)
    return _svg("timeline", label, height, body, WIDE)
