"""The events log's end kept by `runner serve` (runner_shell/store/event_log.LastEvents): each
reading gives what a fresh `last_events` gives, parsing only the lines appended since the last
one; a rewritten, replaced or shrunk file is read again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner_core.loop import events
from runner_core.loop.events import EventOrigin, event_line, parse_event_lines
from runner_shell.store import event_log
from runner_shell.store.event_log import LastEvents, last_events

ORIGIN = EventOrigin("run-1", 1, "root.1", "2026-11-22T02:00:00Z")
WINDOW = 400  # bytes: a few lines, so that old ones fall out of it


def lines(first: int, count: int) -> str:
    return "".join(
        event_line(events.agent_output(ORIGIN, "executor", (f"line {n}",), 0))
        for n in range(first, first + count)
    )


def append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


def counting_parses(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    parsed: list[bytes] = []
    original = parse_event_lines

    def parsing(data: bytes, first_line: int = 1) -> object:
        parsed.append(data)
        return original(data, first_line)

    monkeypatch.setattr(event_log, "parse_event_lines", parsing)
    return parsed


def test_lines_appended_are_parsed_alone_and_the_end_is_what_a_fresh_read_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(lines(0, 10), encoding="utf-8")
    kept = LastEvents(WINDOW)
    assert kept.read(path) == last_events(path, WINDOW)
    for first in (10, 11, 14):
        append(path, lines(first, first - 9))
        fresh = last_events(path, WINDOW)
        parsed = counting_parses(monkeypatch)
        assert kept.read(path) == fresh
        monkeypatch.undo()
        assert len(parsed) == first - 9  # the new lines, one by one
    assert kept.folds == 3
    assert len(kept.read(path)) < 20  # the oldest fell out of the window


def test_a_torn_last_line_is_read_again_once_it_is_whole(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    whole = lines(0, 3)
    path.write_text(whole[:-20], encoding="utf-8")
    kept = LastEvents()
    assert kept.read(path) == last_events(path) and len(kept.read(path)) == 2
    append(path, whole[-20:] + "not json\n" + lines(3, 1))
    assert kept.read(path) == last_events(path) and len(kept.read(path)) == 4


@pytest.mark.parametrize("change", ["rewritten", "replaced", "shrunk", "removed"])
def test_a_file_that_did_not_only_grow_is_read_again(tmp_path: Path, change: str) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(lines(0, 5), encoding="utf-8")
    kept = LastEvents(WINDOW)
    kept.read(path)
    if change == "rewritten":  # the same inode, more bytes, another last line read
        with path.open("r+", encoding="utf-8") as handle:
            handle.write(lines(100, 6))
    elif change == "replaced":
        other = tmp_path / "new.jsonl"
        other.write_text(lines(0, 4) + lines(200, 2), encoding="utf-8")
        os.replace(other, path)
    elif change == "shrunk":
        path.write_text(lines(300, 1), encoding="utf-8")
    else:
        path.unlink()
    assert kept.read(path) == last_events(path, WINDOW)
    assert kept.folds == 0


def test_another_file_is_read_whole(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(lines(0, 3), encoding="utf-8")
    second.write_text(lines(50, 2), encoding="utf-8")
    kept = LastEvents(WINDOW)
    kept.read(first)
    assert kept.read(second) == last_events(second, WINDOW)
    assert kept.read(first) == last_events(first, WINDOW)
