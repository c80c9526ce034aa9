"""Layer 2 of validation: the tree's semantic invariants (SPEC §4.2).

Decides whether ids are unique and usable, `max_attempts` is positive, `attempts` stays within
it and siblings are in `(order, id)` order. Reads only the tree it is given; never repairs it.

An id is part of a node's path (`root/a/b`), of a commit subject and of one-line CLI output, so
it may not contain `/` (the path would be ambiguous), control characters or line breaks, and is
at most ID_MAX_LENGTH characters (it also travels in an environment variable and a commit).
"""

from __future__ import annotations

import re
from itertools import pairwise

from runner_core.model import Node, Trail, iter_preorder, trail_path

ID_MAX_LENGTH = 1000
# '/', the C0 and C1 control characters (Unicode category Cc), and the line and paragraph
# separators (Zl, Zp), which str.splitlines() also breaks on.
_FORBIDDEN_IN_ID = re.compile("[/\x00-\x1f\x7f-\x9f\u2028\u2029]")


def id_problem(node_id: str) -> str | None:
    """Why `node_id` cannot be a node id, or None when it can (the schema rules out '')."""
    if len(node_id) > ID_MAX_LENGTH:
        return f"id is {len(node_id)} characters long (at most {ID_MAX_LENGTH})"
    if _FORBIDDEN_IN_ID.search(node_id):
        return "id must not contain '/' or control characters"
    return None


def _shown(node_id: str) -> str:
    """An id as an error message may print it: one line, and not megabytes long."""
    if id_problem(node_id) is None:
        return node_id
    if len(node_id) > ID_MAX_LENGTH:
        node_id = node_id[:ID_MAX_LENGTH] + "..."
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in node_id
    )


def _path(trail: Trail, node_id: str) -> str:
    """`trail_path`, with any unusable id shown escaped and cut."""
    path = trail_path(trail, node_id)
    if not _FORBIDDEN_IN_ID.search(path) and len(path) <= ID_MAX_LENGTH:
        return path
    ids = [node_id]
    while trail is not None:
        ids.append(trail[0])
        trail = trail[1]
    return "/".join(_shown(part) for part in reversed(ids))


def validate_invariants(tree: Node) -> tuple[str, ...]:
    """Every invariant violation of `tree`, sorted; empty when it holds them all."""
    errors: list[str] = []
    seen: set[str] = set()
    for node, trail in iter_preorder(tree):
        # Paths are built only for errors: a valid deep chain stays linear.
        if node.id in seen:
            errors.append(f"duplicate id '{_shown(node.id)}' at {_path(trail, node.id)}")
        seen.add(node.id)
        problem = id_problem(node.id)
        if problem is not None:
            errors.append(f"{_path(trail, node.id)}: {problem}")
        if node.max_attempts <= 0:
            errors.append(f"{_path(trail, node.id)}: max_attempts must be > 0")
        if node.attempts > node.max_attempts:
            errors.append(
                f"{_path(trail, node.id)}: attempts {node.attempts} "
                f"exceeds max_attempts {node.max_attempts}"
            )
        if len(node.children) > 1:
            keys = [child.sort_key for child in node.children]
            if any(a > b for a, b in pairwise(keys)):
                errors.append(f"{_path(trail, node.id)}: children must be sorted by (order,id)")
    return tuple(sorted(errors))
