"""Protected paths: test files an executor may not change unless its node allows it.

`[guard] protected` lists path patterns; a change (edit, deletion, addition) of a matching path
by an executor iteration is an agent error unless a `may-edit:` entry of the node's acceptance
AS IT WAS BEFORE THE AGENT RAN covers it (the agent may edit an open node's acceptance, so its
own edit never grants it anything). Never reads a file.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from runner_core.guard.patterns import may_edit_patterns, path_matches


def protected_changes(
    changed_paths: Iterable[str], protected: Sequence[str], acceptance_before: Sequence[str]
) -> tuple[str, ...]:
    """One sorted agent-error line per protected path the iteration changed without leave."""
    allowed = may_edit_patterns(acceptance_before)
    return tuple(
        f"changed protected test file '{path}' (allow it with 'may-edit: {path}' in the node's"
        " acceptance)"
        for path in sorted(set(changed_paths))
        if any(path_matches(pattern, path) for pattern in protected)
        and not any(path_matches(pattern, path) for pattern in allowed)
    )
