"""What a task tree may be at most, and what an id may hold: rules read before any `Node`
exists.

Kept apart from `model` (which defines `Node` with attrs) so a reader that only asks a
question of a tree file (`runner_core.tree.plain`) can apply them without importing attrs.
An id is part of a node's path (`root/a/b`), of a commit subject and of one-line
`key=value` output, so it may not contain whitespace, `=`, `/` (the path would be ambiguous)
or control characters, and is at most ID_MAX_LENGTH characters (it also travels in an
environment variable and a commit).
"""

from __future__ import annotations

import re

# A tree's root is at depth 1; a tree of MAX_DEPTH levels is the deepest the runner accepts.
MAX_DEPTH = 100

# The largest tree text the runner reads, and so the largest it writes: a tree whose canonical
# form is bigger could never be read back. Canonical indentation grows with depth, so a tree
# that fits compactly may still be refused for its canonical size (`canonical_fits`).
TREE_MAX_BYTES = 128 * 1024 * 1024

ID_MAX_LENGTH = 1000
# Whitespace (which includes the line and paragraph separators str.splitlines() breaks on),
# '=', '/', and the C0 and C1 control characters (Unicode category Cc): one character each,
# so the pattern finds one in a concatenation of ids exactly when one of them holds it.
FORBIDDEN_IN_ID = re.compile(r"[\s=/\x00-\x1f\x7f-\x9f]")


def id_problem(node_id: str) -> str | None:
    """Why `node_id` cannot be a node id, or None when it can (the schema rules out '')."""
    if len(node_id) > ID_MAX_LENGTH:
        return f"id is {len(node_id)} characters long (at most {ID_MAX_LENGTH})"
    if FORBIDDEN_IN_ID.search(node_id):
        return "id must not contain whitespace, '=', '/' or control characters"
    return None
