"""`[notify]`: where `runner loop` sends a message when something needs its operator.

Decides whether the table's values are valid (`urls`: Apprise URLs, `on`: which events, a
`timeout_secs` per message) and its default (no URL: nothing is sent, and the table is left out
of a written config). Never sends anything: runner_shell/notify does, docs/notify.md says how.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

import attrs

from runner_core.run.config_errors import ConfigError
from runner_core.run.config_toml import toml_line

# The events a notification can be sent for, in the order docs/notify.md lists them.
NotifyEvent = Literal["stuck", "complete", "question", "limit_wait", "runner_errors", "budget"]
NOTIFY_EVENTS: tuple[NotifyEvent, ...] = get_args(NotifyEvent)


@attrs.frozen(slots=True)
class NotifyConfig:
    """`[notify]`: the Apprise `urls` to send to, the events (`on`) to send for, and how long
    one message may take (`timeout_secs`) before it is given up."""

    urls: tuple[str, ...] = ()
    on: tuple[NotifyEvent, ...] = NOTIFY_EVENTS
    timeout_secs: int = 10


NO_NOTIFY = NotifyConfig()


def parse_notify(section: Mapping[str, Any]) -> NotifyConfig:
    """`[notify]` from parsed TOML, defaults for what it leaves out."""
    urls = tuple(section.get("urls", ()))
    for url in urls:
        scheme, sep, rest = url.partition("://")
        if not sep or not scheme or not rest or any(c.isspace() for c in url):
            # The URL may hold a secret: only its scheme is named.
            shown = f"{scheme}://…" if sep else "a value without '://'"
            raise ConfigError(
                "notify.urls", f"each must be an Apprise URL (scheme://…), got {shown}"
            )
    on = section.get("on", NOTIFY_EVENTS)
    ordered = tuple(name for name in NOTIFY_EVENTS if name in on)
    timeout = section.get("timeout_secs", NO_NOTIFY.timeout_secs)
    return NotifyConfig(urls=urls, on=ordered, timeout_secs=timeout)


def render_notify_table(notify: NotifyConfig) -> str:
    """The `[notify]` table, written only when it differs from the default."""
    if notify == NO_NOTIFY:
        return ""
    return (
        "\n[notify]\n"
        + toml_line("urls", notify.urls, "Apprise URLs; see docs/notify.md")
        + toml_line("on", notify.on)
        + toml_line("timeout_secs", notify.timeout_secs, "one message at most this long")
    )
