"""Where a parallel `runner loop` spends its own threads' time, beyond the sleeping agents.

    python benchmarks/parallel_profile.py [--leaves 32] [--slots 8] [--sleep 2] [--sandbox bwrap]

Builds the `parallel` group's run (benchmarks/parallel.py), runs `runner loop` in this process
and prints, for each function the loop calls, the calls made on the loop's main thread and on
the merge queue's thread, and their inclusive wall time. The merge queue merges every job one
at a time, so its busy time bounds what the slots can win: with jobs of S seconds and N slots,
a job's share of it must stay well under S / N. Functions a version of the loop does not have
are left out.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import importlib
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench
import parallel

# (module, attribute): the loop's scheduling and merging, and what they call that costs.
TIMED = (
    ("runner_shell.loop.parallel_loop", "_schedule"),
    ("runner_shell.loop.parallel_loop", "_start"),
    ("runner_shell.loop.parallel_loop", "_merge_next"),
    ("runner_shell.loop.parallel_loop", "merge_job"),
    ("runner_shell.loop.parallel_loop", "_after_merge"),
    ("runner_shell.loop.parallel_merges", "merge_next"),
    ("runner_shell.loop.parallel_merges", "merge_job"),
    ("runner_shell.loop.parallel_merges", "after_merge"),
    ("runner_shell.loop.parallel_loop", "_wait_for_a_job"),
    ("runner_shell.loop.parallel_jobs", "head_side"),
    ("runner_shell.loop.parallel_jobs", "_merged_onto"),
    ("runner_shell.loop.parallel_jobs", "carry_onto"),
    ("runner_shell.loop.parallel_jobs", "_guarded_again"),
    ("runner_shell.loop.parallel_jobs", "merged_commit"),
    ("runner_shell.loop.parallel_jobs", "prepare_slot"),
    ("runner_shell.loop.parallel_jobs", "interpret"),
    ("runner_shell.step.agent_and_guard", "ProcessGuardRunner.run_guard"),
    ("runner_shell.step.iteration_store", "commit_iteration"),
    ("runner_shell.git.file_commit", "commit_files"),
    ("runner_shell.git.log_archive", "archive_after_commit"),
    ("runner_shell.store.iteration_log", "_write"),
    ("runner_shell.step.lock_and_journal", "write_journal"),
)


class MainThreadClock:
    """Inclusive wall time and calls of wrapped functions, on the loop's main thread and (its
    label marked) on the merge queue's, not in the jobs' threads."""

    def __init__(self) -> None:
        self.secs: collections.defaultdict[str, float] = collections.defaultdict(float)
        self.calls: collections.Counter[str] = collections.Counter()

    def wrap(self, module_name: str, attribute: str) -> bool:
        """Time `module.attribute` (`Class.method` too); False when it does not exist."""
        owner: Any = importlib.import_module(module_name)
        *classes, name = attribute.split(".")
        for class_name in classes:
            owner = getattr(owner, class_name, None)
        inner = getattr(owner, name, None)
        if inner is None:
            return False
        setattr(owner, name, self._timed(inner, f"{module_name.rsplit('.', 1)[-1]}.{attribute}"))
        return True

    def _timed(self, inner: Callable[..., Any], label: str) -> Callable[..., Any]:
        @functools.wraps(inner)
        def timed(*args: Any, **kwargs: Any) -> Any:
            thread = threading.current_thread()
            merging = thread.name.startswith("runner-merge-")
            if thread is not threading.main_thread() and not merging:
                return inner(*args, **kwargs)
            where = f"[merge] {label}" if merging else label
            started = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.secs[where] += time.perf_counter() - started
                self.calls[where] += 1

        return timed

    def lines(self, wall: float) -> list[str]:
        heading = "loop and [merge] threads, inclusive"
        lines = [f"{heading:56} {'calls':>5} {'total':>8} {'per call':>9}"]
        for label, secs in sorted(self.secs.items(), key=lambda item: -item[1]):
            calls = self.calls[label]
            lines.append(f"{label:56} {calls:5d} {secs:7.2f}s {secs / calls * 1000:7.1f}ms")
        lines.append(f"{'`runner loop` wall time':56} {'':5} {wall:7.2f}s")
        return lines


def run_loop(repo: Path) -> float:
    """`runner loop` in this process, in `repo`; its wall time."""
    from runner_shell.cli.entry import main

    saved_argv, saved_cwd = sys.argv, Path.cwd()
    sys.argv = ["runner", "loop"]
    os.chdir(repo)
    started = time.perf_counter()
    try:
        with contextlib.suppress(SystemExit):
            main()
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
    return time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leaves", type=int, default=parallel.LEAVES)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--sleep", type=float, default=parallel.SLEEP_SECS)
    parser.add_argument("--sandbox", default="bwrap", help='"bwrap" or "off"')
    args = parser.parse_args(argv)
    clock = MainThreadClock()
    missing = [f"{module}.{name}" for module, name in TIMED if not clock.wrap(module, name)]
    text = bench.step_tree(args.leaves)
    with tempfile.TemporaryDirectory(prefix="runner-parallel-profile-") as temp:
        repo = parallel.loop_repo(Path(temp), text, args.slots, args.sleep, args.sandbox, 0)
        wall = run_loop(repo)
    ideal = parallel.ideal_secs(text, args.slots, args.sleep)
    print("\n".join(clock.lines(wall)))
    print(f"ideal {ideal:g} s; ideal / wall time {ideal / wall:.2f}")
    if missing:
        print(f"not in this version of the loop: {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
