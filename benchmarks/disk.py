"""What a step leaves on disk: the rows of bench.py's `big` and `run` groups that measure bytes.

- Outside `.git`, per step on a big tree: the bytes one `runner step` adds to the repository's
  files, `.git` left out and a file with several links counted once, beside the size of the tree
  file (what a full copy of the tree costs). An iteration's own logs and prompt are kilobytes;
  the target is that a step keeps no copy of the tree outside git.
- In `.git/objects`, per step late in a run: the bytes of git's object store (loose objects
  and packs) one no-op step adds at iteration N of a run, beside the same at iteration 10 of
  a run of the same tree: whether what an iteration stores stays small and flat as the run
  grows.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import bench

# Bytes a step may add outside .git: its iteration's logs, prompt and meta, never a tree.
WORK_TREE_TARGET_BYTES = 1024 * 1024
# Bytes a no-op step may add to .git/objects late in a run.
OBJECTS_TARGET_BYTES = 30 * 1024


def files_bytes(root: Path, skip: frozenset[str] = frozenset()) -> int:
    """The bytes of every regular file under `root` (top-level entries named in `skip` left
    out), each file counted once however many links it has; links are not followed."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for directory, names, files in os.walk(root):
        if Path(directory) == root:
            names[:] = [name for name in names if name not in skip]
            files = [name for name in files if name not in skip]
        for name in files:
            found = os.lstat(os.path.join(directory, name))
            if stat.S_ISREG(found.st_mode) and (found.st_dev, found.st_ino) not in seen:
                seen.add((found.st_dev, found.st_ino))
                total += found.st_size
    return total


def step_growth(repo: Path, measure: Callable[[Path], int], steps: int = 1) -> float:
    """The bytes `measure` grows by per `runner step` of `repo`, over `steps` steps."""
    before = measure(repo)
    for _ in range(steps):
        bench.run([*bench.runner_command(), "step"], repo)
    return (measure(repo) - before) / steps


def work_tree_bytes(repo: Path) -> int:
    return files_bytes(repo, frozenset({".git"}))


def objects_bytes(repo: Path) -> int:
    return files_bytes(repo / ".git" / "objects")


def work_tree_row(repo: Path, size: int) -> bench.Row:
    """One more step of the big group's run: what it adds outside .git."""
    tree = (repo / ".runner" / "state" / "tree.json").stat().st_size
    grown = step_growth(repo, work_tree_bytes)
    return bench.Row(
        metric="bytes one `runner step` adds outside .git",
        size=size,
        runner=grown,
        floor=tree,
        unit="bytes",
        target=f"<= {WORK_TREE_TARGET_BYTES // 1024} KiB",
        met=grown <= WORK_TREE_TARGET_BYTES,
        note="floor: the tree file's size (a full copy of the tree); links counted once",
    )


def objects_row(late: Path, early: Path, length: int, early_at: int, steps: int) -> bench.Row:
    """`steps` more no-op steps of each of the run group's two runs: what each adds to
    .git/objects late in the run, beside early."""
    late_growth = step_growth(late, objects_bytes, steps)
    early_growth = step_growth(early, objects_bytes, steps)
    return bench.Row(
        metric=f"bytes one no-op `runner step` adds to .git/objects at iteration {length}",
        size=None,
        runner=late_growth,
        floor=early_growth,
        unit="bytes",
        target=f"<= {OBJECTS_TARGET_BYTES // 1024} KiB",
        met=late_growth <= OBJECTS_TARGET_BYTES,
        note=f"floor: the same at iteration {early_at}; loose objects and packs, {steps} steps",
    )
