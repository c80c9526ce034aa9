"""A step's places are the run's paths, each derived once: they name the same files."""

from __future__ import annotations

from pathlib import Path

from runner_shell.store.layout import Places, RunnerPaths
from runner_shell.store.places import StepPlaces

MEMBERS = tuple(
    name
    for name in vars(Places)
    if not name.startswith("_") and name not in ("run_dir", "events_log", "iter_dir", "relative")
)


def test_step_places_name_every_file_the_run_paths_name(tmp_path: Path) -> None:
    paths = RunnerPaths(tmp_path)
    places = StepPlaces.of(paths)

    assert MEMBERS
    for name in MEMBERS:
        assert getattr(places, name) == getattr(paths, name), name
    assert places.run_dir("r") == paths.run_dir("r")
    assert places.events_log("r") == paths.events_log("r")
    assert places.iter_dir("r", 3) == paths.iter_dir("r", 3)
    assert places.relative(paths.tree) == paths.relative(paths.tree)
    assert places.relative(Path("/elsewhere/x")) == paths.relative(Path("/elsewhere/x"))
    assert places.runner_paths() == paths
