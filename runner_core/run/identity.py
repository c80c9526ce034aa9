"""Run identity: run ids, their branch, the branches no run stands on, and GOAL.md's frontmatter.

Decides whether a run id is acceptable, which id a new run gets (`run-<HEAD sha 8>[-n]`),
and how GOAL.md's frontmatter reads and is rewritten with other keys kept in place. Works
on text only; the shell reads GOAL.md and asks git for the HEAD sha and the existing branches.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

import attrs

from runner_core.run.branches import BRANCH_PREFIX as BRANCH_PREFIX
from runner_core.run.branches import branch_for as branch_for

RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9._-]+")
RUN_ID_MAX_LENGTH = 100
# The branches no run is carried out on: a command standing on one names the runs to go on with.
PROTECTED_BRANCHES = ("main", "master")
_FENCE = "---"
_KEY_LINE = re.compile(r"([A-Za-z0-9_.-]+)\s*:\s*(.*)")


class RunIdentityError(ValueError):
    """A run id or GOAL.md frontmatter the runner cannot use."""


def run_id_problem(run_id: str) -> str | None:
    """Why `run_id` is not a usable run id, or None when it is."""
    if not run_id:
        return "run id is empty"
    if len(run_id) > RUN_ID_MAX_LENGTH:
        return f"run id is {len(run_id)} characters long (at most {RUN_ID_MAX_LENGTH})"
    if run_id in (".", ".."):
        return f"run id must not be '{run_id}'"
    if not RUN_ID_PATTERN.fullmatch(run_id):
        return f"run id {run_id!r} may contain only letters, digits, '.', '_' and '-'"
    # git refuses a ref component that starts with '.' or ends with '.' or '.lock'.
    if run_id.endswith((".lock", ".")) or ".." in run_id or run_id.startswith(("-", ".")):
        return f"run id {run_id!r} is not a valid git branch name component"
    return None


def ways_on(run_ids: tuple[str, ...]) -> str:
    """How to go on from main/master when runs exist: continue one, or start a new one."""
    first = run_ids[0]
    return (
        f"run(s) {', '.join(run_ids)} exist: 'git checkout {branch_for(first)}' to continue "
        f"{'it' if len(run_ids) == 1 else 'one'}, or 'runner start --new' for a new run"
    )


def generate_run_id(head_sha: str, taken: Collection[str]) -> str:
    """`run-<first 8 of HEAD>`, or with `-2`, `-3`, ... when that id was already used."""
    base = f"run-{head_sha[:8]}"
    if base not in taken:
        return base
    return first_unused(taken, lambda n: f"{base}-{n}", 2)


def first_unused(taken: Collection[str], name: Callable[[int], str], start: int) -> str:
    """`name(start)`, else `name(start + 1)`, ...: the first of them `taken` does not hold."""
    n = start
    while name(n) in taken:
        n += 1
    return name(n)


@attrs.frozen(slots=True)
class Frontmatter:
    """GOAL.md split into its frontmatter (key/value pairs, in order) and the body."""

    entries: tuple[tuple[str, str], ...]
    body: str
    present: bool

    def get(self, key: str) -> str | None:
        return next((value for name, value in self.entries if name == key), None)


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _bare(line: str) -> str:
    """A line without its break, whichever of str.splitlines()'s breaks (`\\x0b`, `\\u2028`,
    ...) ends it: fences are found the same way wherever GOAL.md is read."""
    return line.splitlines()[0] if line.splitlines() else ""


def parse_frontmatter(text: str) -> Frontmatter:
    """Parse GOAL.md; raises `RunIdentityError` for broken or duplicated frontmatter."""
    lines = text.splitlines(keepends=True)
    if not lines or _bare(lines[0]) != _FENCE:
        return Frontmatter((), text, present=False)
    end = next((i for i in range(1, len(lines)) if _bare(lines[i]) == _FENCE), None)
    if end is None:
        raise RunIdentityError("frontmatter opened with '---' on line 1 is never closed")
    entries: list[tuple[str, str]] = []
    for number, line in enumerate(lines[1:end], start=2):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _KEY_LINE.fullmatch(stripped)
        if match is None:
            raise RunIdentityError(f"frontmatter line {number} is not 'key: value': {stripped!r}")
        key = match.group(1)
        if any(name == key for name, _ in entries):
            raise RunIdentityError(f"frontmatter key '{key}' appears twice (line {number})")
        entries.append((key, _unquote(match.group(2))))
    body = "".join(lines[end + 1 :])
    following = body.lstrip("\r\n").splitlines()
    if len(following) > 1 and following[0] == _FENCE and _KEY_LINE.fullmatch(following[1].strip()):
        raise RunIdentityError("GOAL.md has a second frontmatter block; keep only one")
    return Frontmatter(tuple(entries), body, present=True)


def _frontmatter_key(line: str) -> str | None:
    match = _KEY_LINE.fullmatch(line.strip())
    return None if match is None else match.group(1)


EMPTY_GOAL = (
    "has no goal: it is empty or only frontmatter; write what the run should achieve below "
    "the frontmatter"
)
GOAL_PLACEHOLDER = """# Goal

Describe what the agents should achieve in this repository: the outcome, the constraints,
and how to tell it is done. The runner gives this file to every agent session.
"""
PLACEHOLDER_GOAL = (
    "still holds the placeholder 'runner init' wrote: edit .runner/GOAL.md to say what the "
    "agents should achieve (the outcome, the constraints, how to tell it is done)"
)


def _prose_words(body: str) -> tuple[str, ...]:
    """The words of a Markdown body outside its headings: what a goal says, in any layout."""
    return tuple(
        word
        for line in body.splitlines()
        if not line.lstrip().startswith("#")
        for word in line.split()
    )


def empty_goal_problem(text: str) -> str | None:
    """Why GOAL.md cannot drive a run because it states no goal (empty, only frontmatter, or
    still the placeholder `runner init` scaffolds); start, validate and step refuse it up
    front, since the agent's prompt needs one and a paid session on nothing is wasted."""
    try:
        body = parse_frontmatter(text).body
    except RunIdentityError:
        return None  # broken frontmatter is goal_run_id's to report
    if not body.strip():
        return EMPTY_GOAL
    return PLACEHOLDER_GOAL if _prose_words(body) == _prose_words(GOAL_PLACEHOLDER) else None


def goal_run_id(text: str) -> str | None:
    """The `id` in GOAL.md's frontmatter, validated; None when there is none."""
    run_id = parse_frontmatter(text).get("id")
    if run_id is None:
        return None
    problem = run_id_problem(run_id)
    if problem is not None:
        raise RunIdentityError(f"frontmatter id: {problem}")
    return run_id


def with_run_id(text: str, run_id: str) -> str:
    """GOAL.md text with frontmatter `id: <run_id>`, every other key and the body kept."""
    matter = parse_frontmatter(text)
    if matter.present:
        lines = text.splitlines(keepends=True)
        end = next(i for i in range(1, len(lines)) if _bare(lines[i]) == _FENCE)
        kept = [line for line in lines[1:end] if _frontmatter_key(line) != "id"]
        return "".join([f"{_FENCE}\nid: {run_id}\n", *kept, f"{_FENCE}\n", matter.body])
    return f"{_FENCE}\nid: {run_id}\n{_FENCE}\n{text}"
