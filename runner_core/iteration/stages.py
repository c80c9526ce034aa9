"""The iteration's stages and which may follow which, as a table read in the iteration's order.

Decides every legal transition of the machine: `TRANSITIONS` maps a stage to the stages that
may come next, and `check_transition` refuses any other with `IterationMachineError`. Never
chooses among the legal ones: the machine's `_after_*` steps do, from the result fed back.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType


class Stage(enum.StrEnum):
    """Where an iteration stands: the effect it waits on (DONE: it has finished or aborted)."""

    PREPARING = "preparing"
    CONTEXT = "context"
    JOURNAL = "journal"
    BASELINE = "baseline"
    PROMPT = "prompt"
    AGENT = "agent"
    PLANNER_OUTPUT = "planner-output"
    TREE = "tree"
    GUARD = "guard"
    RERUN = "rerun"
    GUARD_LOG = "guard-log"
    IMPORT = "import"
    HEAD = "head"
    CARRY = "carry"
    CONFIG = "config"
    RESTORE = "restore"
    COUNTING = "counting"
    COMMITTING = "committing"
    DONE = "done"


def _next(*stages: Stage) -> frozenset[Stage]:
    return frozenset(stages)


# The iteration, top to bottom. Before the agent, an I/O failure aborts (DONE: nothing is
# recorded). A ratchet guard may run at the base commit (BASELINE) before the prompt, and again
# (RERUN) after the guard when a test regressed. An executor's scratch checkout is listed
# (IMPORT) before its GUARD: the import is decided before any guard runs, and a refused one
# runs none. From the prompt on, a runner error skips to the end checks: IMPORT when the agent
# worked in a scratch checkout and it was not listed yet, then HEAD when the shell checks it,
# else CONFIG. When the operator's commits moved the run branch meanwhile, the agent's work is
# carried onto them (CARRY); a change the runner does not take aborts (DONE). RESTORE and COMMITTING
# abort on an I/O failure; COMMITTING's success is DONE with the iteration's record.
TRANSITIONS: Mapping[Stage, frozenset[Stage]] = MappingProxyType(
    {
        Stage.PREPARING: _next(Stage.CONTEXT, Stage.DONE),
        Stage.CONTEXT: _next(Stage.JOURNAL, Stage.DONE),
        Stage.JOURNAL: _next(Stage.BASELINE, Stage.PROMPT, Stage.DONE),
        Stage.BASELINE: _next(Stage.PROMPT, Stage.IMPORT, Stage.HEAD, Stage.CONFIG),
        Stage.PROMPT: _next(Stage.AGENT, Stage.IMPORT, Stage.HEAD, Stage.CONFIG),
        Stage.AGENT: _next(
            Stage.TREE, Stage.PLANNER_OUTPUT, Stage.IMPORT, Stage.HEAD, Stage.CONFIG
        ),
        Stage.PLANNER_OUTPUT: _next(Stage.IMPORT, Stage.HEAD, Stage.CONFIG),
        Stage.TREE: _next(Stage.GUARD, Stage.IMPORT, Stage.HEAD, Stage.CONFIG),
        Stage.GUARD: _next(Stage.RERUN, Stage.GUARD_LOG, Stage.HEAD, Stage.CONFIG),
        Stage.RERUN: _next(Stage.RERUN, Stage.GUARD_LOG, Stage.HEAD, Stage.CONFIG),
        Stage.GUARD_LOG: _next(Stage.HEAD, Stage.CONFIG),
        Stage.IMPORT: _next(Stage.GUARD, Stage.HEAD, Stage.CONFIG),
        Stage.HEAD: _next(Stage.CARRY, Stage.CONFIG, Stage.DONE),
        Stage.CARRY: _next(Stage.CONFIG, Stage.DONE),
        Stage.CONFIG: _next(Stage.RESTORE, Stage.COUNTING, Stage.COMMITTING),
        Stage.RESTORE: _next(Stage.COUNTING, Stage.COMMITTING, Stage.DONE),
        Stage.COUNTING: _next(Stage.COMMITTING, Stage.DONE),
        Stage.COMMITTING: _next(Stage.DONE),
        Stage.DONE: _next(),
    }
)


class IterationMachineError(RuntimeError):
    """The machine was driven off its table: a transition `TRANSITIONS` does not allow, a result
    that does not answer the effect asked for, or a result fed after the end. A bug in the
    driver or the core, never a user's error."""


def check_transition(before: Stage, after: Stage) -> None:
    if after not in TRANSITIONS[before]:
        raise IterationMachineError(f"illegal iteration transition {before.value} -> {after.value}")
