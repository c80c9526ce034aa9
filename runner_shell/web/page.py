"""The HTML of `runner serve`'s page with the run's state already in it, and its pictures.

`GET /` sends the page rendered from the documents the API serves (the overview, the tree, the
running jobs, the pictures and the history), so a browser without script, or a headless
screenshot, shows the run; app.js then goes live over it. `runner serve --snapshot FILE` writes
the same page self-contained (its CSS inline, no script). The pictures are SVG drawn here from
runner_core.views.charts, readable without colour: every series has its own pattern or dash
and a label, and every mark a hover title. Everything shown is escaped: node ids, titles and
errors come from the agent's tree and output.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

from runner_core.history.execution import record_to_meta
from runner_core.history.records import ExecutionHistory
from runner_core.views.charts import (
    Progress,
    SpendPoint,
    TestsPoint,
    Timeline,
    ago_text,
    duration_text,
    meta_reason,
    parse_time,
    slot_timeline,
    spend_series,
    tests_series,
    tree_progress,
)

STATIC = Path(__file__).parent / "static"
# The tree rows the first state carries; app.js renders the rest lazily once it runs.
FIRST_TREE_ROWS = 2000
LIVE_TREE_ROWS = 201
HISTORY_ROWS = 500
WIDTH = 440  # the small pictures' drawing width (they show at about this size)
WIDE = 1200  # the timeline's


@attrs.frozen
class PageFacts:
    """What the page is rendered from: the status document, the overview, the history and the
    clock reading; `problem` is why they could not be read (the page says so)."""

    status: Mapping[str, Any] | None
    overview: Mapping[str, Any] | None
    history: ExecutionHistory
    now: datetime
    problem: str | None = None
    slots: int = 1  # `[parallel] slots`: the timeline's lanes


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _tag(name: str, attributes: Mapping[str, object], *children: str) -> str:
    shown = "".join(f' {key}="{esc(value)}"' for key, value in attributes.items())
    return f"<{name}{shown}>{''.join(children)}</{name}>"


# ---------------------------------------------------------------- the page


def render_page(facts: PageFacts, *, snapshot: bool = False) -> str:
    """The whole page: served (linking /app.css and /app.js) or a snapshot (CSS inline)."""
    if snapshot:
        css = (STATIC / "app.css").read_text(encoding="utf-8")
        head_links = f"<style>{css}</style>"
        script = ""
    else:
        head_links = '<link rel="stylesheet" href="/app.css">'
        script = '<script src="/app.js"></script>'
    status = facts.status
    title = "runner"
    if status is not None and status.get("run_id"):
        title = f"runner {status['run_id']}"
    kind = "snapshot" if snapshot else "live"
    return (
        "<!doctype html>\n"
        f'<html lang="en" data-page="{kind}">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n{head_links}\n</head>\n<body>\n"
        f"{_header(facts, snapshot)}\n<main>\n"
        f'<section id="pictures" aria-label="pictures">{pictures_html(facts)}</section>\n'
        '<section id="tree-panel">\n<h2>Tree</h2>\n'
        f'<div id="tree" role="tree">{_tree(status, snapshot)}</div>\n</section>\n'
        '<section id="side">\n'
        '<div id="detail"><p class="hint">Click a node to see its goal, acceptance and '
        "executions.</p></div>\n"
        f"{_jobs(status, facts.now)}\n"
        '<div id="live-output" hidden><h2>Agent output</h2><pre id="output"></pre></div>\n'
        '<div id="live-guard" hidden><h2>Guard output</h2><pre id="guard-output"></pre></div>\n'
        f"<h2>Iterations</h2>\n{_history(facts.history, facts.now)}\n</section>\n</main>\n"
        f"{script}\n</body>\n</html>\n"
    )


def _header(facts: PageFacts, snapshot: bool) -> str:
    status, overview = facts.status, facts.overview
    if status is None or overview is None:
        problem = esc(facts.problem or "no run")
        return (
            '<header id="overview"><h1>runner <span id="run-id">…</span></h1>'
            f'<p id="events-failure" role="alert">{problem}</p>{_empty_fields()}</header>'
        )
    state = str(overview["state"])
    selected = status["selected"]
    chosen = (
        f"{selected['path']} ({selected['attempts']}/{selected['max_attempts']})"
        if selected.get("id")
        else selected["status"]
    )
    stuck = ", ".join(ref["path"] for ref in status["stuck"]) or "none"
    budgets = status["budgets"]
    budget = ", ".join(_budget_text(use) for use in budgets) or "none set"
    reached = ' class="reached"' if any(use["exhausted"] for use in budgets) else ""
    suite = status.get("tests")
    tests = ""
    if suite:
        last = suite["last"]
        flaky = f", {len(suite['flaky'])} flaky" if suite["flaky"] else ""
        tests = (
            '<dt id="tests-label">tests</dt><dd id="tests">'
            f"{last['passed']}/{last['total']} +{last['newly_passing']} -{last['regressed']}"
            f"{esc(flaky)}</dd>"
        )
    else:
        tests = '<dt id="tests-label" hidden>tests</dt><dd id="tests" hidden></dd>'
    wait = overview.get("wait")
    if wait:
        left = (parse_time(wait["until"]) - facts.now).total_seconds()
        wait_text = f"{wait['reason']} until {wait['until']} ({duration_text(left)} left)"
        waits = (
            '<dt id="wait-label">wait</dt>'
            f'<dd id="wait" title="{esc(wait["until"])}">{esc(wait_text)}</dd>'
        )
    else:
        waits = '<dt id="wait-label" hidden>wait</dt><dd id="wait" hidden></dd>'
    live = "snapshot" if snapshot else "connecting…"
    read_at = facts.now.isoformat(timespec="seconds").replace("+00:00", "Z")
    guidance = status.get("guidance")
    guidance_html = (
        f'<pre id="guidance">guidance: {esc(guidance)}</pre>'
        if guidance
        else '<pre id="guidance" hidden></pre>'
    )
    run_id = status["run_id"] or "(not started)"
    leaves = status["leaves"]
    fields = (
        "<dt>state</dt><dd>"
        f'<span id="run-state" class="badge s-{esc(state)}">{esc(state)}</span></dd>'
        + _field("branch", "branch", status.get("branch") or "-")
        + _field("iteration", "iteration", f"{overview['iteration']} of {status['max_iterations']}")
        + _field("leaves", "leaves", f"{leaves['passed']}/{leaves['total']} passed")
        + _field("selected", "selected", chosen)
        + _field("stuck", "stuck", stuck)
        + tests
        + f'<dt>budget</dt><dd id="budget"{reached}>{esc(budget)}</dd>'
        + waits
        + f'<dt>live</dt><dd id="live" title="read at {esc(read_at)}">{esc(live)}</dd>'
    )
    return (
        f'<header id="overview">\n<h1>runner <span id="run-id">{esc(run_id)}</span></h1>\n'
        f"<dl>{fields}</dl>\n{guidance_html}\n"
        '<p id="events-failure" role="alert" hidden></p>\n</header>'
    )


def _field(label: str, field_id: str, value: object) -> str:
    return f'<dt>{esc(label)}</dt><dd id="{field_id}">{esc(value)}</dd>'


def _empty_fields() -> str:
    ids = ("run-state", "branch", "iteration", "leaves", "selected", "stuck", "budget", "live")
    hidden = "".join(f'<span id="{name}" hidden></span>' for name in ids)
    return (
        f'{hidden}<dt id="tests-label" hidden></dt><dd id="tests" hidden></dd>'
        '<dt id="wait-label" hidden></dt><dd id="wait" hidden></dd><pre id="guidance" hidden></pre>'
    )


def _budget_text(use: Mapping[str, Any]) -> str:
    text = f"{use['budget']} {_figure(use['spent'])}/{_figure(use['limit'])}"
    return text + (" (reached)" if use["exhausted"] else "")


def _figure(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _tree(status: Mapping[str, Any] | None, snapshot: bool) -> str:
    """The tree's rows: a snapshot's whole (up to FIRST_TREE_ROWS), the live page's as app.js
    first renders them (the root open, its first 200 children). Each is a `first-node`, drawn
    as app.js's `node` rows are, until app.js replaces them with its own."""
    if status is None:
        return ""
    rows = []
    shown = status["tree"][:FIRST_TREE_ROWS]
    if not snapshot:
        shown = [row for row in shown if row["depth"] <= 1][:LIVE_TREE_ROWS]
    for row in shown:
        figures = f"att {row['attempts']}/{row['max_attempts']} exe {row['executions']}"
        rows.append(
            f'<div class="first-node depth-{min(int(row["depth"]), 12)}" role="treeitem" '
            f'data-id="{esc(row["id"])}"><span class="toggle">·</span>'
            f'<span class="badge s-{esc(row["state"])}">{esc(row["state"])}</span>'
            f'<span class="title" title="{esc(row["title"])}">{esc(row["title"])} </span>'
            f'<span class="id">[{esc(row["id"])}]</span>'
            f'<span class="figures">{figures}</span></div>'
        )
    more = len(status["tree"]) - len(shown)
    if more > 0:
        rows.append(f'<div class="more">{more} more nodes (app.js shows them on demand)</div>')
    return "".join(rows)


