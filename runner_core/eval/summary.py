"""What an eval's runs amount to: each run's outcome, and per case x backend x prompt variant,
its success rate with a 95 % Wilson interval and the medians and totals of what it cost.

Decides the outcome table (how the loop's end and the checks make `success|fail|stuck|limit|
error`), the statistics, the summary document, its text table and the comparison of two
summaries. Never runs anything or reads a file: the shell hands in each run's figures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

OUTCOMES = ("success", "fail", "stuck", "limit", "error")
# How the loop ended (what `runner select` says after it) and whether every check passed.
# A loop that ended on an open tree did not finish: the iteration limit or a budget ("limit"),
# else something broke ("error"); the checks then do not decide.
LOOP_ENDS = ("complete", "stuck", "limit", "error")
_Z95 = 1.959963984540054


def classify(loop_end: str, checks_passed: bool) -> str:
    """A run's outcome: `success` (complete, every check passes), `fail` (complete, a check
    fails), else the loop's end: `stuck`, `limit` or `error`."""
    if loop_end == "complete":
        return "success" if checks_passed else "fail"
    if loop_end not in LOOP_ENDS:
        raise ValueError(f"unknown loop end {loop_end!r}")
    return loop_end


def wilson(successes: int, runs: int, z: float = _Z95) -> tuple[float, float]:
    """The Wilson score interval of a success rate (95 % by default); (0, 1) for no runs."""
    if runs == 0:
        return (0.0, 1.0)
    p = successes / runs
    denominator = 1 + z * z / runs
    centre = (p + z * z / (2 * runs)) / denominator
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / denominator
    return (max(0.0, round(centre - half, 6)), min(1.0, round(centre + half, 6)))


@attrs.frozen(slots=True)
class RunFigures:
    """One finished run, as its meta.json under eval-results/ records it."""

    case: str
    backend: str
    prompts: str
    run: int
    outcome: str
    iterations: int
    attempts: int
    tokens: int
    cost_usd: float
    wall_secs: float


def run_from_json(meta: Mapping[str, Any]) -> RunFigures:
    return RunFigures(
        case=meta["case"],
        backend=meta["backend"],
        prompts=meta["prompts"],
        run=meta["run"],
        outcome=meta["outcome"],
        iterations=meta["iterations"],
        attempts=meta["attempts"],
        tokens=meta["tokens"],
        cost_usd=meta["cost_usd"],
        wall_secs=meta["wall_secs"],
    )


def _median(values: Sequence[float]) -> float:
    """The median (the mean of the middle two for an even count); 0 for none. Written here:
    `statistics` imports `random`, which the core never loads."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[middle])
    return (ordered[middle - 1] + ordered[middle]) / 2


def summary_rows(runs: Iterable[RunFigures]) -> list[dict[str, Any]]:
    """One row per case x backend x prompt variant, sorted: runs, each outcome's count, the
    success rate and its interval, median iterations, attempts and wall time, total tokens
    and cost (and the mean cost of a run, the plot's axis)."""
    groups: dict[tuple[str, str, str], list[RunFigures]] = {}
    for run in runs:
        groups.setdefault((run.case, run.backend, run.prompts), []).append(run)
    rows = []
    for (case, backend, prompts), members in sorted(groups.items()):
        successes = sum(run.outcome == "success" for run in members)
        low, high = wilson(successes, len(members))
        cost = round(sum(run.cost_usd for run in members), 6)
        rows.append(
            {
                "case": case,
                "backend": backend,
                "prompts": prompts,
                "runs": len(members),
                "outcomes": {
                    name: sum(run.outcome == name for run in members) for name in OUTCOMES
                },
                "success_rate": round(successes / len(members), 6),
                "interval": [low, high],
                "median_iterations": _median([run.iterations for run in members]),
                "median_attempts": _median([run.attempts for run in members]),
                "tokens": sum(run.tokens for run in members),
                "cost_usd": cost,
                "mean_cost_usd": round(cost / len(members), 6),
                "median_wall_secs": round(_median([run.wall_secs for run in members]), 3),
            }
        )
    return rows


def summary_document(eval_id: str, runs: Iterable[RunFigures]) -> dict[str, Any]:
    """The `runner eval --json` document (schemas/eval_summary.schema.json)."""
    ordered = sorted(runs, key=lambda run: (run.case, run.backend, run.prompts, run.run))
    return {
        "eval_id": eval_id,
        "rows": summary_rows(ordered),
        "runs": [attrs.asdict(run) for run in ordered],
    }


TABLE_HEADER = (
    "case",
    "backend",
    "prompts",
    "runs",
    "success",
    "95% interval",
    "iters",
    "attempts",
    "tokens",
    "cost_usd",
    "wall_s",
)


def table_cells(row: Mapping[str, Any]) -> tuple[str, ...]:
    low, high = row["interval"]
    return (
        row["case"],
        row["backend"],
        row["prompts"],
        str(row["runs"]),
        f"{row['outcomes']['success']}/{row['runs']} ({row['success_rate']:.0%})",
        f"{low:.2f}-{high:.2f}",
        f"{row['median_iterations']:g}",
        f"{row['median_attempts']:g}",
        str(row["tokens"]),
        f"{row['cost_usd']:.4f}",
        f"{row['median_wall_secs']:.1f}",
    )


def render_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The summary as aligned text lines: a header, then one line per row."""
    return _aligned([TABLE_HEADER, *(table_cells(row) for row in rows)])


def _aligned(cells: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(line[i]) for line in cells) for i in range(len(cells[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in cells
    ]


def compare_lines(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """`runner eval --compare A B`: each case x backend x prompt row of either summary, with
    A's and B's success rate and cost and their difference; a row only one has shows `-`."""

    def keyed(document: Mapping[str, Any]) -> dict[tuple[str, str, str], Mapping[str, Any]]:
        return {(row["case"], row["backend"], row["prompts"]): row for row in document["rows"]}

    a, b = keyed(before), keyed(after)
    header = ("case", "backend", "prompts", "success A", "success B", "delta", "cost A", "cost B")
    lines: list[tuple[str, ...]] = [header]
    for key in sorted(set(a) | set(b)):
        left, right = a.get(key), b.get(key)
        rate_a = "-" if left is None else f"{left['success_rate']:.0%}"
        rate_b = "-" if right is None else f"{right['success_rate']:.0%}"
        delta = "-"
        if left is not None and right is not None:
            delta = f"{(right['success_rate'] - left['success_rate']) * 100:+.0f} pts"
        cost_a = "-" if left is None else f"{left['cost_usd']:.4f}"
        cost_b = "-" if right is None else f"{right['cost_usd']:.4f}"
        lines.append((*key, rate_a, rate_b, delta, cost_a, cost_b))
    return _aligned(lines)
