"""What `runner loop` tells its operator through `[notify]`: which events send a message and
what each says (the run, the node, the line the CLI prints for it, and what to do).

Never sends anything, reads nothing: runner_shell/notify queues and sends what this returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs

from runner_core.loop.events import Event, EventType
from runner_core.run.identity import branch_for
from runner_core.run.notify_config import NotifyConfig
from runner_core.views.follow import event_text

# The `[notify] on` name of each event that can send a message.
NOTIFY_FOR_EVENT: Mapping[EventType, str] = MappingProxyType(
    {
        EventType.STUCK: "stuck",
        EventType.COMPLETE: "complete",
        EventType.QUESTION: "question",
        EventType.WAITING: "limit_wait",
        EventType.RUNNER_ERROR: "runner_errors",
        EventType.BUDGET_EXHAUSTED: "budget",
    }
)


@attrs.frozen(slots=True)
class Notice:
    """One message: its title and its body (plain text, one fact a line)."""

    kind: str
    title: str
    body: str


def _todo(event: Event) -> str:
    node = event.node_id or ""
    match NOTIFY_FOR_EVENT[event.type]:
        case "stuck":
            return (
                f"look at `runner history --node {node}`, then `runner node retry {node}` "
                f"(or `runner node skip {node}`, or `runner tell` a hint) and `runner loop`"
            )
        case "complete":
            return f"read `runner report`, then review and merge branch {branch_for(event.run_id)}"
        case "question":
            return "read the questions with `runner status`, reply with `runner answer`"
        case "limit_wait":
            return "nothing: the loop sleeps until then and goes on (`runner stop` ends it)"
        case "runner_errors":
            return "read `runner status` and the loop's stderr; `runner recover` if interrupted"
        case _:
            return (
                "raise the [budget] limit in .runner/config.toml (or stop here), then `runner loop`"
            )


_TITLES: Mapping[str, str] = MappingProxyType(
    {
        "stuck": "is stuck",
        "complete": "is complete",
        "question": "has a question for you",
        "limit_wait": "is waiting out a limit",
        "runner_errors": "met a runner error",
        "budget": "reached its budget",
    }
)


def notice_for(event: Event, config: NotifyConfig) -> Notice | None:
    """The message `event` sends under `config`; None when it sends none (no URL, or its kind
    is not in `on`)."""
    kind = NOTIFY_FOR_EVENT.get(event.type)
    if kind is None or not config.urls or kind not in config.on:
        return None
    where = f" at node {event.node_id}" if event.node_id else ""
    lines = [
        f"run: {event.run_id}",
        f"node: {event.node_id or '-'}",
        f"at: {event.at}",
        *(line.strip() for line in event_text(event)),
        f"what to do: {_todo(event)}",
    ]
    return Notice(kind, f"runner: run {event.run_id} {_TITLES[kind]}{where}", "\n".join(lines))


def trial_notice(run_id: str | None) -> Notice:
    """`runner notify --test`'s message."""
    run = run_id or "(no run started)"
    body = f"run: {run}\nthis is a test message from `runner notify --test`\nwhat to do: nothing"
    return Notice("test", f"runner: test message for run {run}", body)
