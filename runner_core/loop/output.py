"""How a running process's output becomes `agent_output` events: how many lines one carries,
how long each may be, how often one is emitted, and what a reader need hold meanwhile.

Decides only that; the events themselves are `runner_core.loop.events`', and reading the bytes
and the clock is the shell's (`runner_shell.step.output_events`).
"""

from __future__ import annotations

import attrs


@attrs.frozen(slots=True)
class OutputPolicy:
    """How often agent output is emitted and how much of it one event may carry."""

    min_interval_secs: float = 1.0
    max_lines: int = 40
    max_line_chars: int = 400


@attrs.frozen(slots=True)
class PendingOutput:
    """Lines read since the last `agent_output` event; `dropped` counts older ones let go."""

    lines: tuple[str, ...] = ()
    dropped: int = 0


@attrs.frozen(slots=True)
class OutputEmission:
    """What `decide_output` says: the lines to emit now (None: wait), and what stays pending."""

    lines: tuple[str, ...] | None
    dropped: int
    pending: PendingOutput


def add_output(
    pending: PendingOutput, lines: tuple[str, ...], policy: OutputPolicy, *, earlier: int = 0
) -> PendingOutput:
    """Pending output with `lines` added, keeping only the newest `max_lines` lines.

    `earlier` counts lines that arrived before `lines` and were not passed: a reader given more
    than `max_lines` lines at once need decode only the newest (`newest_kept`), since no older
    one can be kept; they count as dropped."""
    clipped = tuple(_clip(line, policy.max_line_chars) for line in lines[-policy.max_lines :])
    earlier += len(lines) - len(clipped)
    if earlier:
        pending = PendingOutput((), pending.dropped + len(pending.lines) + earlier)
    together = pending.lines + clipped
    excess = max(0, len(together) - policy.max_lines)
    return PendingOutput(together[excess:], pending.dropped + excess)


def newest_kept(policy: OutputPolicy) -> int:
    """How many of the newest lines read at once `add_output` can keep: a reader need not decode
    the others, only count them (`earlier`)."""
    return policy.max_lines


def partial_line_kept_bytes(policy: OutputPolicy) -> int:
    """How much of a line still being read a reader need hold: enough bytes for more than
    `max_line_chars` characters of UTF-8, so that the line is clipped as a whole one would be."""
    return 4 * (policy.max_line_chars + 1)


def _clip(line: str, limit: int) -> str:
    if len(line) <= limit:
        return line
    return line[: max(0, limit - 1)] + "…"


def output_due(last_emit_at: float | None, now: float, policy: OutputPolicy) -> bool:
    """Whether `min_interval_secs` passed since the last emission (none yet: it has). Until it
    has, a reader may hold what it reads undecoded: nothing is emitted before then."""
    return last_emit_at is None or now - last_emit_at >= policy.min_interval_secs


def decide_output(
    pending: PendingOutput,
    last_emit_at: float | None,
    now: float,
    policy: OutputPolicy,
    *,
    final: bool = False,
) -> OutputEmission:
    """Emit the pending lines when `min_interval_secs` passed since the last emission.

    `now` and `last_emit_at` are seconds on one monotonic clock. `final` (the process ended)
    emits whatever is pending at once. Nothing pending emits nothing.
    """
    if not pending.lines and not pending.dropped:
        return OutputEmission(None, 0, pending)
    if not (output_due(last_emit_at, now, policy) or final):
        return OutputEmission(None, 0, pending)
    return OutputEmission(pending.lines, pending.dropped, PendingOutput())
