"""Which of the runner's environment variables an agent, a guard or a slot's setup gets.

The rule is an allow-list, the same with the sandbox on or off (the sandbox is how it is
enforced, not what decides it): every process gets PATH, the locale (LANG, LANGUAGE, LC_*),
TERM, TZ, HOME and the runner's own RUNNER_* variables (never the operator's settings of the
`runner` command itself, such as RUNNER_RUN picking a run); an agent also gets its backend's key
and endpoint variables (runner_core.backends.registry, `BackendInfo.env`) and what
`[sandbox] env` names; a guard and a setup command get no key and no token, only what
`[guard] env` names. A name ending in `*` is a prefix (`AWS_*`). docs/sandbox.md lists them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from runner_core.backends.registry import BACKENDS
from runner_core.run.branches import RUN_SELECTOR

# What every process gets: how to find programs, speak the user's language, draw on a terminal
# and tell the time, where its (private) HOME is, and what the runner tells it.
BASE_VARIABLES = ("HOME", "LANG", "LANGUAGE", "LC_*", "PATH", "RUNNER_*", "TERM", "TZ")

# The operator's settings of the `runner` command, never an agent's or a guard's: RUNNER_RUN
# picks the run a command works on (`--run ID`), not one the iteration's processes belong to
# (theirs is RUNNER_RUN_ID, set by the runner).
OPERATOR_VARIABLES = frozenset({RUN_SELECTOR})


def allowed(name: str, patterns: Iterable[str]) -> bool:
    """Whether `name` is one of `patterns` (a name, or a prefix ending in `*`)."""
    for pattern in patterns:
        if pattern.endswith("*"):
            if name.startswith(pattern[:-1]):
                return True
        elif name == pattern:
            return True
    return False


def passed_on(environ: Mapping[str, str], patterns: Iterable[str]) -> dict[str, str]:
    """The variables of `environ` that BASE_VARIABLES or `patterns` allow, sorted by name."""
    every = (*BASE_VARIABLES, *patterns)
    return {
        name: environ[name]
        for name in sorted(environ)
        if name not in OPERATOR_VARIABLES and allowed(name, every)
    }


def agent_environment(
    environ: Mapping[str, str], backend: str, extra: Iterable[str]
) -> dict[str, str]:
    """An agent session's variables: the base, its backend's own, and `[sandbox] env`."""
    return passed_on(environ, (*BACKENDS[backend].env, *extra))


def guard_environment(environ: Mapping[str, str], extra: Iterable[str]) -> dict[str, str]:
    """A guard's (and a slot setup's) variables: the base and `[guard] env`, nothing else."""
    return passed_on(environ, tuple(extra))
