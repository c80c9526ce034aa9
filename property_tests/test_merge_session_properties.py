"""Properties of a merge session's rules (runner_core.parallel.merge_session): no line of the
three sides ever passes for a conflict marker, so keeping any of their lines is never refused
as a marker left while a marker the runner wrote always is; a session that changed any path
besides the conflicted files is never taken; what is taken is the job's other changes as they
were and the session's files for the conflicted ones."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from runner_core.changes.import_rules import FILE_MODE, Change, ImportDecision
from runner_core.parallel.additions import marker_length
from runner_core.parallel.merge_session import (
    MarkedFile,
    marker_line,
    resolution_problem,
    resolved_changes,
)

line = st.one_of(
    st.binary(max_size=12).map(lambda text: text.replace(b"\n", b"") + b"\n"),
    st.sampled_from([b"<<<<<<< head\n", b"=======\n", b"|||||||\n", b">>>>>>>>>> x\n"]),
)
text = st.lists(line, max_size=6).map(b"".join)
paths = st.sampled_from(["a.txt", "b.txt", "src/index.js", "z/y.go"])
oids = st.sampled_from(["1" * 40, "2" * 40, "3" * 40])
changes = st.lists(st.builds(Change, paths, st.just(FILE_MODE), oids), unique_by=lambda c: c.path)


@given(text, text, text)
def test_no_line_of_the_sides_passes_for_a_marker_and_the_runners_always_do(
    head: bytes, base: bytes, mine: bytes
) -> None:
    length = marker_length(head, base, mine)
    for side in (head, base, mine):
        assert marker_line(side, length) is None
    joined = head + b"<" * length + b" head\n" + mine
    assert marker_line(joined, length) == head.count(b"\n") + 1


@given(st.lists(paths, min_size=1, unique=True), changes)
def test_a_session_that_changed_another_path_is_never_taken(
    conflicted: list[str], made: list[Change]
) -> None:
    files = [MarkedFile(path, FILE_MODE, b"x\n", 7) for path in conflicted]
    written = {change.path: b"joined\n" for change in made}
    problem = resolution_problem(ImportDecision(tuple(made)), files, written)
    if any(change.path not in conflicted for change in made):
        assert problem is not None and "did not conflict" in problem
    elif {change.path for change in made} == set(conflicted):
        assert problem is None


@given(changes, changes, st.lists(paths, unique=True))
def test_the_taken_changes_are_the_jobs_others_and_the_sessions_conflicted(
    joined: list[Change], session: list[Change], conflicted: list[str]
) -> None:
    others = [change for change in joined if change.path not in conflicted]
    files = [MarkedFile(path, FILE_MODE, b"", 7) for path in conflicted]
    mine = [change for change in session if change.path in conflicted]
    taken = resolved_changes(others, files, ImportDecision(tuple(mine)))
    assert sorted(taken, key=lambda c: c.path) == list(taken)
    assert set(taken) == {*others, *mine}
