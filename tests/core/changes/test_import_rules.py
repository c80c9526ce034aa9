"""The import rules: what of a scratch checkout becomes the run's, what is the agent's error."""

from __future__ import annotations

import pytest
from pyrsistent import pmap

from runner_core.changes.import_rules import (
    FILE_MODE,
    SYMLINK_MODE,
    BaseEntry,
    Change,
    EntryKind,
    ImportDecision,
    ImportLimits,
    ScratchEntry,
    ScratchListing,
    decide_import,
    import_limits,
)
from runner_core.run.config import parse_config

MIB = 1024 * 1024

A, B, C = "a" * 40, "b" * 40, "c" * 40
ASSUMPTIONS = ".runner/state/assumptions.md"


def file(path: str, oid: str = A, kind: EntryKind = EntryKind.FILE) -> ScratchEntry:
    return ScratchEntry(path, kind, 1, oid)


def test_a_new_file_a_changed_file_and_a_deleted_file_are_imported_sorted() -> None:
    base = {"kept.txt": BaseEntry(FILE_MODE, A), "changed.txt": BaseEntry(FILE_MODE, A)}
    entries = (file("new.txt", B), file("kept.txt", A), file("changed.txt", C))
    decision = decide_import(ScratchListing(entries, pmap(base)))
    assert decision.agent_error is None
    assert decision.changes == (
        Change("changed.txt", FILE_MODE, C),
        Change("new.txt", FILE_MODE, B),
    )


def test_a_file_missing_from_the_scratch_tree_is_deleted() -> None:
    scratch = ScratchListing((), pmap({"gone.txt": BaseEntry(FILE_MODE, A)}))
    assert decide_import(scratch).changes == (Change("gone.txt", None, None),)


def test_an_unchanged_file_is_not_a_change() -> None:
    scratch = ScratchListing((file("same.txt"),), pmap({"same.txt": BaseEntry(FILE_MODE, A)}))
    assert decide_import(scratch) == decide_import(ScratchListing(()))


def test_a_mode_change_is_a_change() -> None:
    scratch = ScratchListing(
        (file("run.sh", A, EntryKind.EXECUTABLE),), pmap({"run.sh": BaseEntry(FILE_MODE, A)})
    )
    assert decide_import(scratch).changes == (Change("run.sh", "100755", A),)


@pytest.mark.parametrize(
    "path",
    [
        ".runner/state/config.toml",
        ".runner/state/run_state.json",
        ".runner/state/schema.json",
        ".runner/state/executor_output.schema.json",
        ".runner/GOAL.md",
        ".runner/state/guidance.md",
        ".runner/.gitignore",
        ".runner/state/anything-new.toml",
    ],
)
def test_a_runner_owned_file_is_never_imported_only_noted(path: str) -> None:
    scratch = ScratchListing((file(path, B),), pmap({path: BaseEntry(FILE_MODE, A)}))
    assert decide_import(scratch) == ImportDecision((), (path,), None)


def test_a_runner_owned_file_deleted_is_noted_and_kept() -> None:
    scratch = ScratchListing((), pmap({".runner/GOAL.md": BaseEntry(FILE_MODE, A)}))
    decision = decide_import(scratch)
    assert (decision.changes, decision.discarded) == ((), (".runner/GOAL.md",))


def test_tree_json_is_never_imported_nor_noted() -> None:
    path = ".runner/state/tree.json"
    scratch = ScratchListing((file(path, B),), pmap({path: BaseEntry(FILE_MODE, A)}))
    assert decide_import(scratch).changes == () and decide_import(scratch).discarded == ()


def notes(before: bytes | None, after: bytes | None) -> ScratchListing:
    entries = () if after is None else (file(ASSUMPTIONS, B),)
    base = {} if before is None else {ASSUMPTIONS: BaseEntry(FILE_MODE, A)}
    return ScratchListing(entries, pmap(base), pmap({ASSUMPTIONS: (before, after)}))


def test_a_notes_file_that_grew_is_imported() -> None:
    assert decide_import(notes(b"one\n", b"one\ntwo\n")).changes == (
        Change(ASSUMPTIONS, FILE_MODE, B),
    )


def test_a_new_notes_file_is_imported() -> None:
    assert decide_import(notes(None, b"one\n")).changes == (Change(ASSUMPTIONS, FILE_MODE, B),)


