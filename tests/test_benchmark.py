"""The benchmark runs, and the figures in the README and docs/performance.md are the ones its
results file gives (benchmarks/README.md): a figure typed by hand fails here."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"


def benchmark_module(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))


def run_benchmark(
    script: str, args: list[str], cwd: Path, timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    """`python benchmarks/<script> <args>` run in `cwd`, its output as text. Past `timeout` it
    is asked to stop (SIGTERM: the benchmark unwinds, stopping the servers and workers it
    started in sessions of their own), killed if it has not within a grace, and the timeout
    raised: nothing it started outlives the test."""
    argv = [sys.executable, str(BENCHMARKS / script), *args]
    with subprocess.Popen(
        argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.terminate()
            try:
                stdout, stderr = process.communicate(timeout=STOP_GRACE_SECS)
            except subprocess.TimeoutExpired:
                process.kill()
                stdout, stderr = process.communicate()
            raise subprocess.TimeoutExpired(argv, timeout or 0, stdout, stderr) from None
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


# How long a benchmark past its timeout has to stop what it started.
STOP_GRACE_SECS = 30


@pytest.fixture(scope="module")
def bench_docs() -> ModuleType:
    return benchmark_module("bench_docs")


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return benchmark_module("bench")


def results_with(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "command": "python benchmarks/bench.py --only step",
        "machine": {
            "commit": "0123456789abcdef",
            "dirty": False,
            "cpus": 2,
            "implementation": "CPython",
            "python": "3.11.7",
            "platform": "Linux",
        },
        "elapsed_s": 12.0,
        "results": rows,
    }


STEP_ROW = {
    "metric": "`runner step` vs sh floor",
    "size": None,
    "runner": 0.5,
    "floor": 0.1,
    "unit": "s",
    "target": "<= 6x",
    "met": True,
    "ratio": 5.0,
    "figure": 5.0,
}


def test_the_documents_figures_are_the_ones_the_committed_results_give(
    bench_docs: ModuleType,
) -> None:
    generated = bench_docs.blocks(bench_docs.load(bench_docs.RESULTS))
    for document in bench_docs.DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        assert bench_docs.BLOCK.search(text), f"{document} has no generated block"
        assert bench_docs.render(text, generated) == text, (
            f"{document.relative_to(ROOT)}: its figures differ from docs/performance.json; "
            "run `python benchmarks/bench.py --docs-from docs/performance.json`"
        )


def test_a_hand_edited_figure_is_put_back_and_the_prose_around_it_kept(
    bench_docs: ModuleType,
) -> None:
    results = results_with([STEP_ROW])
    generated = bench_docs.blocks(results)
    document = "Prose 1.0x.\n<!-- bench:begin summary -->\nstale 1.2x\n<!-- bench:end -->\nMore.\n"
    rendered = bench_docs.render(document, generated)
    assert rendered.startswith("Prose 1.0x.\n<!-- bench:begin summary -->\nMeasured by ")
    assert rendered.endswith("\n<!-- bench:end -->\nMore.\n")
    assert "| `runner step` vs sh floor | -     | 5.00x    | <= 6x  | yes |" in rendered
    assert "stale" not in rendered
    assert bench_docs.render(rendered, generated) == rendered


def test_a_block_the_results_cannot_fill_is_named(bench_docs: ModuleType) -> None:
    generated = bench_docs.blocks(results_with([STEP_ROW]))
    with pytest.raises(bench_docs.DocsError, match=r"README\.md: no generated block named 'nope'"):
        bench_docs.render("<!-- bench:begin nope -->\n<!-- bench:end -->\n", generated, "README.md")


# A row of each default group, by a piece of its metric; the heavy `run` and `big` groups step
# the same way as `step` and would double the check's time.
GROUP_ROWS = {
    "core": "core pipeline vs",
    "schema": "schema validation vs",
    "start": "`runner --version` vs",
    "cli": "`runner select` vs",
    "step": 'sandbox "off") vs sh floor',
    "slot": "slot resets per second",
    "rss": "guard.log size after",
    "proxy": "proxy round trip",
}


def test_the_benchmark_runs_every_group_at_tiny_sizes(tmp_path: Path) -> None:
    """Only that it runs: at these sizes no ratio means anything, so targets are ignored."""
    out = tmp_path / "results.json"
    tiny = ["--sizes", "30", "--repeat", "1", "--slot-files", "20"]
    tiny += ["--guard-output", str(2 * 2**20)]
    tiny += ["--ignore-targets", "--out", str(out)]
    result = run_benchmark("bench.py", [*tiny, "--only", ",".join(GROUP_ROWS)], tmp_path)
    assert result.returncode == 0, result.stderr
    rows = json.loads(out.read_text(encoding="utf-8"))["results"]
    metrics = [row["metric"] for row in rows]
    for group, metric in GROUP_ROWS.items():
        assert any(metric in shown for shown in metrics), f"no row of the {group} group"
    assert any(metric.startswith("`runner loop`, per iteration") for metric in metrics), metrics
    # The rows of every view on the tree, and of serve beside a loop on the long run.
    for view in ("select", "validate", "status"):
        assert f"`runner {view}` vs python json.load" in metrics, metrics
    assert any("during `runner loop`" in metric for metric in metrics), metrics
    step_rows = [
        row for row in rows if row["metric"].startswith(("`runner step` (", "`runner loop`"))
    ]
    assert all(row["target"] for row in step_rows), rows


def test_a_missed_target_fails_the_command(bench: ModuleType) -> None:
    row = bench.Row("a", None, 2.0, 1.0, "s", "<= 1x", met=False)
    met = bench.Row("b", None, 1.0, 1.0, "s", "<= 1x", met=True)
    assert bench.exit_code([met, row], ignore_targets=False) == 1
    assert bench.exit_code([met, row], ignore_targets=True) == 0
    assert bench.exit_code([met], ignore_targets=False) == 0


def test_disk_bytes_count_each_file_once_and_leave_out_what_is_skipped(tmp_path: Path) -> None:
    disk = benchmark_module("disk")
    (tmp_path / ".git" / "objects").mkdir(parents=True)
    (tmp_path / ".git" / "objects" / "blob").write_bytes(b"x" * 1000)
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a").write_bytes(b"y" * 100)
    (tmp_path / "dir" / "b").hardlink_to(tmp_path / "dir" / "a")
    (tmp_path / "link").symlink_to(tmp_path / ".git" / "objects" / "blob")
    (tmp_path / "c").write_bytes(b"z" * 10)
    assert disk.work_tree_bytes(tmp_path) == 110
    assert disk.objects_bytes(tmp_path) == 1000
    assert disk.files_bytes(tmp_path) == 1110
