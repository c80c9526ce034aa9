"""Two sides that only added lines at one place keep both (runner_core.parallel.additions)."""

from __future__ import annotations

from runner_core.parallel.additions import join_additions, marker_length

BASE_LINE = b"'use strict';\n"


def conflict(head: bytes, base: bytes, mine: bytes, length: int = 7) -> bytes:
    """One conflict as `git merge-file --diff3` marks it."""
    return (
        b"<" * length
        + b" head\n"
        + head
        + b"|" * length
        + b" base\n"
        + base
        + b"=" * length
        + b"\n"
        + mine
        + b">" * length
        + b" mine\n"
    )


def test_both_additions_are_kept_the_heads_first() -> None:
    marked = BASE_LINE + conflict(b"exports.a = 1;\n", b"", b"exports.b = 2;\n") + b"// end\n"

    joined = join_additions(marked, 7)

    assert joined == BASE_LINE + b"exports.a = 1;\nexports.b = 2;\n// end\n"


def test_a_conflict_over_a_base_line_is_no_addition() -> None:
    marked = conflict(b"'use strict'\n", BASE_LINE, b'"use strict";\n')

    assert join_additions(marked, 7) is None


def test_one_changed_conflict_among_additions_keeps_the_file_a_conflict() -> None:
    marked = conflict(b"a\n", b"", b"b\n") + b"x\n" + conflict(b"c\n", b"y\n", b"d\n")

    assert join_additions(marked, 7) is None


def test_markers_out_of_order_or_unclosed_are_not_read() -> None:
    assert join_additions(b"=======\nx\n", 7) is None
    assert join_additions(b"<<<<<<< head\na\n", 7) is None
    assert join_additions(b"<<<<<<< head\na\n=======\nb\n>>>>>>> mine\n", 7) is None  # no base
    assert join_additions(b"<<<<<<< head\n<<<<<<< head\n", 7) is None


def test_the_marker_is_longer_than_any_run_a_file_line_begins_with() -> None:
    texts = (b"<<<<<<<<<< not a marker\n", b"======\n", b"plain\n\n")

    length = marker_length(*texts)

    assert length == 11
    # A file line that looks like a shorter marker stays a file line.
    marked = conflict(b"<<<<<<<<<< not a marker\n", b"", b"b\n", length)
    assert join_additions(marked, length) == b"<<<<<<<<<< not a marker\nb\n"
    assert marker_length(b"plain\n") == 7


def test_lines_are_split_at_newlines_only() -> None:
    # A carriage return does not start a line: what follows it is no marker.
    marked = conflict(b"a\r<<<<<<< head\n", b"", b"b\r\n")

    assert join_additions(marked, 7) == b"a\r<<<<<<< head\nb\r\n"
    assert join_additions(b"x\ny", 7) == b"x\ny"
