"""The benchmark's `temporal` group runs end to end at a tiny size (benchmarks/README.md): a
development server, `runner worker` processes and `runner loop` with `[executor] kind =
"temporal"`. At that size no figure means anything, so targets are ignored."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.test_benchmark import benchmark_module, run_benchmark

pytestmark = pytest.mark.temporal

SETUPS = ("slots = 4 on 1 worker", "slots = 4 on 2 workers", "slots = 8 on 2 workers")
PER_SETUP = (
    "wall time vs ideal",
    "ideal / wall time",
    "speed-up vs one slot",
    "fraction of ideal speed-up (speed-up / ideal speed-up)",
    "job scheduled to agent started (median)",
)


@pytest.fixture(scope="module")
def temporal_runs() -> ModuleType:
    benchmark_module("bench")  # temporal_runs.py imports it as `bench`, as bench.py runs it
    return benchmark_module("temporal_runs")


def test_the_temporal_group_runs_at_a_tiny_size(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    # The `parallel` group's one-slot run is the one the `temporal` group compares with.
    tiny = ["--only", "parallel,temporal", "--parallel-slots", "1"]
    tiny += ["--parallel-leaves", "4", "--parallel-sleep", "0.2"]
    tiny += ["--repeat", "1", "--ignore-targets", "--out", str(out)]
    result = run_benchmark("bench.py", tiny, tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "`runner loop` on this machine" not in result.stderr  # measured once, by `parallel`
    rows = json.loads(out.read_text(encoding="utf-8"))["results"]
    one_slot, rows = rows[0], rows[1:]
    assert one_slot["metric"].endswith("with slots = 1: wall time vs ideal")
    expected = [f"{setup}: {figure}" for setup in SETUPS for figure in PER_SETUP]
    codec = "a job's request and answer sealed and opened (AES-256-GCM), per job"
    assert [row["metric"].split(" with ")[-1] for row in rows] == [
        *expected,
        codec,
        "slots = 4: two workers vs one",
    ]
    assert rows[-2]["runner"] > 0 and rows[-2]["floor"] > 0  # sealed beside the plain converter
    targets = [row["target"] for row in rows if row["metric"].endswith("ideal speed-up)")]
    assert targets == ["", ">= 0.85x", ">= 0.85x"]
    for setup in range(len(SETUPS)):
        wall, _, speed_up, fraction, latency = rows[setup * 5 : setup * 5 + 5]
        assert wall["floor"] == pytest.approx(0.2)  # one round of the frontier
        assert speed_up["runner"] == pytest.approx(one_slot["runner"] / wall["runner"])
        assert fraction["runner"] == pytest.approx(speed_up["runner"] / 4.0)
        assert 0 < latency["runner"] < wall["runner"]
    assert rows[-1]["runner"] == rows[5]["runner"]
    assert rows[-1]["floor"] == rows[0]["runner"]


def test_a_jobs_start_latency_is_its_agents_start_minus_its_scheduling(
    temporal_runs: ModuleType, tmp_path: Path
) -> None:
    run = tmp_path / ".runner" / "iterations" / "run-1"
    for iteration, started in ((1, "2026-01-02T03:04:05.000Z"), (2, "2026-01-02T03:04:05.500Z")):
        (run / str(iteration)).mkdir(parents=True)
        meta = {"started_at": started}
        (run / str(iteration) / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    events = [
        {
            "type": "iteration_started",
            "run_id": "run-1",
            "iter": 1,
            "at": "2026-01-02T03:04:05.200Z",
        },
        {"type": "agent_started", "run_id": "run-1", "iter": 1, "at": "2026-01-02T03:04:05.250Z"},
        {"type": "agent_started", "run_id": "run-1", "iter": 2, "at": "2026-01-02T03:04:06.500Z"},
        {"type": "agent_started", "run_id": "run-1", "iter": 2, "at": "2026-01-02T03:04:09.000Z"},
    ]
    lines = "".join(json.dumps(event) + "\n" for event in events)
    (run / "events.jsonl").write_text(lines, encoding="utf-8")
    assert temporal_runs.start_latencies(tmp_path) == pytest.approx([0.25, 1.0])


def test_the_remote_job_profile_runs_at_a_tiny_size(tmp_path: Path) -> None:
    tiny = ["--leaves", "2", "--slots", "2", "--workers", "1", "--sleep", "0.2"]
    result = run_benchmark("temporal_profile.py", tiny, tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    phases = [line.split()[:3] for line in result.stdout.splitlines() if " -> " in line]
    # Every phase between two marks, in order, each over both jobs.
    marks = benchmark_module("temporal_profile").MARKS
    assert [phase[0] for phase in phases] == list(marks[:-1])
    assert [phase[2] for phase in phases] == list(marks[1:])
    assert all(line.endswith("2") for line in result.stdout.splitlines() if " -> " in line)
    assert "ideal 0.2 s (2 slots on 1 worker)" in result.stdout
