"""A process's output as `agent_output` events: however its bytes arrive in pieces, every line
is sent or counted, the newest are the ones kept, and a line with no end is held only as far as
it can be shown."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs
from hypothesis import given
from hypothesis import strategies as st

from runner_core.loop.events import (
    Event,
    EventOrigin,
)
from runner_core.loop.output import (
    OutputPolicy,
)
from runner_shell.step.output_events import OutputEvents

ORIGIN = EventOrigin("run", 1, None, "2026-01-01T00:00:00Z")
# Nothing is due between the first event and the last: what the last one carries is decided
# by what was read, never by how fast.
POLICY = OutputPolicy(min_interval_secs=3600.0, max_lines=5, max_line_chars=8)


@attrs.define
class Recorder:
    events: list[Event] = attrs.field(factory=list)

    def emit(self, events: Iterable[Event], *, fsync: bool = False) -> None:
        self.events.extend(events)


def sent(recorder: Recorder) -> tuple[list[list[str]], int]:
    lines = [list(event.figures["lines"]) for event in recorder.events]
    return lines, sum(int(event.figures["dropped"]) for event in recorder.events)


def fed(pieces: Sequence[bytes]) -> Recorder:
    recorder = Recorder()
    output = OutputEvents(recorder, ORIGIN, "executor", policy=POLICY)
    for piece in pieces:
        output.feed(piece)
    output.close()
    return recorder


def clipped(line: str) -> str:
    return line if len(line) <= 8 else line[:7] + "…"


lines = st.lists(st.text(st.characters(codec="utf-8"), max_size=12), min_size=1, max_size=30)


@given(lines, st.lists(st.integers(1, 40), min_size=1, max_size=10))
def test_however_the_bytes_arrive_every_line_is_sent_or_counted_and_the_newest_kept(
    text_lines: list[str], cuts: list[int]
) -> None:
    data = "".join(line.replace("\n", " ") + "\n" for line in text_lines).encode("utf-8")
    pieces, at = [], 0
    for cut in cuts:
        pieces.append(data[at : at + cut])
        at += cut
    pieces.append(data[at:])
    recorder = fed([piece for piece in pieces if piece])
    events, dropped = sent(recorder)

    expected = [clipped(line.replace("\n", " ")) for line in text_lines]
    assert sum(len(lines) for lines in events) + dropped == len(expected)
    assert events[-1] == expected[-len(events[-1]) :]
    if len(events) == 2:  # the first piece's event, then the last: it holds the newest five
        after_first = len(expected) - len(events[0]) - recorder.events[0].figures["dropped"]
        assert len(events[1]) == min(POLICY.max_lines, after_first)


def test_a_line_that_never_ends_is_held_only_as_far_as_it_is_shown() -> None:
    recorder = Recorder()
    output = OutputEvents(recorder, ORIGIN, "executor", policy=POLICY)
    output.feed(b"first\n")
    for _ in range(1000):
        output.feed(b"x" * 4096)
    held = len(output.partial)
    output.close()

    assert held <= 4 * (POLICY.max_line_chars + 1)
    assert sent(recorder)[0] == [["first"], ["xxxxxxx…"]]


def test_a_piece_of_many_lines_keeps_the_newest_and_counts_the_rest() -> None:
    recorder = Recorder()
    output = OutputEvents(recorder, ORIGIN, "executor", policy=POLICY)
    output.feed(b"start\n")
    output.feed(b"".join(b"%d\n" % n for n in range(1000)))
    output.close()

    assert sent(recorder) == ([["start"], ["995", "996", "997", "998", "999"]], 995)
