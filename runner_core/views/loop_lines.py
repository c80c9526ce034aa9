"""What `runner loop` prints: every `loop:` line (a wait, how the loop ended) and `runner
step`'s refusal once a budget is reached.

Decides every word of those lines, so `runner loop` and `runner follow` (which shows the same
lines from the loop's events, runner_core.views.follow) say the same thing. Never prints.
"""

from __future__ import annotations

from runner_core.loop.budget import BudgetUse, figure_text
from runner_core.loop.policy import MAX_STEPS_STATUS
from runner_core.loop.usage_limits import LimitWait
from runner_core.views.budget_lines import spent_fields
from runner_core.views.text import flatten


def wait_line(run_id: str, wait: LimitWait, reason: str) -> str:
    """`loop: wait run=<id> reason=<why> until=<ISO-8601> secs=<n>`, printed before a wait."""
    return waiting_line(run_id, reason, wait.until, wait.secs)


def waiting_line(run_id: str, reason: str, until: str, secs: int) -> str:
    """A wait's line, from the loop's decision or from its `waiting` event alike."""
    return f"loop: wait run={run_id} reason={reason} until={until} secs={secs}"


def fallback_line(run_id: str, used: str, to: str, until: str) -> str:
    """`loop: fallback run=<id> from=<backend> to=<next> until=<reset>`: `used` hit a limit
    that is in force until `until`, and `to` runs the next iteration instead of a wait."""
    return f"loop: fallback run={run_id} from={used} to={to} until={until}"


def status_line(status: str, run_id: str | None, *fields: str) -> str:
    """`loop: status=<status> run=<id> <fields>`: how the loop ended, as `runner loop` prints it
    (its last line) and as `runner follow` shows the event that says so."""
    return " ".join((f"loop: status={status} run={run_id}", *fields))


def ran_fields(steps: int, started_at_iter: int) -> str:
    """What this `runner loop` did, closing its last line."""
    return f"steps={steps} started_at_iter={started_at_iter}"


def budget_fields(use: BudgetUse) -> str:
    return f"budget={use.budget} {spent_fields(use)}"


def budget_line(run_id: str, use: BudgetUse, steps: int, started_at_iter: int) -> str:
    """The loop's last line when a budget stops it."""
    return status_line("budget", run_id, budget_fields(use), ran_fields(steps, started_at_iter))


def complete_line(run_id: str, steps: int, started_at_iter: int) -> str:
    """The loop's last line when every leaf has passed."""
    return status_line("complete", run_id, ran_fields(steps, started_at_iter))


def stuck_line(run_id: str, node_id: str, path: str, attempts: int, max_attempts: int) -> str:
    """The loop's last line when the selected leaf has used all its attempts."""
    return status_line(
        "stuck", run_id, f"id={node_id} path={path}", f"attempts={attempts}/{max_attempts}"
    )


def limit_line(
    run_id: str, next_iter: int, max_iterations: int, steps: int, started_at_iter: int
) -> str:
    """The loop's last line when the next iteration would pass max_iterations."""
    limits = f"next_iter={next_iter} max_iterations={max_iterations}"
    return status_line("limit", run_id, limits, ran_fields(steps, started_at_iter))


def max_steps_line(run_id: str, steps: int, started_at_iter: int) -> str:
    """The loop's last line when it has run the `--max-steps` it was given."""
    return status_line(MAX_STEPS_STATUS, run_id, ran_fields(steps, started_at_iter))


def runner_error_line(run_id: str, steps: int, started_at_iter: int, error: str | None) -> str:
    """The loop's last line when runner errors in a row stop it; the error follows on stderr."""
    reason = flatten(error or "runner error", 300)
    return status_line(
        "runner_error", run_id, ran_fields(steps, started_at_iter), f"error={reason}"
    )


def interrupted_line(run_id: str | None, exit_code: int) -> str:
    """The loop's last line when a signal ended it (exit 128 + the signal's number)."""
    return status_line("interrupted", run_id, f"exit={exit_code}")


def budget_refusal(run_id: str, use: BudgetUse) -> str:
    """Why `runner step` starts no agent once a budget is reached (one line)."""
    return (
        f"budget {use.budget} reached for run {run_id}: spent {figure_text(use.spent)} of "
        f"{figure_text(use.limit)} (raise it in [budget] of .runner/state/config.toml)"
    )


PAUSED_STATUS = "paused"


def paused_line(run_id: str, steps: int, started_at_iter: int) -> str:
    """The loop's last line after `runner stop`: `loop: status=paused run=... steps=...`."""
    return status_line(PAUSED_STATUS, run_id, ran_fields(steps, started_at_iter))
