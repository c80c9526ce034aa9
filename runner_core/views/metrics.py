"""What `runner metrics` and `GET /metrics` show: a run's figures in the Prometheus text
exposition format 0.0.4, in a fixed order.

Decides each metric family (name, kind, help, samples) from the report's figures. Never reads
a file.
"""

from __future__ import annotations

import math
from collections import Counter

import attrs

from runner_core.history.records import NodeDisplayState, summarize
from runner_core.iteration.plan import STATUS_WORDS
from runner_core.json_form import json_form
from runner_core.tree.model import iter_preorder
from runner_core.tree.state_update import TRANSITIONS
from runner_core.views.history import record_status
from runner_core.views.report import RunFigures, agent_attempts

# The display states a leaf of the tree can have (`skipped` is only for nodes it lost).
LEAF_STATES: tuple[NodeDisplayState, ...] = tuple(
    state for state in NodeDisplayState if state is not NodeDisplayState.SKIPPED
)


def escape_label_value(value: str) -> str:
    """Prometheus text format: backslash, double quote and line feed are escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: int | float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    # 15 significant digits are all a double holds exactly: the rest is binary noise
    # (0.1 + 0.2 is 0.30000000000000004), which no one reading the figure wants.
    return format(value, ".15g")


Samples = tuple[tuple[tuple[tuple[str, str], ...], int | float], ...]


@attrs.frozen(slots=True)
class MetricFamily:
    name: str
    kind: str  # "counter" | "gauge"
    help: str
    samples: Samples

    def lines(self) -> list[str]:
        out = [f"# HELP {self.name} {_escape_help(self.help)}", f"# TYPE {self.name} {self.kind}"]
        for labels, value in self.samples:
            text = ",".join(f'{key}="{escape_label_value(val)}"' for key, val in labels)
            out.append(f"{self.name}{{{text}}} {_number(value)}")
        return out


_METRICS: tuple[tuple[str, str, str], ...] = (
    (
        "runner_executions_total",
        "counter",
        "Iterations recorded in the run's log, by agent status and guard outcome.",
    ),
    (
        "runner_tokens_total",
        "counter",
        "Agent tokens reported by the run's iterations, by kind (input, output, cached).",
    ),
    (
        "runner_attempts_consumed_total",
        "counter",
        "Iterations that used up one of their node's attempts.",
    ),
    (
        "runner_errors_total",
        "counter",
        "Iterations that ended in an agent error or a runner error, by kind.",
    ),
    (
        "runner_execution_duration_seconds_total",
        "counter",
        "Wall-clock seconds spent in the run's iterations (agent and guards).",
    ),
    (
        "runner_cost_usd_total",
        "counter",
        "Agent cost in US dollars, when the agent reported one (no sample otherwise).",
    ),
    (
        "runner_next_iteration",
        "gauge",
        "The number the run's next iteration will get.",
    ),
    (
        "runner_max_iterations",
        "gauge",
        "The run-level cap on iterations (max_iterations in config.toml).",
    ),
    (
        "runner_leaves",
        "gauge",
        "Leaves of the task tree by display state.",
    ),
    (
        "runner_success_ratio",
        "gauge",
        "Successful iterations over all iterations of the run (0 when none ran).",
    ),
    (
        "runner_iterations_shown_total",
        "counter",
        "Iterations by the word every view shows (retry only for an agent's own retry; merged"
        " for a done whose conflicting files a merge session joined; a runner error by its"
        " kind: runner_error, interrupted, rate_limited, conflict).",
    ),
    (
        "runner_agent_success_ratio",
        "gauge",
        "Successful iterations over the iterations whose agent answered (runner errors apart).",
    ),
)


def _metric_samples(figures: RunFigures) -> dict[str, Samples]:
    history = figures.history
    summary = summarize(history)
    run = ("run_id", figures.run_id)
    outcomes = sorted(TRANSITIONS, key=lambda pair: (pair[0].value, pair[1].value))
    executions = tuple(
        (
            (run, ("status", status.value), ("guard", guard.value)),
            sum(1 for r in history.records if (r.status, r.guard) == (status, guard)),
        )
        for status, guard in outcomes
    )
    tokens = json_form(summary.total_tokens)
    leaves: Samples = ()
    if figures.tree is not None:
        states = figures.states()
        leaf_states = [states[n.id] for n, _ in iter_preorder(figures.tree) if n.is_leaf]
        leaves = tuple(
            ((run, ("state", state.value)), leaf_states.count(state)) for state in LEAF_STATES
        )
    cost = summary.total_cost_usd
    shown = Counter(record_status(record) for record in history.records)
    attempts = agent_attempts(history.records)
    return {
        "runner_executions_total": executions,
        "runner_tokens_total": tuple(
            ((run, ("kind", kind)), tokens[kind]) for kind in ("input", "output", "cached")
        ),
        "runner_attempts_consumed_total": (((run,), summary.attempts_consumed),),
        "runner_errors_total": (
            ((run, ("kind", "agent")), summary.agent_errors),
            ((run, ("kind", "runner")), summary.runner_errors),
        ),
        "runner_execution_duration_seconds_total": (((run,), summary.total_duration),),
        "runner_cost_usd_total": (((run,), cost),) if cost is not None else (),
        "runner_next_iteration": (((run,), figures.next_iteration),),
        "runner_max_iterations": (((run,), figures.max_iterations),),
        "runner_leaves": leaves,
        "runner_success_ratio": (((run,), summary.success_rate),),
        "runner_iterations_shown_total": tuple(
            ((run, ("status", word)), shown.get(word, 0)) for word in STATUS_WORDS
        ),
        "runner_agent_success_ratio": (((run,), attempts.success_rate),),
    }


def metric_families(figures: RunFigures) -> tuple[MetricFamily, ...]:
    samples = _metric_samples(figures)
    return tuple(
        MetricFamily(name, kind, help_text, samples[name]) for name, kind, help_text in _METRICS
    )


def metrics_text(figures: RunFigures) -> str:
    """`runner metrics`: Prometheus text exposition format 0.0.4, in a fixed order."""
    lines: list[str] = []
    for family in metric_families(figures):
        lines.extend(family.lines())
    return "\n".join(lines) + "\n"
