"""Layer 2 of validation: the tree's semantic invariants.

Decides whether ids are unique and usable, `max_attempts` is positive, `attempts` stays within
it, siblings are in `(order, id)` order and the tree is at most MAX_DEPTH levels deep. Reads
only the tree it is given; never repairs it. What an id may hold is `runner_core.tree.bounds`.
"""

from __future__ import annotations

from itertools import pairwise

from runner_core.tree.bounds import FORBIDDEN_IN_ID as _FORBIDDEN_IN_ID
from runner_core.tree.bounds import ID_MAX_LENGTH as ID_MAX_LENGTH
from runner_core.tree.bounds import id_problem as id_problem
from runner_core.tree.model import MAX_DEPTH, Ancestors, Node, path_of, sort_key
from runner_core.validation.finding import Finding


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


def _path(ancestors: Ancestors, node_id: str) -> str:
    """`path_of`, with any unusable id shown escaped and cut."""
    path = path_of(ancestors, node_id)
    if not _FORBIDDEN_IN_ID.search(path.replace("/", "")) and len(path) <= ID_MAX_LENGTH:
        return path
    return "/".join(_shown(part) for part in (*ancestors, node_id))


def _node_errors(node: Node, ancestors: Ancestors) -> list[Finding]:
    """The invariants one node breaks on its own; paths are built only for errors."""
    errors: list[Finding] = []

    def found(code: str, problem: str) -> None:
        message = f"{_path(ancestors, node.id)}: {problem}"
        errors.append(Finding("invariants", node.id, path_of(ancestors, node.id), code, message))

    problem = id_problem(node.id)
    if problem is not None:
        found("id_too_long" if len(node.id) > ID_MAX_LENGTH else "id_unusable", problem)
    if node.max_attempts <= 0:
        found("max_attempts_not_positive", "max_attempts must be > 0")
    if node.attempts > node.max_attempts:
        found(
            "attempts_exceed_max",
            f"attempts {node.attempts} exceeds max_attempts {node.max_attempts}",
        )
    if len(node.children) > 1 and any(
        sort_key(left) > sort_key(right) for left, right in pairwise(node.children)
    ):
        found("children_unsorted", "children must be sorted by (order,id)")
    return errors


def invariant_findings(tree: Node) -> tuple[Finding, ...]:
    """Every invariant violation of `tree`, sorted by message; empty when it holds them all.

    Below MAX_DEPTH nothing is looked at: the first node too deep on each path is the error.
    """
    errors: list[Finding] = []
    seen: set[str] = set()

    def visit(node: Node, ancestors: Ancestors) -> None:
        depth = len(ancestors) + 1
        if depth > MAX_DEPTH:
            message = f"{_path(ancestors, node.id)}: depth {depth} exceeds the limit of {MAX_DEPTH}"
            errors.append(_found(node, ancestors, "too_deep", message))
            return
        if node.id in seen:
            message = f"duplicate id '{_shown(node.id)}' at {_path(ancestors, node.id)}"
            errors.append(_found(node, ancestors, "duplicate_id", message))
        seen.add(node.id)
        if (
            node.max_attempts <= 0
            or node.attempts > node.max_attempts
            or len(node.children) > 1
            or id_problem(node.id) is not None
        ):
            errors.extend(_node_errors(node, ancestors))
        if node.children:
            below = (*ancestors, node.id)
            for child in node.children:
                visit(child, below)

    visit(tree, ())
    return tuple(sorted(errors, key=lambda found: found.message))


def _found(node: Node, ancestors: Ancestors, code: str, message: str) -> Finding:
    return Finding("invariants", node.id, path_of(ancestors, node.id), code, message)
