"""Reading `events.jsonl` back is capped: the file is followed a chunk at a time and a line at
a time, and a line no event could be (a sparse hole an agent made) is skipped with a note, never
held in memory; where the reads fall never changes what is read."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from runner_core.loop.events import Event, EventOrigin, event_line, operator
from runner_shell.store import event_log
from runner_shell.store.event_log import EVENT_LINE_MAX_BYTES, EventTail

HOLE_BYTES = 300 * 1024 * 1024
# What a reader may hold at once: a chunk and a line's worth, with room to spare.
READ_PEAK_BYTES = 3 * EVENT_LINE_MAX_BYTES
OVER_LONG = f"over {EVENT_LINE_MAX_BYTES} bytes, skipped (no event is that long)"


def told(number: int) -> Event:
    return operator(EventOrigin("run-1", 1, None, "2026-01-01T00:00:00Z"), "tell", f"note {number}")


def lines_of(*events: Event) -> bytes:
    return "".join(event_line(event) for event in events).encode("utf-8")


def sparse_events(path: Path, *events: Event) -> None:
    """A hole of HOLE_BYTES zero bytes (no disk space), then `events` appended."""
    with path.open("wb") as handle:
        handle.truncate(HOLE_BYTES)
    with path.open("ab") as handle:
        handle.write(lines_of(*events))


def test_a_sparse_hole_is_one_over_long_line_skipped_and_the_events_after_it_are_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    sparse_events(path, told(1), told(2))
    tail = EventTail(path)

    tracemalloc.start()
    try:
        events, warnings, grew = tail.read()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    # The hole runs into the first appended line: that line is the hole's end, skipped with it.
    assert (events, warnings, grew) == ((told(2),), (f"line 1: {OVER_LONG}",), True)
    assert peak < READ_PEAK_BYTES
    assert tail.next_line == 3


def test_an_over_long_line_is_noted_once_when_seen_and_the_next_lines_keep_their_numbers(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(lines_of(told(1)) + b"x" * (EVENT_LINE_MAX_BYTES + 1))
    tail = EventTail(path)

    first = tail.read()
    with path.open("ab") as handle:
        handle.write(b"x" * 10 + b"\n" + lines_of(told(3)) + b"{not json\n")
    second = tail.read()

    assert first == ((told(1),), (f"line 2: {OVER_LONG}",), True)
    assert second == (
        (told(3),),
        ("line 4: not JSON (Expecting property name enclosed in double quotes)",),
        True,
    )


def test_a_line_of_exactly_the_cap_is_read(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    line = event_line(told(1)).encode("utf-8")
    padded = line[:-2] + b" " * (EVENT_LINE_MAX_BYTES - len(line) + 1) + b"}\n"
    assert len(padded) == EVENT_LINE_MAX_BYTES + 1
    path.write_bytes(padded)

    assert EventTail(path).read() == ((told(1),), (), True)


@pytest.mark.parametrize("chunk", [1, 7, 4096])
@pytest.mark.parametrize("piece", [1, 3, 64, 1000])
def test_where_the_reads_fall_never_changes_the_events_or_the_notes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, piece: int
) -> None:
    """Small caps make every boundary fall everywhere: inside a line, at its newline, in the
    middle of an over-long one."""
    cap = len(event_line(told(1))) + 10
    monkeypatch.setattr(event_log, "EVENT_LINE_MAX_BYTES", cap)
    monkeypatch.setattr(event_log, "READ_CHUNK_BYTES", chunk)
    whole = (
        lines_of(told(1))
        + b"y" * (cap + 5)
        + b"\n"
        + lines_of(told(2))
        + b"not an event\n"
        + b"z" * (3 * cap)
        + b"\n"
        + lines_of(told(3))
    )
    at_once = tmp_path / "at-once.jsonl"
    at_once.write_bytes(whole)
    growing = tmp_path / "growing.jsonl"
    growing.write_bytes(b"")
    tail = EventTail(growing)
    events: list[Event] = []
    warnings: list[str] = []

    for start in range(0, len(whole), piece):
        with growing.open("ab") as handle:
            handle.write(whole[start : start + piece])
        found, noted, _ = tail.read()
        events += found
        warnings += noted

    expected = EventTail(at_once).read()
    assert (tuple(events), tuple(warnings), True) == expected
    assert expected[0] == (told(1), told(2), told(3))
    assert [warning.split(":")[0] for warning in expected[1]] == ["line 2", "line 4", "line 5"]
