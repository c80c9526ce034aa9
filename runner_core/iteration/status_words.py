"""The word every view shows for an iteration's status (`shown_status`), apart from the
iteration's plan (runner_core.iteration.plan), whose rules build and check trees: the views
show the words without importing those rules.
"""

from __future__ import annotations

from runner_core.iteration.recovery import INTERRUPTED

RUNNER_ERROR = "runner_error"
RATE_LIMITED = "rate_limited"
CONFLICT = "conflict"
# A parallel job whose conflicting files a merge session joined, judged a pass on the result.
MERGED = "merged"
# What each kind of runner error is called where an iteration is shown: an
# agent's own retry is `retry`; the runner's failing is never called one.
STATUS_WORDS = (
    "done",
    "retry",
    "decomposed",
    MERGED,
    RUNNER_ERROR,
    INTERRUPTED,
    RATE_LIMITED,
    CONFLICT,
)
_LIMIT_PREFIXES = ("rate_limited:", "usage_limited:")


def shown_status(
    status: str,
    error_kind: str | None,
    error: str | None,
    merge_rerun: bool = False,
    merge_session: str | None = None,
) -> str:
    """The status every view shows of an iteration: the agent's own (`done`, `retry`,
    `decomposed`), `merged` for a `done` whose conflicting files a merge session joined
    (meta.json keeps `done`, with `merge_session = "resolved"`), or for a runner error the
    word of its kind: `interrupted` (stopped by a signal), `rate_limited` (the agent hit a
    usage or rate limit), `conflict` (a parallel job's work met another's and runs again) or
    `runner_error`. meta.json keeps `retry` for all of them, with `error_kind = "runner"` and
    the reason in `error`."""
    if error_kind != "runner":
        resolved = merge_session == "resolved" and status == "done"
        return MERGED if resolved else status
    text = error or ""
    if merge_rerun:
        return CONFLICT
    if text.startswith(INTERRUPTED):
        return INTERRUPTED
    if text.startswith(_LIMIT_PREFIXES):
        return RATE_LIMITED
    return RUNNER_ERROR
