"""A finished job's changes read back exactly as the loop wrote them, whatever they are."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from runner_core.changes.import_rules import Change, ImportDecision
from runner_core.parallel.job_changes import JobChanges, job_changes_from_json, job_changes_json

hex_ids = st.text("0123456789abcdef", min_size=40, max_size=40)
parts = st.text(st.characters(blacklist_characters="/\0"), min_size=1, max_size=6).filter(
    lambda part: part not in (".", "..") and part.rstrip(". ").lower() not in (".git", "git~1")
)
paths = (
    st.lists(parts, min_size=1, max_size=3)
    .map("/".join)
    .filter(lambda path: path != ".runner" and not path.startswith(".runner/"))
)


@st.composite
def job_changes(draw: st.DrawFn) -> JobChanges:
    changes = []
    for path in sorted(draw(st.sets(paths, max_size=5))):
        if draw(st.booleans()):
            changes.append(
                Change(path, draw(st.sampled_from(["100644", "100755", "120000"])), draw(hex_ids))
            )
        else:
            changes.append(Change(path, None, None))
    discarded = tuple(sorted(draw(st.sets(st.text(max_size=8), max_size=2))))
    error = draw(st.none() | st.text(max_size=20))
    imported = ImportDecision(tuple(changes), discarded, error)
    return JobChanges(draw(st.integers(1, 10**6)), draw(hex_ids), imported)


@given(job_changes())
def test_what_the_loop_writes_reads_back_the_same(changes: JobChanges) -> None:
    text = json.dumps(job_changes_json(changes), sort_keys=True)
    assert job_changes_from_json(json.loads(text)) == changes
