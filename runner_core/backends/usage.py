"""What an agent session says it spent: tokens and US dollars, whichever backend reported them.

Decides which reported values count: a count is a non-negative integer (never a bool), a cost
a finite non-negative number; anything else is not reported. Never adds up a run's spending
(runner_core.loop.budget does) and never reads a file.
"""

from __future__ import annotations

import math

import attrs


@attrs.frozen(slots=True)
class Usage:
    """One session's usage; None wherever the agent did not say."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    cost_usd: float | None = None


def token_count(value: object) -> int | None:
    """`value` as a token count, None when it cannot be one."""
    # bool is an int in Python, and a count can be neither true nor negative.
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def cost_usd(value: object) -> float | None:
    """`value` as a cost in US dollars, None when it cannot be one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None