def _jobs(status: Mapping[str, Any] | None, now: datetime) -> str:
    jobs = [] if status is None else list(status.get("jobs") or [])
    shown = []
    for job in jobs:
        word = "running" if job["alive"] else "interrupted"
        worker = f" on {esc(job['worker'])}" if job.get("worker") else ""
        shown.append(
            f'<div class="job" data-iter="{esc(job["iteration"])}"><h3>'
            f'<span class="badge s-{word}">{word}</span> iter {esc(job["iteration"])} '
            f'<a href="#node/{esc(job["node_id"])}">{esc(job["node_id"])}</a> '
            f"{esc(job['role'])} {esc(job['phase'])} "
            f'<span class="since" data-since="{esc(job["started_at"])}" '
            f'title="started {esc(job["started_at"])}">for '
            f"{esc(duration_text((now - parse_time(job['started_at'])).total_seconds()))}</span>"
            f'{worker}</h3><pre class="job-output"></pre></div>'
        )
    hidden = "" if shown else " hidden"
    return (
        f'<div id="live-jobs"{hidden}><h2>Running jobs</h2>'
        f'<div id="jobs">{"".join(shown)}</div></div>'
    )


def _tests_cell(tests: Mapping[str, Any] | None) -> str:
    if not tests:
        return "-"
    return esc(
        f"{tests['passed']}/{tests['total']} +{tests['newly_passing']} -{tests['regressed']}"
    )


