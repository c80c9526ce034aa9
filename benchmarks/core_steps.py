"""Per-function timings of the core pipeline beside the json floor (the figures of issue 2).

    python benchmarks/core_steps.py [--sizes 1000,10000,100000] [--repeat 5]

Prints, per size, the median milliseconds of parse_tree, invariant_findings, select_leaf,
apply_state_updates (done/pass on the selected leaf) and dumps_tree on a canonical tree from
bench.py's seeded generator, beside json.dumps(json.loads(text), indent=2) of the same text.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench

import runner_core as rc
from runner_core.validation.invariants import invariant_findings

STEPS = ("parse_tree", "invariant_findings", "select_leaf", "apply_state_updates", "dumps_tree")


def measure(text: str) -> dict[str, float]:
    marks = [time.perf_counter()]
    tree = rc.parse_tree(text)
    marks.append(time.perf_counter())
    invariant_findings(tree)
    marks.append(time.perf_counter())
    selection = rc.select_leaf(tree)
    marks.append(time.perf_counter())
    assert selection.node is not None
    updated, _ = rc.apply_state_updates(
        tree, tree, selection.node.id, rc.AgentStatus.DONE, rc.GuardOutcome.PASS
    )
    marks.append(time.perf_counter())
    rc.dumps_tree(updated)
    marks.append(time.perf_counter())
    floor_start = time.perf_counter()
    json.dumps(json.loads(text), indent=2)
    floor = time.perf_counter() - floor_start
    timings = {name: (marks[i + 1] - marks[i]) * 1000 for i, name in enumerate(STEPS)}
    timings["total"] = (marks[-1] - marks[0]) * 1000
    timings["json floor"] = floor * 1000
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for size in (int(part) for part in args.sizes.split(",")):
        text = rc.dumps_tree(rc.tree_from_json(bench.generate_tree(size)))
        runs = [measure(text) for _ in range(args.repeat)]
        median = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        figures = ", ".join(f"{key} {value:.1f} ms" for key, value in median.items())
        ratio = median["total"] / median["json floor"]
        print(f"{size:>7} nodes ({len(text) / 2**20:.1f} MiB): {figures} -> {ratio:.2f}x floor")


if __name__ == "__main__":
    main()
