"""The node's own say in how its guard judges it: `test: <pattern>` and `may-edit: <pattern>`
acceptance entries, and the two glob dialects they use.

A test pattern is a glob on test ids where `*` matches anything (ids hold `::`, `.` and `/`),
whatever the case;
a path pattern is a glob on repository paths where `*` and `?` stay inside one directory and
`**` crosses them (`tests/**` is everything under `tests/`). Never reads a file.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

TEST_PREFIX = "test:"
MAY_EDIT_PREFIX = "may-edit:"
FILES_PREFIX = "files:"


def _entries(acceptance: Sequence[str], prefix: str) -> tuple[str, ...]:
    found = (entry.strip()[len(prefix) :].strip() for entry in acceptance)
    starts = (entry.strip().startswith(prefix) for entry in acceptance)
    return tuple(pattern for pattern, start in zip(found, starts, strict=True) if start and pattern)


def target_patterns(acceptance: Sequence[str]) -> tuple[str, ...]:
    """The `test: <pattern>` entries of a node's acceptance, in order: its target tests."""
    return _entries(acceptance, TEST_PREFIX)


def may_edit_patterns(acceptance: Sequence[str]) -> tuple[str, ...]:
    """The `may-edit: <pattern>` entries of a node's acceptance: protected paths it may change."""
    return _entries(acceptance, MAY_EDIT_PREFIX)


def files_patterns(acceptance: Sequence[str]) -> tuple[str, ...]:
    """The `files: <pattern>` entries of a node's acceptance: the paths its work changes, which
    the parallel scheduler keeps apart (two leaves declaring one pattern never run together)."""
    return _entries(acceptance, FILES_PREFIX)


@functools.lru_cache(maxsize=256)
def _regex(pattern: str, crosses: bool) -> re.Pattern[str]:
    parts: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**", index):
            parts.append(".*")
            index += 2
            continue
        if char == "*":
            parts.append(".*" if crosses else "[^/]*")
        elif char == "?":
            parts.append("." if crosses else "[^/]")
        else:
            parts.append(re.escape(char))
        index += 1
    # A test id's case is the reporter's (Node keeps `camelCase`, pytest lowers nothing): a
    # test pattern ignores it; a path pattern does not.
    return re.compile("".join(parts), re.DOTALL | (re.IGNORECASE if crosses else 0))


def matches_test_id(pattern: str, test_id: str) -> bool:
    """Whether a test id matches a `test:` pattern (`*` and `?` match any character; case is
    ignored: `*camelcase*` matches `test::camelCase spaces`)."""
    return _regex(pattern, True).fullmatch(test_id) is not None


def path_matches(pattern: str, path: str) -> bool:
    """Whether a repository path matches a path pattern (`**` crosses directories, `*` not)."""
    return _regex(pattern, False).fullmatch(path) is not None
