"""The reset time the fake CLIs print, in the local zone (TZ), rounded down to the minute."""

from __future__ import annotations

import os
import time


def reset_epoch() -> float:
    """FAKE_CLI_RESET_AT (epoch seconds), else FAKE_CLI_RESETS_IN seconds from now (3)."""
    if "FAKE_CLI_RESET_AT" in os.environ:
        return float(os.environ["FAKE_CLI_RESET_AT"])
    return time.time() + float(os.environ.get("FAKE_CLI_RESETS_IN", "3"))


def same_local_day(epoch: float) -> bool:
    return time.localtime(epoch)[:3] == time.localtime()[:3]


def _ordinal(day: int) -> str:
    if 11 <= day % 100 <= 13:
        return f"{day}th"
    return f"{day}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(day % 10, 'th') }"


def codex_reset_text(epoch: float) -> str:
    """`3:51 PM` the same day, else `Nov 23rd, 2026 4:51 PM` (codex's format)."""
    moment = time.localtime(epoch)
    clock = f"{int(time.strftime('%I', moment))}:{time.strftime('%M %p', moment)}"
    if same_local_day(epoch):
        return clock
    return f"{time.strftime('%b', moment)} {_ordinal(moment.tm_mday)}, {moment.tm_year} {clock}"


def claude_reset_text(epoch: float) -> str:
    """`3:59pm` / `5pm` the same day, else `Nov 24, 5:59pm`, then ` (Zone)` (Claude's format)."""
    moment = time.localtime(epoch)
    hour = int(time.strftime("%I", moment))
    minutes = "" if moment.tm_min == 0 else f":{moment.tm_min:02d}"
    clock = f"{hour}{minutes}{time.strftime('%p', moment).lower()}"
    if not same_local_day(epoch):
        clock = f"{time.strftime('%b', moment)} {moment.tm_mday}, {clock}"
    return f"{clock} ({os.environ.get('TZ', 'UTC')})"
