"""events.jsonl on disk: whole-line appends, reading back, and following a growing file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from runner_core.loop import events
from runner_core.loop.events import Event, EventOrigin, event_line
from runner_shell.store.event_log import EventLogRefused, EventTail, append_events, follow_tail


def follow(path: Path, **options: Any) -> Iterator[Event]:
    """Every event of `path`, from the first, then each new one as it is appended."""
    return follow_tail(EventTail(path), **options)


ORIGIN = EventOrigin("run-1", 1, "root.1", "2026-11-22T02:00:00Z")


def read_events(path: Path) -> tuple[tuple[Event, ...], tuple[str, ...]]:
    """The events of a file and its damaged-line warnings, read once as `follow` reads them."""
    warnings: list[str] = []
    found = tuple(follow(path, poll_secs=0, stop=lambda: True, on_warning=warnings.append))
    return found, tuple(warnings)


def numbered(count: int) -> list[Event]:
    return [events.agent_output(ORIGIN, "executor", (f"line {n}",), 0) for n in range(count)]


def test_appended_events_read_back_in_order(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    append_events(path, numbered(2))
    append_events(path, numbered(3)[2:], fsync=True)
    assert read_events(path) == (tuple(numbered(3)), ())
    assert path.read_text() == "".join(event_line(event) for event in numbered(3))


def test_a_missing_file_holds_no_events(tmp_path: Path) -> None:
    assert read_events(tmp_path / "events.jsonl") == ((), ())


NOT_WRITTEN = "the runner never writes through it (remove it)"


@pytest.mark.parametrize(
    ("link", "kind"),
    [(Path.symlink_to, "a symlink"), (Path.hardlink_to, "a hard link (2 names)")],
    ids=["symlink", "hard-link"],
)
def test_an_append_never_writes_through_a_link(
    tmp_path: Path, link: Callable[[Path, Path], None], kind: str
) -> None:
    target = tmp_path / "precious.txt"
    target.write_bytes(b"keep me\n")
    path = tmp_path / "events.jsonl"
    link(path, target)

    with pytest.raises(EventLogRefused) as refused:
        append_events(path, numbered(1))

    assert str(refused.value) == f"{path} is {kind}; {NOT_WRITTEN}"
    assert target.read_bytes() == b"keep me\n"


@pytest.mark.parametrize("reader", [False, True], ids=["unread", "read"])
def test_an_append_to_a_fifo_is_refused_without_blocking(tmp_path: Path, reader: bool) -> None:
    path = tmp_path / "events.jsonl"
    os.mkfifo(path)
    held = os.open(path, os.O_RDONLY | os.O_NONBLOCK) if reader else None
    try:
        with pytest.raises(EventLogRefused, match=re.escape(f"is a FIFO; {NOT_WRITTEN}")):
            append_events(path, numbered(1))
    finally:
        if held is not None:
            os.close(held)


def test_an_append_to_a_directory_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.mkdir()
    with pytest.raises(EventLogRefused, match=re.escape(f"is a directory; {NOT_WRITTEN}")):
        append_events(path, numbered(1))


def test_an_append_never_goes_through_a_symlinked_run_directory(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    run_dir = tmp_path / "repo" / "run-1"
    run_dir.symlink_to(outside)

    with pytest.raises(EventLogRefused) as refused:
        append_events(run_dir / "events.jsonl", numbered(1))

    assert str(refused.value) == (
        f"{run_dir} is a symlink or not a directory; the runner never writes through it (remove it)"
    )
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_readers_refuse_a_symlink_or_fifo_without_blocking(tmp_path: Path, plant: str) -> None:
    path = tmp_path / "events.jsonl"
    if plant == "symlink":
        target = tmp_path / "elsewhere.jsonl"
        append_events(target, numbered(1))
        path.symlink_to(target)
    else:
        os.mkfifo(path)
    kind = "a symlink" if plant == "symlink" else "a FIFO"
    message = f"{path} is {kind}, not a regular file; the runner does not read it (remove it)"

    with pytest.raises(EventLogRefused) as refused:
        read_events(path)
    assert str(refused.value) == message
    with pytest.raises(EventLogRefused) as refused:
        list(follow(path, poll_secs=0.01))
    assert str(refused.value) == message


def test_a_torn_last_line_is_ignored_and_a_damaged_one_reported(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    append_events(path, numbered(1))
    with path.open("ab") as stream:
        stream.write(b"garbage\n" + event_line(numbered(2)[1]).encode()[:10])
    assert read_events(path) == ((numbered(1)[0],), ("line 2: not JSON (Expecting value)",))


def test_follow_waits_for_the_file_and_yields_events_as_they_are_appended(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    done = threading.Event()
    written = numbered(5)

    def writer() -> None:
        time.sleep(0.2)
        for event in written:
            append_events(path, [event])
            time.sleep(0.05)
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    seen = list(follow(path, poll_secs=0.02, stop=done.is_set))
    thread.join()
    assert seen == written


def test_follow_reads_a_line_written_in_two_pieces_once_it_is_whole(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    line = event_line(numbered(1)[0]).encode()
    path.write_bytes(line[:15])
    stop = threading.Event()
    sleeps: list[float] = []

    def sleep(secs: float) -> None:
        sleeps.append(secs)
        if len(sleeps) == 2:
            with path.open("ab") as stream:
                stream.write(line[15:])
        if len(sleeps) == 4:
            stop.set()

    seen = list(follow(path, poll_secs=0.01, stop=stop.is_set, sleep=sleep))
    assert seen == numbered(1)


def test_follow_reports_damaged_lines_with_their_number_in_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    append_events(path, numbered(2))
    warnings: list[str] = []
    ticks: list[int] = []

    def sleep(_: float) -> None:
        ticks.append(1)
        if len(ticks) == 1:
            with path.open("ab") as stream:
                stream.write(b"{}\n")
            append_events(path, numbered(3)[2:])

    seen = list(follow(path, stop=lambda: len(ticks) >= 2, on_warning=warnings.append, sleep=sleep))
    assert seen == numbered(3)
    assert warnings == ["line 3: missing 'type'"]


WRITER = """
import sys, time
from pathlib import Path
from runner_core.loop import events
from runner_core.loop.events import EventOrigin
from runner_shell.store.event_log import append_events
origin = EventOrigin("run-1", 1, None, "2026-11-22T02:00:00Z")
path = Path(sys.argv[1])
for step in range(3):
    append_events(path, [events.waiting(origin, "runner_error", "2026-11-22T02:00:30Z", step)])
    time.sleep(0.1)
append_events(path, [events.complete(origin, 3)], fsync=True)
"""


def test_follow_shows_what_another_process_appends_until_its_complete_event(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)])
    seen: list[str] = []
    try:
        for event in follow(path, poll_secs=0.02, stop=lambda: writer.poll() is not None):
            seen.append(event.type.value)
            if event.type.value == "complete":
                break
    finally:
        writer.wait(timeout=30)
    assert seen == ["waiting", "waiting", "waiting", "complete"]
