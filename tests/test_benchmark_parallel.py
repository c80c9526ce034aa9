"""The benchmark's `parallel` group: its ideal is the frontier's rounds times one job, and the
group runs end to end at a tiny size (benchmarks/README.md). At that size no figure means
anything, so targets are ignored."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.test_benchmark import benchmark_module, run_benchmark


@pytest.fixture(scope="module")
def parallel() -> ModuleType:
    benchmark_module("bench")  # parallel.py imports it as `bench`, as bench.py runs it
    return benchmark_module("parallel")


def open_leaf(node_id: str, order: int) -> dict[str, object]:
    return {
        "id": node_id,
        "order": order,
        "title": node_id,
        "goal": node_id,
        "acceptance": [node_id],
        "next": "execute",
        "passes": False,
        "attempts": 0,
        "max_attempts": 3,
        "children": [],
    }


def parent(node_id: str, order: int, children: list[dict[str, object]]) -> dict[str, object]:
    return {**open_leaf(node_id, order), "next": "decompose", "children": children}


@pytest.mark.parametrize(("slots", "rounds"), [(1, 32), (4, 8), (8, 4), (5, 7), (64, 1)])
def test_a_flat_trees_ideal_is_ceil_leaves_over_slots_jobs(
    parallel: ModuleType, slots: int, rounds: int
) -> None:
    text = parallel.bench.step_tree(32)
    assert parallel.ideal_secs(text, slots, 2.0) == rounds * 2.0


def test_leaves_of_different_subtrees_and_siblings_share_rounds(parallel: ModuleType) -> None:
    """The frontier makes no sibling wait: 5 open leaves under two parents, a passed one
    skipped, take two rounds of three slots."""
    done = {**open_leaf("a.3", 2), "passes": True}
    left = parent("a", 0, [open_leaf("a.1", 0), open_leaf("a.2", 1), done])
    right = parent("b", 1, [open_leaf("b.1", 0), open_leaf("b.2", 1), open_leaf("b.3", 2)])
    text = json.dumps(parent("root", 0, [left, right]), indent=2) + "\n"
    assert parallel.ideal_secs(text, 3, 1.5) == 2 * 1.5
    assert parallel.ideal_secs(text, 1, 1.5) == 5 * 1.5


def test_the_parallel_group_runs_at_a_tiny_size(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    tiny = ["--only", "parallel", "--parallel-leaves", "2", "--parallel-sleep", "0.2"]
    tiny += ["--parallel-slots", "1,2", "--repeat", "1", "--ignore-targets", "--out", str(out)]
    result = run_benchmark("bench.py", tiny, tmp_path)
    assert result.returncode == 0, result.stderr
    rows = json.loads(out.read_text(encoding="utf-8"))["results"]
    metrics = [row["metric"] for row in rows]
    assert [metric.split(": ")[-1] for metric in metrics] == [
        "wall time vs ideal",
        "wall time vs ideal",
        "ideal / wall time",
        "speed-up vs one slot",
        "fraction of ideal speed-up (speed-up / ideal speed-up)",
    ], metrics
    assert [row["floor"] for row in rows] == pytest.approx([0.4, 0.2, 1.0, 2.0, 1.0])
    assert rows[2]["runner"] == pytest.approx(0.2 / rows[1]["runner"])
    assert [row["target"] for row in rows] == ["", "", "", "", ">= 0.85x"]
    speed_up = rows[0]["runner"] / rows[1]["runner"]
    assert rows[3]["runner"] == pytest.approx(speed_up)
    assert rows[4]["runner"] == pytest.approx(speed_up / 2.0)


def test_the_main_thread_profile_runs_at_a_tiny_size(tmp_path: Path) -> None:
    tiny = ["--leaves", "2", "--slots", "2", "--sleep", "0.2"]
    result = run_benchmark("parallel_profile.py", tiny, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "loop and [merge] threads, inclusive" in result.stdout
    assert "[merge] parallel_merges.merge_job" in result.stdout
    assert "ideal / wall time" in result.stdout
