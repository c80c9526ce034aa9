"""`[agent] fallback`: which backend of the chain runs the next iteration when some have hit a
usage or rate limit.

Decides, from the chain (`[agent] backend` first, then `fallback` in order) and the limits in
force (backend -> the ISO-8601 UTC time its limit resets), the first backend whose limit is not
in force; when every one is limited, none, and the earliest reset to wait for. A limit is over
at its reset time, so the chain goes back to its first backend then. Never reads a clock: the
shell passes `now` (an aware datetime).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import attrs
from pyrsistent import pmap
from pyrsistent.typing import PMap

from runner_core.backends.limits import LimitSignal
from runner_core.loop.events import Event, EventOrigin, EventType, fallback
from runner_core.loop.policy import Continue, LoopDecision, Wait


@attrs.frozen(slots=True)
class BackendChoice:
    """The backend to run (`backend`), or None with the earliest reset (`wait_until`, ISO-8601
    UTC) when every backend of the chain is limited."""

    backend: str | None
    wait_until: str | None = None


def backend_chain(backend: str, fallback: tuple[str, ...]) -> tuple[str, ...]:
    """`backend`, then `fallback`'s backends in order, each once."""
    return tuple(dict.fromkeys((backend, *fallback)))


def in_force(limited: Mapping[str, str], now: datetime) -> PMap[str, str]:
    """The limits of `limited` whose reset is still ahead of `now`."""
    return pmap({b: until for b, until in limited.items() if datetime.fromisoformat(until) > now})


def choose_backend(
    chain: tuple[str, ...], limited: Mapping[str, str], now: datetime
) -> BackendChoice:
    """The first backend of `chain` without a limit in force at `now`; none when all have one."""
    current = in_force(limited, now)
    for backend in chain:
        if backend not in current:
            return BackendChoice(backend)
    earliest = min(current[backend] for backend in chain)
    return BackendChoice(None, earliest)


def limited_after(limited: Mapping[str, str], backend: str, until: str) -> PMap[str, str]:
    """`limited` with `backend`'s limit in force until `until`."""
    return pmap(limited).set(backend, until)


@attrs.frozen(slots=True)
class FallBack:
    """What the loop does after an iteration that `used` ran: the limits now in force, the
    decision and events it carries out (a wait become a Continue when another backend is free)
    and the backend it switches to (None: no switch)."""

    limited: PMap[str, str]
    decision: LoopDecision
    events: tuple[Event, ...]
    to: str | None = None


def fall_back(
    chain: tuple[str, ...],
    limited: PMap[str, str],
    used: str,
    decision: LoopDecision,
    events: tuple[Event, ...],
    limit: LimitSignal | None,
    origin: EventOrigin,
) -> FallBack:
    """After an iteration (at `origin`, whose `at` is now): when `used` hit a limit (`limit`)
    and the policy waits for it, `used` is limited until the wait's end, and when another
    backend of `chain` is free it runs next and nobody waits: the `waiting` event becomes a
    `fallback` event. One rule for the one-slot and the parallel loop."""
    if not isinstance(decision, Wait) or limit is None or len(chain) < 2:
        return FallBack(limited, decision, events)
    limited = limited_after(limited, used, decision.wait.until)
    now = datetime.fromisoformat(origin.at)
    after = choose_backend(chain, limited, now).backend
    if after is None:
        return FallBack(limited, decision, events)
    waitless = tuple(event for event in events if event.type is not EventType.WAITING)
    switch = fallback(origin, used, after, limited[used])
    return FallBack(limited, Continue(decision.state), (*waitless, switch), after)
