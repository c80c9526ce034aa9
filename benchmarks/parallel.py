"""The `parallel` group of bench.py: `runner loop` on a flat tree whose agent sleeps, with
`[parallel] slots` = 1, 4 and 8, beside the ideal wall time for that tree and that many slots.

The agent does nothing but sleep (after writing one file of its own, so every merge has a file
to bring in), so with N slots the loop could at best finish in the tree's ideal makespan:
the frontier's rounds times the agent's sleep. The target is on the speed-up: one slot's wall
time over this one's, as a fraction of the ideal speed-up (one slot's ideal over this one's):
1 when the slots win all the critical path allows, whatever a step costs anyway. The ideal over
the wall time is shown beside it: that one also counts what every step costs, which a
one-slot run pays as well.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
import bench
import steps

from runner_core import Node, parse_tree
from runner_core.parallel.frontier import frontier

LEAVES = 32
QUICK_LEAVES = 8  # with --quick: one round at 8 slots still, in a quarter of the time
SLEEP_SECS = 2.0
SLOTS = (1, 4, 8)
# The least fraction of the ideal speed-up (one slot's wall time / this one's, over one slot's
# ideal / this one's) a run with more than one slot must reach.
FRACTION_TARGET = 0.85
# Runs per median with more than one slot; one slot is run once (its 64 s are most of the
# group's time, and its figure has no target).
MAX_REPEAT = 3
# A loop taking longer than this past its ideal (times LOOP_SLACK) is stopped and the group
# fails: a stuck run must not hold the benchmark forever.
LOOP_SLACK = 5.0
LOOP_GRACE_SECS = 120.0


@attrs.frozen
class OneSlot:
    """A local run with one slot: its wall time, and its repository (its iterations' files)."""

    wall: float
    repo: Path


# One slot's local run of a tree, by (leaves, sleep): measured once per invocation, by the
# `parallel` group or by the first group after it that needs it (the `temporal` group).
OneSlots = dict[tuple[int, float], OneSlot]


def sleeping_agent(secs: float) -> tuple[str, ...]:
    """A command agent that writes a file named for its node, sleeps, and reports done."""
    script = (
        'printf "%s\\n" "$RUNNER_NODE_ID" > "leaf-$RUNNER_NODE_ID.txt"\n'
        f"sleep {secs:g}\n"
        """printf '{"status": "done", "summary": "slept"}' > "$RUNNER_OUTPUT_PATH"\n"""
    )
    return ("sh", "-c", script)


def frontier_rounds(tree: Node, slots: int) -> int:
    """How many rounds of the frontier the tree's open leaves take with `slots` slots, when
    every job passes at its first attempt and adds no children (the ideal run).

    Jobs that take the same time start and end together, so a round is one filling of the
    free slots by the frontier rule (`runner_core.parallel.frontier`) and the ideal makespan is
    rounds x one job's time. A finished leaf is handed to the rule as running, which it skips
    as it skips a passed one; a stuck leaf ends the walk and, nothing else running, the run.
    """
    done: frozenset[str] = frozenset()
    rounds = 0
    while True:
        leaves = frontier(tree, slots, done).leaves
        if not leaves:
            return rounds
        done |= {leaf.path for leaf in leaves}
        rounds += 1


def ideal_secs(tree_text: str, slots: int, job_secs: float) -> float:
    """The least wall time a run of `tree_text` with `slots` slots can take: its critical path
    under the frontier rule, each job `job_secs` long and the runner free."""
    return frontier_rounds(parse_tree(tree_text), slots) * job_secs


def loop_repo(
    workdir: Path,
    tree_text: str,
    slots: int,
    sleep: float,
    sandbox_mode: str,
    run: int,
    name: str = "parallel",
    extra_config: str = "",
) -> Path:
    """A started run whose agent sleeps and whose config asks for `slots` slots; its
    iteration limit leaves room for every leaf (one slot's rounds are its open leaves)."""
    return bench.make_repo(
        workdir / f"{name}-{slots}-{run}",
        tree_text,
        ["true"],
        sleeping_agent(sleep),
        max_iterations=max(100, 2 * frontier_rounds(parse_tree(tree_text), 1)),
        sandbox_mode=sandbox_mode,
        extra_config=f"\n[parallel]\nslots = {slots}\n{extra_config}",
    )


def loop_deadline(ideal: float) -> float:
    """How long a loop whose ideal is `ideal` seconds may run before it is stopped."""
    return LOOP_SLACK * ideal + LOOP_GRACE_SECS


def timed_loop(repo: Path, timeout_secs: float | None = None) -> float:
    """The wall time of one `runner loop` to the tree's end; the run must have completed it.
    A loop still running after `timeout_secs` is killed and the group fails."""
    started = time.perf_counter()
    try:
        bench.process([*bench.runner_command(), "loop"], repo, timeout_secs=timeout_secs)()
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"`runner loop` in {repo} ran past {timeout_secs:g} s") from None
    elapsed = time.perf_counter() - started
    left = parse_tree((repo / ".runner" / "state" / "tree.json").read_text(encoding="utf-8"))
    if not left.passes:
        raise RuntimeError(f"`runner loop` in {repo} ended before every leaf passed")
    return elapsed


