"""`[agent] fallback`: the next backend is the chain's first without a limit in force."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pmap

from runner_core.backends.limits import LimitKind, LimitSignal, iso_utc
from runner_core.loop import events
from runner_core.loop.events import Event, EventOrigin, EventType
from runner_core.loop.fallback import (
    BackendChoice,
    backend_chain,
    choose_backend,
    fall_back,
    in_force,
    limited_after,
)
from runner_core.loop.policy import Continue, LoopState, Wait
from runner_core.loop.usage_limits import LimitWait

NOW = datetime(2026, 12, 1, 23, 0, tzinfo=UTC)
CHAIN = ("codex", "claude", "gemini")


def at(secs: int) -> str:
    return iso_utc(NOW + timedelta(seconds=secs))


def test_the_chain_is_the_backend_then_the_fallbacks_each_once() -> None:
    assert backend_chain("codex", ("claude", "codex", "gemini", "claude")) == CHAIN
    assert backend_chain("claude", ()) == ("claude",)


def test_without_limits_the_first_backend_runs() -> None:
    assert choose_backend(CHAIN, {}, NOW) == BackendChoice("codex")


def test_a_limited_backend_hands_over_to_the_next_one_not_limited() -> None:
    assert choose_backend(CHAIN, {"codex": at(60)}, NOW) == BackendChoice("claude")
    limited = {"codex": at(60), "claude": at(30)}
    assert choose_backend(CHAIN, limited, NOW) == BackendChoice("gemini")


def test_the_chain_goes_back_to_its_first_backend_once_its_reset_has_passed() -> None:
    limited = limited_after({}, "codex", at(60))
    assert choose_backend(CHAIN, limited, NOW + timedelta(seconds=59)).backend == "claude"
    assert choose_backend(CHAIN, limited, NOW + timedelta(seconds=60)).backend == "codex"
    assert in_force(limited, NOW + timedelta(seconds=60)) == {}


def test_when_every_backend_is_limited_the_wait_is_until_the_earliest_reset() -> None:
    limited = {"codex": at(60), "claude": at(30), "gemini": at(90), "qwen": at(5)}
    assert choose_backend(CHAIN, limited, NOW) == BackendChoice(None, at(30))


@given(
    resets=st.dictionaries(st.sampled_from(CHAIN), st.integers(-100, 100)),
    offset=st.integers(-100, 200),
)
def test_the_choice_is_the_first_free_backend_or_a_wait_for_the_earliest(
    resets: dict[str, int], offset: int
) -> None:
    now = NOW + timedelta(seconds=offset)
    limited = {backend: at(secs) for backend, secs in resets.items()}
    choice = choose_backend(CHAIN, limited, now)
    free = [b for b in CHAIN if b not in limited or datetime.fromisoformat(limited[b]) <= now]
    if free:
        assert choice == BackendChoice(free[0])
    else:
        assert choice.backend is None
        assert choice.wait_until == min(limited.values())
        assert datetime.fromisoformat(choice.wait_until) > now


@pytest.mark.parametrize("chain", [("codex",), CHAIN])
def test_a_single_backend_chain_waits_for_its_own_reset(chain: tuple[str, ...]) -> None:
    limited = {backend: at(10) for backend in chain}
    assert choose_backend(chain, limited, NOW) == BackendChoice(None, at(10))


ORIGIN = EventOrigin("run-1", 3, "root.1", at(0))


def _waited(until: str) -> tuple[Wait, tuple[Event, ...]]:
    origin = ORIGIN
    wait = LimitWait(60, until, capped=False)
    decision = Wait(LoopState(), (EventType.LIMIT_REACHED, EventType.WAITING), wait, "usage")
    found = (
        events.limit_reached(origin, "usage_limited", "limit", until, None),
        events.waiting(origin, "usage_limited", until, 60),
    )
    return decision, found


def test_a_limit_with_a_free_backend_becomes_a_switch_and_no_wait() -> None:
    decision, found = _waited(at(60))
    limit = LimitSignal(LimitKind.USAGE_LIMITED, "limit", retry_at=at(60))
    fell = fall_back(CHAIN, pmap(), "codex", decision, found, limit, ORIGIN)
    assert fell.to == "claude"
    assert fell.limited == pmap({"codex": at(60)})
    assert isinstance(fell.decision, Continue)
    assert [event.type for event in fell.events] == [EventType.LIMIT_REACHED, EventType.FALLBACK]
    assert dict(fell.events[-1].figures) == {"backend": "codex", "to": "claude", "until": at(60)}


def test_a_limit_with_every_backend_limited_still_waits() -> None:
    decision, found = _waited(at(60))
    limit = LimitSignal(LimitKind.USAGE_LIMITED, "limit")
    limited = pmap({"claude": at(90), "gemini": at(120)})
    fell = fall_back(CHAIN, limited, "codex", decision, found, limit, ORIGIN)
    assert fell.to is None and fell.decision is decision and fell.events == found
    assert fell.limited["codex"] == at(60)


def test_no_limit_or_no_chain_changes_nothing() -> None:
    decision, found = _waited(at(60))
    limit = LimitSignal(LimitKind.USAGE_LIMITED, "limit")
    assert fall_back(CHAIN, pmap(), "codex", decision, found, None, ORIGIN).decision is decision
    alone = fall_back(("codex",), pmap(), "codex", decision, found, limit, ORIGIN)
    assert alone.decision is decision and alone.limited == pmap()
