"""Import rules: whatever the agent left in its scratch checkout, runner-owned paths never reach
the run's commit, and an agent error imports nothing."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pmap

from runner_core.changes.import_rules import (
    NOTES_FILES,
    BaseEntry,
    EntryKind,
    ScratchEntry,
    ScratchListing,
    decide_import,
    is_git_name,
    is_runner_owned,
)

_PARTS = st.sampled_from(
    [
        ".runner",
        "state",
        "config.toml",
        "tree.json",
        "GOAL.md",
        "src",
        ".git",
        "a",
        "assumptions.md",
    ]
)
_PATHS = st.one_of(
    st.sampled_from([*NOTES_FILES, ".runner/state/config.toml", ".runner/GOAL.md", "src/a"]),
    st.lists(_PARTS, min_size=1, max_size=4).map("/".join),
)
_OIDS = st.sampled_from(["a" * 40, "b" * 40])
_ENTRIES = st.builds(
    ScratchEntry,
    path=_PATHS,
    kind=st.sampled_from(list(EntryKind)),
    size=st.integers(0, 3),
    oid=st.one_of(st.none(), _OIDS),
    target=st.one_of(st.none(), st.sampled_from(["x", "../x", "/x", ".git"])),
)
_BASE = st.dictionaries(
    _PATHS, st.builds(BaseEntry, st.sampled_from(["100644", "100755", "120000"]), _OIDS)
)
_NOTES = st.dictionaries(
    st.sampled_from(NOTES_FILES),
    st.tuples(*[st.one_of(st.none(), st.sampled_from([b"", b"one\n", b"one\ntwo\n"]))] * 2),
)


@given(st.lists(_ENTRIES, max_size=8, unique_by=lambda e: e.path), _BASE, _NOTES)
def test_runner_owned_paths_are_never_imported(
    entries: list[ScratchEntry],
    base: dict[str, BaseEntry],
    notes: dict[str, tuple[bytes | None, bytes | None]],
) -> None:
    """No change of any decision names a runner-owned path; an agent error changes nothing;
    no imported path passes through a `.git`; changes are sorted, each path once."""
    decision = decide_import(ScratchListing(tuple(entries), pmap(base), pmap(notes)))
    paths = [change.path for change in decision.changes]
    assert not any(is_runner_owned(path) for path in paths)
    assert not any(is_git_name(part) for path in paths for part in path.split("/"))
    assert paths == sorted(set(paths))
    if decision.agent_error is not None:
        assert decision.changes == ()
        assert "\n" not in decision.agent_error
