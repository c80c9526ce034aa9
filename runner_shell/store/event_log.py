"""The run's `events.jsonl`: append events as whole lines, read them back, follow a growing file.

Every line is one `os.write` to a descriptor opened with O_APPEND, so concurrent readers see
whole lines or a torn last line (which the core's parser ignores), never two lines interleaved.
The file is opened as every runner file is (`runner_shell.store.files`): never through a symlink,
never blocking on a FIFO; such a file is refused in one line (`EventLogRefused`). What an event
says is decided in `runner_core.loop.events`; this module only moves bytes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import attrs

from runner_core.loop.events import Event, event_line, parse_event_lines
from runner_shell.errors import UserFacingError
from runner_shell.store.files import NotRegularFile, UnsafePath, open_append, open_regular


class EventLogRefused(UserFacingError):
    """`events.jsonl`, or a directory on its way, is a symlink, FIFO or directory the agent may
    have planted: the runner neither writes through it nor reads it. The message names it."""


def append_events(path: Path, events: Iterable[Event], *, fsync: bool = False) -> None:
    """Append each event as one line (none: make sure the file can take them); `fsync` (at
    iteration boundaries) makes them durable."""
    try:
        fd = open_append(path)
    except (UnsafePath, NotRegularFile) as error:
        raise EventLogRefused(f"{error.filename} {error.strerror}") from None
    try:
        for event in events:
            _write_all(fd, event_line(event).encode("utf-8"))
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    # A regular file takes the whole line in one write; the loop only covers a short write
    # (a full disk), which leaves a torn line that readers ignore.
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _never() -> bool:
    return False


# A line longer than this is no event the runner wrote (the largest, an iteration's meta, is at
# most 1 MiB): a reader skips it with a note instead of holding it. The file is read a chunk at
# a time, so a reader never holds more than a chunk and this much of one line.
EVENT_LINE_MAX_BYTES = 4 * 1024 * 1024
READ_CHUNK_BYTES = 1024 * 1024


@attrs.define
class EventTail:
    """A reader of a growing `events.jsonl`: each `read` returns the events of the whole lines
    appended since the last one (a line is read once it is whole), a line at a time: an
    over-long line (a sparse hole an agent made, say) is skipped with a note, never loaded."""

    path: Path
    offset: int = 0
    next_line: int = 1
    pending: bytes = b""
    skipping: bool = False  # inside a line already noted as over-long, until its newline

    @classmethod
    def at_end(cls, path: Path) -> EventTail:
        """A reader of what is appended to `path` from now on (all of it, while it is missing)."""
        try:
            with open_regular(path) as stream:
                return cls(path, stream.seek(0, os.SEEK_END))
        except OSError:
            return cls(path)

    def read(self) -> tuple[tuple[Event, ...], tuple[str, ...], bool]:
        """The new events, a warning per damaged or over-long new line, and whether the file
        grew."""
        events: list[Event] = []
        warnings: list[str] = []
        grew = False
        for chunk in _chunks_from(self.path, self.offset):
            grew = True
            self.offset += len(chunk)
            self._take(chunk, events, warnings)
        return tuple(events), tuple(warnings), grew

    def _take(self, chunk: bytes, events: list[Event], warnings: list[str]) -> None:
        *whole, rest = (self.pending + chunk).split(b"\n")
        for line in whole:
            if self.skipping:
                self.skipping = False
            elif len(line) > EVENT_LINE_MAX_BYTES:
                warnings.append(_over_long(self.next_line))
            else:
                found, damaged = parse_event_lines(line + b"\n", self.next_line)
                events += found
                warnings += damaged
            self.next_line += 1
        self.pending = b""
        if not self.skipping and len(rest) > EVENT_LINE_MAX_BYTES:
            warnings.append(_over_long(self.next_line))
            self.skipping = True
        elif not self.skipping:
            self.pending = rest


def _over_long(line: int) -> str:
    return f"line {line}: over {EVENT_LINE_MAX_BYTES} bytes, skipped (no event is that long)"


def follow_tail(
    tail: EventTail,
    *,
    poll_secs: float = 0.2,
    stop: Callable[[], bool] = _never,
    on_warning: Callable[[str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[Event]:
    """Each event appended to `tail`'s file from where it has read to.

    Waits for the file to appear; polls every `poll_secs`. Ends when `stop()` answers true after
    the file had nothing new (checked once per poll), after one last read: a writer's last line
    appended just before `stop()` turned true is not lost.
    """
    stopping = False
    while True:
        events, warnings, grew = tail.read()
        for warning in warnings:
            if on_warning is not None:
                on_warning(warning)
        yield from events
        if grew:
            continue
        if stopping:
            return
        if stop():
            stopping = True
            continue
        sleep(poll_secs)


def follow_failure(error: Exception) -> str:
    """Why following the file stopped, in one line: for a follower that must say so."""
    if isinstance(error, EventLogRefused):  # a planted symlink or FIFO
        return str(error)
    if isinstance(error, OSError):  # a file where the run directory should be, or no access
        return f"{error.filename}: {error.strerror or error}"
    return f"{type(error).__name__}: {error}"


def _chunks_from(path: Path, offset: int) -> Iterator[bytes]:
    """The bytes of `path` from `offset`, a chunk at a time; none while it does not exist."""
    try:
        stream = open_regular(path)
    except FileNotFoundError:
        return
    except NotRegularFile as error:
        raise EventLogRefused(f"{path} {error.strerror} (remove it)") from None
    with stream:
        stream.seek(offset)
        while chunk := stream.read(READ_CHUNK_BYTES):
            yield chunk


# How much of the file's end `last_events` reads: many times a loop's last events between two
# iterations (a wait, the stop that ended it, a hook's failure).
TAIL_BYTES = 64 * 1024


def last_events(path: Path, max_bytes: int = TAIL_BYTES) -> tuple[Event, ...]:
    """The whole lines among the last `max_bytes` of `path`, oldest first, damaged ones skipped;
    none when the file is missing or is anything but a regular file."""
    try:
        with open_regular(path) as handle:
            start = max(os.fstat(handle.fileno()).st_size - max_bytes, 0)
            handle.seek(start)
            data = handle.read(max_bytes)
    except OSError:
        return ()
    if start > 0:
        data = data.partition(b"\n")[2]  # the first line read is cut
    return parse_event_lines(data)[0]


def _lines_from(data: bytes, offset: int) -> list[tuple[int, Event]]:
    """Each whole line of `data` (read from `offset`) that parses, with where it starts."""
    found: list[tuple[int, Event]] = []
    at = offset
    for raw in data.split(b"\n")[:-1]:
        parsed = parse_event_lines(raw + b"\n")[0]
        if parsed:
            found.append((at, parsed[0]))
        at += len(raw) + 1
    return found


@attrs.define
class LastEvents:
    """`last_events` of one file, kept between two readings (`runner serve`): while the file only
    grew (the same inode, more bytes, the last line read still there) only the new lines are
    parsed, and those that fell out of the last `max_bytes` are let go. Anything else (another
    file, a new inode, fewer bytes, a changed last line) reads the file's end again."""

    max_bytes: int = TAIL_BYTES
    path: Path | None = None
    inode: int = -1
    end: int = 0  # just past the last whole line read
    last_line: bytes = b""  # the bytes of that line, to tell an append from a rewrite
    lines: list[tuple[int, Event]] = attrs.field(factory=list)  # start offset, event
    events: tuple[Event, ...] = ()
    folds: int = 0  # readings that read only new lines, for the tests

    def read(self, path: Path) -> tuple[Event, ...]:
        """What `last_events(path, self.max_bytes)` gives now."""
        try:
            with open_regular(path) as handle:
                facts = os.fstat(handle.fileno())
                size = facts.st_size
                start = max(size - self.max_bytes, 0)
                kept = self._still_there(handle, path, facts.st_ino, size)
                handle.seek(self.end if kept else start)
                data = handle.read(size - handle.tell())
        except OSError:
            self.path, self.lines, self.events = None, [], ()
            return ()
        if kept:
            self.folds += 1
            new = _lines_from(data, self.end)
        else:
            self.path, self.inode, self.end, self.last_line = path, facts.st_ino, start, b""
            self.lines, new = [], _lines_from(data, start)
        whole = data.rfind(b"\n") + 1  # the bytes of whole lines among those read
        if whole:
            self.end, self.last_line = self.end + whole, data[:whole].rsplit(b"\n", 2)[-2] + b"\n"
        if not kept or new or start > 0:
            self.lines = [line for line in (*self.lines, *new) if start == 0 or line[0] > start]
            self.events = tuple(event for _, event in self.lines)
        return self.events

    def _still_there(self, handle: BinaryIO, path: Path, inode: int, size: int) -> bool:
        """Whether what was read last is still the start of what the file holds."""
        if path != self.path or inode != self.inode or size < self.end:
            return False
        if not self.last_line:
            return True
        handle.seek(self.end - len(self.last_line))
        return handle.read(len(self.last_line)) == self.last_line