def bench_parallel(
    leaves: int,
    sleep: float,
    slot_counts: Sequence[int],
    repeat: int,
    workdir: Path,
    log: Callable[[str], None],
    one_slots: OneSlots | None = None,
) -> list[bench.Row]:
    """`runner loop` with each slot count beside the ideal; the speed-up against one slot.
    The one-slot run, when measured, is recorded in `one_slots` for the groups after this."""
    mode = sandbox_mode("parallel", log)
    text = bench.step_tree(leaves)
    size = tree_label(leaves, sleep, mode)
    rows: list[bench.Row] = []
    one: tuple[float, float] | None = None  # one slot's wall time and ideal, once measured
    for slots in sorted(slot_counts):
        runs = 1 if slots == 1 else min(repeat, MAX_REPEAT)
        ideal = ideal_secs(text, slots, sleep)
        log(f"parallel: `runner loop`, {size}, slots = {slots}: {runs} run(s), ideal {ideal:g} s")
        repos = [loop_repo(workdir, text, slots, sleep, mode, n) for n in range(runs)]
        times = [timed_loop(repo, loop_deadline(ideal)) for repo in repos]
        measured = (statistics.median(times), tuple(times))
        name = f"`runner loop` ({size}) with slots = {slots}"
        rows += slot_rows(name, slots, measured, ideal, one)
        if slots == 1:
            one = (measured[0], ideal)
            if one_slots is not None:
                one_slots[(leaves, sleep)] = OneSlot(measured[0], repos[0])
    return rows


def sandbox_mode(group: str, log: Callable[[str], None]) -> str:
    """`bwrap` where bubblewrap works here, else `off` (said once)."""
    problem = steps.bwrap_problem()
    if problem is not None:
        log(f"{group}: bubblewrap is not usable here ({problem}); the sandbox is off")
    return "bwrap" if problem is None else "off"


def tree_label(leaves: int, sleep: float, mode: str) -> str:
    return f'{leaves} leaves x {sleep:g} s, sandbox "{mode}"'


def one_slot(
    leaves: int,
    sleep: float,
    mode: str,
    workdir: Path,
    log: Callable[[str], None],
    one_slots: OneSlots,
) -> OneSlot:
    """One slot's local run of the group's tree: the one recorded in this invocation, else
    measured now (once) and recorded."""
    if (leaves, sleep) not in one_slots:
        text = bench.step_tree(leaves)
        ideal = ideal_secs(text, 1, sleep)
        log(f"`runner loop` on this machine, {tree_label(leaves, sleep, mode)}, slots = 1")
        repo = loop_repo(workdir, text, 1, sleep, mode, 0, name="one-slot")
        one_slots[(leaves, sleep)] = OneSlot(timed_loop(repo, loop_deadline(ideal)), repo)
    return one_slots[(leaves, sleep)]


def slot_rows(
    name: str,
    slots: int,
    measured: bench.Timing,
    ideal: float,
    one: tuple[float, float] | None,
    target: float | None = FRACTION_TARGET,
) -> list[bench.Row]:
    """The wall time beside the ideal; with more than one slot, the ideal / the wall time, and
    (one slot measured) the speed-up against one slot beside the ideal speed-up, and its
    fraction of it: the target (None: reported only), what the slots win beyond what a step
    costs anyway."""
    wall = measured[0]
    rows = [
        bench.Row(
            metric=f"{name}: wall time vs ideal",
            size=None,
            runner=wall,
            floor=ideal,
            unit="s",
            target="",
            met=None,
            runner_runs=measured[1],
            note="ideal: the critical path, rounds of the frontier x the agent's sleep",
        )
    ]
    if slots == 1:
        return rows
    rows.append(
        bench.Row(
            metric=f"{name}: ideal / wall time",
            size=None,
            runner=ideal / wall,
            floor=1.0,
            unit="x",
            target="",
            met=None,
            note=f"wall {wall:.1f} s, ideal {ideal:g} s; every step's own cost counts here",
        )
    )
    if one is None:
        return rows
    speed_up, ideal_speed_up = one[0] / wall, one[1] / ideal
    fraction = speed_up / ideal_speed_up
    rows += [
        bench.Row(
            metric=f"{name}: speed-up vs one slot",
            size=None,
            runner=speed_up,
            floor=ideal_speed_up,
            unit="x",
            target="",
            met=None,
            note="floor: the ideal speed-up, one slot's ideal / this one's",
        ),
        bench.Row(
            metric=f"{name}: fraction of ideal speed-up (speed-up / ideal speed-up)",
            size=None,
            runner=fraction,
            floor=1.0,
            unit="x",
            target="" if target is None else f">= {target:g}x",
            met=None if target is None else fraction >= target,
            note=f"speed-up {speed_up:.2f}x of an ideal {ideal_speed_up:g}x",
        ),
    ]
    return rows
