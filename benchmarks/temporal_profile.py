"""Where a remote job's time goes, phase by phase, in the `temporal` group's run.

    python benchmarks/temporal_profile.py [--leaves 32] [--slots 8] [--workers 2] [--sleep 2]

Runs the `temporal` group's tree once (benchmarks/temporal_runs.py: a development server of its
own, fresh workers, a bare repository as the shared remote), `runner loop` in this process, and
prints, over its jobs, the median and the total of each phase between two marks:

- scheduled: meta.json's `started_at` (the loop, when it gathers the job's facts);
- sent: the loop's `request_for` returns (the start commit pushed, the request built);
- started, agent, agent ended, guard ended: the worker's `iteration_started`, `agent_started`,
  `agent_finished` and `guard_finished` (Temporal's workflow and activity, the worker's clone
  checked out, its slot reset, the sandbox, the agent, the import and the guard);
- answered: the loop's wait for the job's result returns (the worker's pushes, the activity's
  and the workflow's end);
- taken: the loop's `take` returns (the answer fetched and checked);
- merging: the merge queue starts the job's merge (until then, from taken, the job waits for
  the jobs before it);
- iteration_finished: the merge's commit, as the loop's event tells it;
- merged: the merge ends.

The loop's and the workers' clocks are this machine's. `temporalio` is imported before the loop
runs, so that the loop ends by SystemExit, not the quick `_exit` (runner_shell/cli/app.py).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import functools
import importlib
import itertools
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench
import parallel
import parallel_profile
import temporal_runs

from runner_shell.remote.keys import new_key_file

# The marks of a job, in order; each phase is from one to the next.
MARKS = (
    "scheduled",
    "sent",
    "iteration_started",
    "agent_started",
    "agent_finished",
    "guard_finished",
    "answered",
    "taken",
    "merging",
    "iteration_finished",
    "merged",
)
# (module, function, the mark of its end, the mark of its start or None, the job's iteration
# from its arguments): the loop's own calls that make marks.
TIMED: tuple[tuple[str, str, str, str | None, Callable[[tuple[Any, ...]], int]], ...] = (
    ("runner_shell.loop.remote_loop", "request_for", "sent", None, lambda a: a[2].plan.iteration),
    ("runner_shell.loop.remote_loop", "answer_of", "taken", None, lambda a: a[2].iteration),
    ("runner_shell.remote.coordinator", "_wait_for", "answered", None, lambda a: a[2].iteration),
    (
        "runner_shell.loop.parallel_merges",
        "merge_job",
        "merged",
        "merging",
        lambda a: a[2].iteration,
    ),
)


class Marks:
    """The moment (seconds since the epoch) of each mark of each job, by iteration."""

    def __init__(self) -> None:
        self.at: collections.defaultdict[int, dict[str, float]] = collections.defaultdict(dict)

    def wrap(
        self,
        module_name: str,
        name: str,
        end: str,
        start: str | None,
        iteration_of: Callable[[tuple[Any, ...]], int],
    ) -> None:
        module: Any = importlib.import_module(module_name)
        inner = getattr(module, name)

        @functools.wraps(inner)
        def marked(*args: Any, **kwargs: Any) -> Any:
            started = time.time()
            try:
                return inner(*args, **kwargs)
            finally:
                at = self.at[iteration_of(args)]
                at[end] = time.time()
                if start is not None:
                    at[start] = started

        setattr(module, name, marked)

    def read_run(self, repo: Path) -> None:
        """The run's own marks: the earliest event of each type, meta.json's `started_at`."""
        iterations = repo / ".runner" / "iterations"
        for events in iterations.glob("*/events.jsonl"):
            for line in events.read_text(encoding="utf-8").splitlines():
                event = json.loads(line)
                if event.get("iter") is not None and event["type"] in MARKS:
                    at = self.at[event["iter"]]
                    moment = _seconds(event["at"])
                    at[event["type"]] = min(moment, at.get(event["type"], moment))
        for meta_path in iterations.glob("*/*/meta.json"):
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            self.at[meta["iter"]]["scheduled"] = _seconds(meta["started_at"])

    def lines(self) -> list[str]:
        lines = [f"{'phase':<40} {'median':>8} {'total':>8} {'jobs':>5}"]
        for start, end in itertools.pairwise(MARKS):
            spans = [at[end] - at[start] for at in self.at.values() if {start, end} <= at.keys()]
            if spans:
                phase = f"{start} -> {end}"
                median, total = statistics.median(spans), sum(spans)
                lines.append(f"{phase:<40} {median:>7.3f}s {total:>7.2f}s {len(spans):>5}")
        return lines


def _seconds(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leaves", type=int, default=parallel.LEAVES)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sleep", type=float, default=parallel.SLEEP_SECS)
    args = parser.parse_args(argv)
    importlib.import_module("temporalio")
    marks = Marks()
    for module_name, name, end, start, iteration_of in TIMED:
        marks.wrap(module_name, name, end, start, iteration_of)
    text = bench.step_tree(args.leaves)
    mode = parallel.sandbox_mode("temporal", print)
    executor = (
        '\n[executor]\nkind = "temporal"\naddress = "{}"\ntask_queue = "profile"\nremote = "{}"\n'
        'key_file = "{}"\n'
    )
    with tempfile.TemporaryDirectory() as temporary, temporal_runs.sigterm_unwinds():
        workdir = Path(temporary)
        url = str(workdir / "shared.git")
        bench.run(["git", "init", "--bare", "--quiet", url], workdir)
        key_file = workdir / "job.key"
        new_key_file(key_file)
        with temporal_runs.dev_server(workdir / "temporal-server") as address:
            repo = parallel.loop_repo(
                workdir,
                text,
                args.slots,
                args.sleep,
                mode,
                0,
                name="run",
                extra_config=executor.format(address, url, key_file),
            )
            with temporal_runs.workers(address, "profile", url, args.workers, workdir, key_file):
                wall = parallel_profile.run_loop(repo)
        marks.read_run(repo)
    ideal = parallel.ideal_secs(text, args.slots, args.sleep)
    print("\n".join(marks.lines()))
    on = f"{args.workers} worker{'s' if args.workers > 1 else ''}"
    print(f"wall {wall:.2f} s, ideal {ideal:g} s ({args.slots} slots on {on})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
