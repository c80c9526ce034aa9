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

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from runner_core.history.execution import record_to_meta
from runner_core.history.records import ExecutionHistory
from runner_core.views.charts import ago_text, duration_text, meta_reason, parse_time
from runner_shell.web.facts import PageFacts
from runner_shell.web.pictures import esc, pictures_html

STATIC = Path(__file__).parent / "static"
# The tree rows the first state carries; app.js renders the rest lazily once it runs.
FIRST_TREE_ROWS = 2000
LIVE_TREE_ROWS = 201
HISTORY_ROWS = 500


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
        f"<h2>Iterations</h2>\n{_history(facts.history, facts.now, _switches(facts))}\n"
        "</section>\n</main>\n"
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
    tests = _tests_field(status.get("tests"))
    waits = _wait_field(overview.get("wait"), facts.now)
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


def _tests_field(suite: Mapping[str, Any] | None) -> str:
    if not suite:
        return '<dt id="tests-label" hidden>tests</dt><dd id="tests" hidden></dd>'
    last = suite["last"]
    flaky = f", {len(suite['flaky'])} flaky" if suite["flaky"] else ""
    return (
        '<dt id="tests-label">tests</dt><dd id="tests">'
        f"{last['passed']}/{last['total']} +{last['newly_passing']} -{last['regressed']}"
        f"{esc(flaky)}</dd>"
    )


def _wait_field(wait: Mapping[str, Any] | None, now: datetime) -> str:
    """The wait a live loop sleeps through, as a countdown; the absolute end on hover."""
    if not wait:
        return '<dt id="wait-label" hidden>wait</dt><dd id="wait" hidden></dd>'
    left = (parse_time(wait["until"]) - now).total_seconds()
    text = f"{wait['reason']} until {wait['until']} ({duration_text(left)} left)"
    return (
        f'<dt id="wait-label">wait</dt><dd id="wait" title="{esc(wait["until"])}">{esc(text)}</dd>'
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


def _switches(facts: PageFacts) -> Mapping[int, Mapping[str, Any]]:
    """The overview's backend switches (`[agent] fallback`) by the iteration that hit the limit."""
    found = () if facts.overview is None else facts.overview.get("fallbacks", ())
    return {switch["iter"]: switch for switch in found}


def backend_cell(backend: str, switch: Mapping[str, Any] | None) -> str:
    """An iteration's backend; one whose limit made the loop switch says to which, and until
    when (app.js draws the same)."""
    if switch is None:
        return esc(backend)
    told = f"{switch['backend']} hit its limit until {switch['until']}; the loop ran {switch['to']}"
    return (
        f'<span class="fallback" title="{esc(told)}">'
        f"{esc(backend)} \u2192 {esc(switch['to'])}</span>"
    )


def _history(
    history: ExecutionHistory, now: datetime, switches: Mapping[int, Mapping[str, Any]]
) -> str:
    heads = (
        "iter",
        "node",
        "role",
        "backend",
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
            backend_cell(record.backend, switches.get(record.iteration)),
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
