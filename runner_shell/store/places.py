"""Where one step's files are: each path derived once, at the step's start, and handed along."""

from __future__ import annotations

from pathlib import Path

import attrs

from runner_shell.store.layout import EVENTS_FILE, Places, RunFiles, RunnerPaths


@attrs.frozen(slots=True)
class StepPlaces(RunFiles):
    """The run's paths as a step uses them (a `Places`), read off its `RunnerPaths` once:
    the helpers a step hands this to never derive a path from the repository root again."""

    root: Path
    runner_dir: Path
    goal: Path
    gitignore: Path
    state_dir: Path
    tree: Path
    schema: Path
    config: Path
    run_state: Path
    guidance: Path
    assumptions: Path
    questions: Path
    decomposer_schema: Path
    executor_schema: Path
    context_dir: Path
    iterations_dir: Path

    @classmethod
    def of(cls, paths: RunnerPaths) -> StepPlaces:
        return cls(
            root=paths.root,
            runner_dir=paths.runner_dir,
            goal=paths.goal,
            gitignore=paths.gitignore,
            state_dir=paths.state_dir,
            tree=paths.tree,
            schema=paths.schema,
            config=paths.config,
            run_state=paths.run_state,
            guidance=paths.guidance,
            assumptions=paths.assumptions,
            questions=paths.questions,
            decomposer_schema=paths.decomposer_schema,
            executor_schema=paths.executor_schema,
            context_dir=paths.context_dir,
            iterations_dir=paths.iterations_dir,
        )

    def runner_paths(self) -> RunnerPaths:
        """For the rare reader that walks the run's whole record (its history)."""
        return RunnerPaths(self.root)


@attrs.frozen(slots=True)
class IterationPlaces:
    """One iteration's directories, derived once when its number is known."""

    run_dir: Path
    iter_dir: Path
    previous_dir: Path  # the previous iteration's, whose outcome the agent is told of
    events_log: Path


def iteration_places(paths: Places, run_id: str, iteration: int) -> IterationPlaces:
    run_dir = paths.run_dir(run_id)
    return IterationPlaces(
        run_dir, run_dir / str(iteration), run_dir / str(iteration - 1), run_dir / EVENTS_FILE
    )
