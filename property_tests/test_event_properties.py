"""Properties of the event stream: lines read back exactly, a kill never damages a reader's
view, and agent output is rate-limited and capped without losing count of a line."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from runner_core.loop.events import (
    EVENT_FIELDS,
    FIGURE_KINDS,
    Event,
    EventType,
    event_line,
    make_event,
    parse_event_lines,
)
from runner_core.loop.output import (
    OutputPolicy,
    PendingOutput,
    add_output,
    decide_output,
)

json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)


counts = st.integers(min_value=0, max_value=10**9)
# A strategy per kind of figure, by FIGURE_KINDS' description of it.
FIGURE_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "a string": st.text(max_size=8),
    "an integer >= 0": counts,
    "an integer or null": st.none() | st.integers(),
    "an integer >= 0 or null": st.none() | counts,
    "a string or null": st.none() | st.text(max_size=8),
    "an array of strings": st.lists(st.text(max_size=8), max_size=3),
    "an object": st.dictionaries(st.text(max_size=4), json_values, max_size=3),
    "a number": st.integers() | st.floats(allow_nan=False, allow_infinity=False),
}


@st.composite
def any_event(draw: st.DrawFn) -> Event:
    kind = draw(st.sampled_from(list(EventType)))
    figures: dict[str, Any] = {
        name: draw(FIGURE_VALUES[FIGURE_KINDS[name][0]]) for name in EVENT_FIELDS[kind]
    }
    return make_event(
        kind,
        draw(st.text(min_size=1, max_size=8)),
        draw(st.integers(min_value=0, max_value=10**6)),
        draw(st.none() | st.text(max_size=8)),
        draw(st.text(max_size=20)),
        **figures,
    )


@given(st.lists(any_event(), max_size=5))
def test_events_read_back_from_their_lines_exactly(written: list[Event]) -> None:
    """parse_event_lines(concatenated event_line(e)) is the events, with no warning."""
    data = "".join(event_line(event) for event in written).encode()
    assert parse_event_lines(data) == (tuple(written), ())


@given(st.lists(any_event(), min_size=1, max_size=5), st.data())
def test_a_file_cut_anywhere_reads_as_the_whole_lines_before_the_cut(
    written: list[Event], data: st.DataObject
) -> None:
    """Any prefix of a stream (a kill mid-append) reads as a prefix of its events, no warning."""
    whole = "".join(event_line(event) for event in written).encode()
    cut = data.draw(st.integers(min_value=0, max_value=len(whole)))
    found, warnings = parse_event_lines(whole[:cut])
    assert warnings == ()
    assert found == tuple(written[: whole[:cut].count(b"\n")])


policies = st.builds(
    OutputPolicy,
    min_interval_secs=st.floats(min_value=0.0, max_value=10.0),
    max_lines=st.integers(min_value=1, max_value=10),
    max_line_chars=st.integers(min_value=1, max_value=20),
)
batches = st.lists(
    st.tuples(st.floats(min_value=0.0, max_value=5.0), st.lists(st.text(max_size=30), max_size=8)),
    max_size=12,
)


@given(policies, batches)
def test_output_is_capped_spaced_and_every_line_is_sent_or_counted(
    policy: OutputPolicy, arrivals: list[tuple[float, list[str]]]
) -> None:
    """Emissions are at least min_interval_secs apart, carry at most max_lines lines of at most
    max_line_chars each, and lines emitted + dropped == lines read, once the final flush ran."""
    pending, last, now, sent, dropped, read = PendingOutput(), None, 0.0, 0, 0, 0
    for gap, lines in arrivals:
        now += gap
        read += len(lines)
        pending = add_output(pending, tuple(lines), policy)
        emission = decide_output(pending, last, now, policy)
        if emission.lines is not None:
            assert last is None or now - last >= policy.min_interval_secs
            assert len(emission.lines) <= policy.max_lines
            assert all(len(line) <= policy.max_line_chars for line in emission.lines)
            last = now
        sent += len(emission.lines or ())
        dropped += emission.dropped
        pending = emission.pending
    final = decide_output(pending, last, now, policy, final=True)
    assert final.pending == PendingOutput()
    assert sent + len(final.lines or ()) + dropped + final.dropped == read