def _history(history: ExecutionHistory, now: datetime) -> str:
    heads = (
        "iter",
        "node",
        "role",
        "status",
        "guard",
        "tests",
        "duration",
        "tokens",
        "cost",
        "error",
    )
    head = "".join(f"<th>{name}</th>" for name in heads)
    records = sorted(history.records, key=lambda r: r.iteration, reverse=True)[:HISTORY_ROWS]
    rows = []
    for record in records:
        meta = record_to_meta(record)
        tests = meta.get("tests")
        tokens = meta.get("tokens")
        cells = [
            f'<a href="#iter/{record.iteration}" title="ended {esc(record.ended_at)} '
            f'({esc(ago_text(record.ended_at, now))})">{record.iteration}</a>',
            esc(record.node_id),
            esc(record.role.value),
            esc(record.status.value),
            esc(record.guard.value),
            _tests_cell(tests),
            f"{record.duration_ms / 1000:.1f}s",
            esc(f"{tokens['input']}/{tokens['output']}/{tokens['cached']}") if tokens else "-",
            "-" if record.cost_usd is None else f"${record.cost_usd:.4f}",
        ]
        reason = meta_reason(meta) or ""
        rows.append(
            f'<tr data-iter="{record.iteration}">'
            + "".join(f"<td>{cell}</td>" for cell in cells)
            + f'<td class="error" title="{esc(reason)}">{esc(reason)}</td></tr>'
        )
    return (
        f'<table id="history"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


# ---------------------------------------------------------------- the pictures


def pictures_html(facts: PageFacts) -> str:
    """The four pictures, each a figure with its SVG: the server sends this whole on change."""
    if facts.status is None:
        return '<p class="hint">No run to draw.</p>'
    timeline = slot_timeline(facts.history, facts.status, facts.now, facts.slots)
    return "".join(
        (
            _figure_html("Tree progress", progress_svg(tree_progress(facts.status["tree"]))),
            _figure_html("Tests passing per iteration", tests_svg(tests_series(facts.history))),
            _figure_html("Spent over time (cumulative)", spend_svg(spend_series(facts.history))),
            _figure_html("Slots timeline", timeline_svg(timeline), wide=True),
        )
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
    parts.append(
        f'<text x="{(plot_left + plot_right) / 2:.1f}" y="{plot_bottom + 25}" text-anchor="middle" '
        'class="axis-label">iteration</text>'
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
    parts.append(
        f'<text x="{plot_left}" y="{plot_bottom + 14}" class="tick">0s</text>'
        f'<text x="{plot_right}" y="{plot_bottom + 14}" text-anchor="end" class="tick">'
        f"{esc(duration_text(span))}</text>"
    )
    last = points[-1]
    summary = f"{last.tokens} tokens" + (
        f", ${last.cost_usd:.4f}" if last.cost_usd is not None else ", no cost reported"
    )
    parts.append(
        f'<text x="{(plot_left + plot_right) / 2:.1f}" y="{plot_bottom + 14}" text-anchor="middle" '
        f'class="value">{esc(summary)}</text>'
    )
    legend = (
        '<g class="legend">'
        '<line x1="8" x2="30" y1="190" y2="190" stroke="#1d2330" stroke-width="2"/>'
        '<circle cx="19" cy="190" r="3" fill="#1d2330"/>'
        '<text x="36" y="194" class="legend">tokens (in+out)</text>'
        '<line x1="150" x2="172" y1="190" y2="190" stroke="#b8651b" stroke-width="2" '
        'stroke-dasharray="6 4"/><rect x="158" y="187" width="6" height="6" fill="#b8651b"/>'
        '<text x="178" y="194" class="legend">cost (USD)</text></g>'
    )
    return _svg("chart-spend", label, 200, "".join(parts) + legend)


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
