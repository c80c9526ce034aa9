"""Where runner's files live in the target repository."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Protocol

EVENTS_FILE = "events.jsonl"


class _Root(NamedTuple):
    root: Path


class RunFiles:
    """The paths of one run's record, from `iterations_dir` (and `relative`, from `root`): one
    home for both ways of holding the runner's paths (`RunnerPaths`, `StepPlaces`)."""

    __slots__ = ()

    @property
    def root(self) -> Path:
        raise NotImplementedError

    @property
    def iterations_dir(self) -> Path:
        raise NotImplementedError

    def run_dir(self, run_id: str) -> Path:
        return self.iterations_dir / run_id

    def events_log(self, run_id: str) -> Path:
        """The run's event stream, beside its iteration directories."""
        return self.run_dir(run_id) / EVENTS_FILE

    def iter_dir(self, run_id: str, iteration: int) -> Path:
        return self.run_dir(run_id) / str(iteration)

    def relative(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)


class RunnerPaths(_Root, RunFiles):
    """Where the runner's files live under the repository root `root`.

    Immutable, compared and hashed by `root`, as a frozen attrs class would be; a named
    tuple rather than attrs because every command builds one, and `runner select` imports
    nothing else that needs attrs (whose import costs a process about as much as decoding a
    10,000-node tree: `python -X importtime`).
    """

    __slots__ = ()

    # Absolute whatever the caller gave: these paths are handed to agents and guards, which
    # run in the repository root, where a path relative to the runner's own directory is wrong.
    def __new__(cls, root: Path) -> RunnerPaths:
        return super().__new__(cls, root.absolute())

    @property
    def runner_dir(self) -> Path:
        return self.root / ".runner"

    @property
    def goal(self) -> Path:
        return self.runner_dir / "GOAL.md"

    @property
    def gitignore(self) -> Path:
        return self.runner_dir / ".gitignore"

    @property
    def state_dir(self) -> Path:
        return self.runner_dir / "state"

    @property
    def tree(self) -> Path:
        return self.state_dir / "tree.json"

    @property
    def schema(self) -> Path:
        return self.state_dir / "schema.json"

    @property
    def config(self) -> Path:
        return self.state_dir / "config.toml"

    @property
    def run_state(self) -> Path:
        return self.state_dir / "run_state.json"

    @property
    def assumptions(self) -> Path:
        return self.state_dir / "assumptions.md"

    @property
    def questions(self) -> Path:
        return self.state_dir / "questions.md"

    @property
    def guidance(self) -> Path:
        return self.state_dir / "guidance.md"

    @property
    def decomposer_schema(self) -> Path:
        return self.state_dir / "decomposer_output.schema.json"

    @property
    def executor_schema(self) -> Path:
        return self.state_dir / "executor_output.schema.json"

    @property
    def context_dir(self) -> Path:
        return self.runner_dir / "context"

    @property
    def iterations_dir(self) -> Path:
        return self.runner_dir / "iterations"


class Places(Protocol):
    """What a reader of the runner's files asks of where they are: a `RunnerPaths`, deriving
    each path when asked, or a step's `StepPlaces` (runner_shell/store/places.py), holding
    each one derived once at the step's start."""

    @property
    def root(self) -> Path: ...
    @property
    def runner_dir(self) -> Path: ...
    @property
    def goal(self) -> Path: ...
    @property
    def gitignore(self) -> Path: ...
    @property
    def state_dir(self) -> Path: ...
    @property
    def tree(self) -> Path: ...
    @property
    def schema(self) -> Path: ...
    @property
    def config(self) -> Path: ...
    @property
    def run_state(self) -> Path: ...
    @property
    def guidance(self) -> Path: ...
    @property
    def assumptions(self) -> Path: ...
    @property
    def questions(self) -> Path: ...
    @property
    def decomposer_schema(self) -> Path: ...
    @property
    def executor_schema(self) -> Path: ...
    @property
    def context_dir(self) -> Path: ...
    def run_dir(self, run_id: str) -> Path: ...
    def events_log(self, run_id: str) -> Path: ...
    def iter_dir(self, run_id: str, iteration: int) -> Path: ...
    def relative(self, path: Path) -> str: ...