@pytest.mark.parametrize(
    ("after", "says"),
    [
        (b"rewritten\n", "earlier text was changed or removed; it may only grow"),
        (None, "deleted; it may only grow"),
    ],
)
def test_a_notes_file_rewritten_or_deleted_is_an_agent_error(
    after: bytes | None, says: str
) -> None:
    decision = decide_import(notes(b"one\n", after))
    assert decision.changes == ()
    assert decision.agent_error is not None and f"{ASSUMPTIONS}: {says}" in decision.agent_error


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        (ScratchEntry("vendor/lib/.git", EntryKind.GIT), "a nested repository"),
        (ScratchEntry("vendor/.GIT/config", EntryKind.FILE, 1, A), "a nested repository"),
        (ScratchEntry("pipe", EntryKind.SPECIAL), "a FIFO, device or socket"),
        (ScratchEntry("big.bin", EntryKind.TOO_LARGE, 10**12), "over the import limit"),
        (ScratchEntry("out", EntryKind.SYMLINK, 3, A, "/etc/passwd"), "points outside"),
        (ScratchEntry("d/out", EntryKind.SYMLINK, 3, A, "../../x"), "points outside"),
        (ScratchEntry("in", EntryKind.SYMLINK, 3, A, ".git/config"), "points outside"),
    ],
)
def test_what_cannot_be_imported_is_an_agent_error_and_nothing_is_imported(
    entry: ScratchEntry, says: str
) -> None:
    decision = decide_import(ScratchListing((entry, file("work.txt"))))
    assert decision.changes == ()
    assert decision.agent_error is not None
    assert decision.agent_error.startswith("the scratch checkout holds what is never imported: ")
    assert says in decision.agent_error and "\n" not in decision.agent_error


def test_a_symlink_that_stays_inside_is_imported_with_its_target() -> None:
    entry = ScratchEntry("docs/latest", EntryKind.SYMLINK, 5, B, "../README.md")
    assert decide_import(ScratchListing((entry,))).changes == (
        Change("docs/latest", SYMLINK_MODE, B),
    )


def test_an_unchanged_symlink_of_the_base_pointing_out_is_kept() -> None:
    entry = ScratchEntry("etc", EntryKind.SYMLINK, 4, A, "/etc")
    scratch = ScratchListing((entry,), pmap({"etc": BaseEntry(SYMLINK_MODE, A)}))
    assert decide_import(scratch) == decide_import(ScratchListing(()))


def test_a_large_file_of_the_base_with_its_size_is_kept_as_it_was() -> None:
    entry = ScratchEntry("big.bin", EntryKind.TOO_LARGE, 10**9)
    scratch = ScratchListing((entry,), pmap({"big.bin": BaseEntry(FILE_MODE, A, 10**9)}))
    assert decide_import(scratch) == decide_import(ScratchListing(()))


def test_a_path_with_a_newline_is_named_on_one_line() -> None:
    decision = decide_import(ScratchListing((ScratchEntry("a\nb\u202e", EntryKind.SPECIAL),)))
    assert decision.agent_error is not None
    assert "a\\nb\\u202e: a FIFO" in decision.agent_error


def test_an_agent_error_names_five_paths_and_counts_the_rest() -> None:
    entries = tuple(ScratchEntry(f"p{n}", EntryKind.SPECIAL) for n in range(8))
    error = decide_import(ScratchListing(entries)).agent_error
    assert error is not None and error.count(": a FIFO") == 5 and error.endswith("; and 3 more")


def big(path: str, size: int) -> ScratchEntry:
    return ScratchEntry(path, EntryKind.FILE, size, B)


def test_a_checkout_grown_past_disk_mb_is_the_agents_error_naming_it_nothing_imported() -> None:
    limits = ImportLimits(bytes=10 * MIB, disk_bytes=2 * MIB)
    decision = decide_import(ScratchListing((big("a.bin", MIB), big("b.bin", MIB + 1))), limits)

    assert decision.changes == ()
    assert decision.agent_error is not None
    assert decision.agent_error.startswith("the sandbox's disk_mb (2) was reached")
    assert "nothing of it is imported" in decision.agent_error


def test_the_smaller_byte_cap_holds_and_is_the_one_named() -> None:
    entries = ScratchListing((big("a.bin", 3 * MIB),))
    by_import = decide_import(entries, ImportLimits(bytes=2 * MIB, disk_bytes=4 * MIB))
    under_both = decide_import(entries, ImportLimits(bytes=4 * MIB, disk_bytes=4 * MIB))
    stopped = ScratchListing((), stopped=("bytes", 3 * MIB))

    assert by_import.agent_error is not None and "import_limit_bytes" in by_import.agent_error
    assert under_both.agent_error is None and len(under_both.changes) == 1
    disk = decide_import(stopped, ImportLimits(bytes=4 * MIB, disk_bytes=2 * MIB)).agent_error
    assert disk is not None and "disk_mb (2)" in disk


def test_the_import_limits_of_a_config_take_disk_mb_from_its_sandbox() -> None:
    config = parse_config(
        {"agent": {"backend": "command", "command": ["a"]}, "sandbox": {"disk_mb": 3}}
    )
    limits = import_limits(config)

    assert (limits.disk_bytes, limits.stop_bytes) == (3 * MIB, 3 * MIB)
