"""Two jobs that only added lines at the same place: both additions kept, the earlier first.

Git's three-way line merge (`git merge-file`) calls it a conflict when two sides insert lines
at one point of a file: two leaves each appending an export to one index file, or a new entry
to the end of one list. Neither side changed or removed a line of the base there, so nothing
either wrote is lost by keeping both: the head's lines (the iterations merged before) first,
then the job's. Any other conflict (a base line changed or removed on a side) stays a
conflict, and the leaf runs again on the new head (docs/parallel.md). The joined file is judged
like any merge: the job's guard runs again on the merged head before its pass counts.

This reads the merge's output with conflict markers in the diff3 style (`--diff3`, which shows
the base's lines of each conflict); the shell asks for markers longer than any line the three
inputs begin with (`marker_length`), so that no line of a file can pass for a marker.
"""

from __future__ import annotations

# Markers git writes at least this long; the shell may ask for longer ones.
MIN_MARKER = 7


def marker_length(*texts: bytes) -> int:
    """A marker length no line of `texts` begins with a run of `<`, `|`, `=` or `>` as long as."""
    longest = 0
    for text in texts:
        for line in text.split(b"\n"):
            first = line[:1]
            run = len(line) - len(line.lstrip(first)) if first and first in b"<|=>" else 0
            longest = max(longest, run)
    return max(MIN_MARKER, longest + 1)


def join_additions(marked: bytes, length: int) -> bytes | None:
    """The file `marked` (merge-file's output in the diff3 style, markers `length` long) with
    each conflict replaced by the head's lines then the job's, when in every conflict the base
    had no line (both sides only added); None when any conflict changed a base line."""
    starts = (b"<" * length, b"|" * length, b"=" * length, b">" * length)
    out: list[bytes] = []
    sides: tuple[list[bytes], list[bytes], list[bytes]] | None = None  # head, base, mine
    stage = 0  # the side a conflict's lines go to: its last marker's
    for line in _lines(marked):
        kind = _marker(line, starts)
        if kind is None:
            (out if sides is None else sides[stage]).append(line)
        elif (kind == 0) != (sides is None) or (sides is not None and kind != stage + 1):
            return None  # a marker out of place: not a merge this can read
        elif kind == 0:
            sides, stage = ([], [], []), 0
        elif kind < 3:
            stage = kind
        else:
            assert sides is not None
            if sides[1]:
                return None  # the base had lines here: a side changed or removed them
            out.extend(sides[0] + sides[2])
            sides = None
    return None if sides is not None else b"".join(out)


def _marker(line: bytes, starts: tuple[bytes, ...]) -> int | None:
    """Which marker `line` is (0 head, 1 base, 2 separator, 3 mine), None for a file line."""
    for kind, start in enumerate(starts):
        if line.startswith(start) and line[len(start) : len(start) + 1] in (
            b" ",
            b"\r",
            b"\n",
            b"",
        ):
            return kind
    return None


def _lines(text: bytes) -> list[bytes]:
    """`text`'s lines, each with its newline: split at `\\n` only, as `marker_length` reads."""
    lines = [line + b"\n" for line in text.split(b"\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]
