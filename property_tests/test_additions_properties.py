"""Properties of keeping two sides' additions (runner_core.parallel.additions): every line
either side added is kept, the head's first, every other line of the file as it was, and a
conflict over a line of the base is never joined."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from runner_core.parallel.additions import join_additions, marker_length

# File lines, some of them beginning as a marker would: the marker is longer than any.
line = st.one_of(
    st.binary(max_size=12).map(lambda text: text.replace(b"\n", b"") + b"\n"),
    st.sampled_from([b"<<<<<<< head\n", b"=======\n", b"|||||||\n", b">>>>>>>>>> x\n"]),
)
lines = st.lists(line, max_size=5)


Sides = list[tuple[list[bytes], list[bytes], list[bytes], list[bytes]]]


def marked(sides: Sides, n: int) -> bytes:
    """A merge's output in the diff3 style: for each conflict its context lines, then the
    head's, base's and job's lines between markers `n` long."""
    out = b""
    for context, head, base, mine in sides:
        out += b"".join(context) + b"<" * n + b" head\n" + b"".join(head) + b"|" * n
        out += b" base\n" + b"".join(base) + b"=" * n + b"\n" + b"".join(mine)
        out += b">" * n + b" mine\n"
    return out


conflicts = st.lists(st.tuples(lines, lines, lines, lines), min_size=1, max_size=4)


@given(conflicts, lines)
def test_additions_are_all_kept_in_order(sides: Sides, tail: list[bytes]) -> None:
    additions: Sides = [(context, head, [], mine) for context, head, _, mine in sides]
    texts = [b"".join(part) for side in additions for part in side] + [b"".join(tail)]
    n = marker_length(*texts)

    joined = join_additions(marked(additions, n) + b"".join(tail), n)

    expected = b"".join(b"".join(context + head + mine) for context, head, _, mine in additions)
    assert joined == expected + b"".join(tail)


@given(conflicts)
def test_a_conflict_over_a_base_line_is_never_joined(
    sides: Sides,
) -> None:
    if not any(base for _, _, base, _ in sides):
        sides = [(sides[0][0], sides[0][1], [b"base line\n"], sides[0][3]), *sides[1:]]
    texts = [b"".join(part) for side in sides for part in side]
    n = marker_length(*texts)

    assert join_additions(marked(sides, n), n) is None
