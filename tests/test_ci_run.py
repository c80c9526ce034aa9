"""What `.ci/run` relies on to split the suite: which process starts a loop (the four-slot pass
runs the e2e tests that started one), the `serial` marker on what cannot share the machine,
and the timing summary it prints last."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import RUNNER_PACKAGES, loop_test_id, sets_its_own_slots, starts_a_loop

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "args",
    [
        [sys.executable, "-m", "runner_shell", "loop"],
        [sys.executable, "-m", "runner_shell", "loop", "--max-steps", "3"],
        ["runner", "loop", "-q"],
        "runner loop --max-steps 5",
        ["sh", "-c", "cd repo && runner loop"],
        ["tmux", "new-session", "-d", "python -m runner_shell loop; sleep 9"],
    ],
)
def test_a_loop_process_is_noticed(args: object) -> None:
    assert starts_a_loop(args)


@pytest.mark.parametrize(
    "args",
    [
        [sys.executable, "-m", "runner_shell", "step"],
        ["git", "commit", "-m", "a loop"],
        ["runner", "status"],
        "python -m runner_shell serve --port 0",
    ],
)
def test_other_processes_are_not_loops(args: object) -> None:
    assert not starts_a_loop(args)


def test_a_loop_a_fixture_started_puts_its_whole_module_in_the_four_slot_pass() -> None:
    assert (
        loop_test_id("tests/e2e/test_a.py::test_b[x y] (call)")
        == "tests/e2e/test_a.py::test_b[x y]"
    )
    assert loop_test_id("tests/e2e/test_a.py::test_b (setup)") == "tests/e2e/test_a.py"
    assert loop_test_id("tests/e2e/test_a.py::T::test_b (teardown)") == "tests/e2e/test_a.py"


@pytest.mark.parametrize(
    ("config", "own_slots"),
    [
        ("[loop]\nmax_iterations = 3\n\n[parallel]\nslots = 2\n", True),
        ("[parallel]\nslots = 1\n", True),
        ('[loop]\nmax_iterations = 3\n\n[agent]\nbackend = "command"\n', False),
        ('# [parallel]\n[loop]\nnote = "[parallel]"\n', False),
        (None, False),
    ],
)
def test_a_loop_whose_config_names_its_slots_is_left_out_of_the_four_slot_pass(
    tmp_path: Path, config: str | None, own_slots: bool
) -> None:
    """RUNNER_TEST_SLOTS fills in `[parallel]` only where a config has none: a loop on a config
    with the table runs the same in both passes. No config where the loop starts: counted."""
    if config is not None:
        (tmp_path / ".runner" / "state").mkdir(parents=True)
        (tmp_path / ".runner" / "state" / "config.toml").write_text(config, encoding="utf-8")
    assert sets_its_own_slots(tmp_path) is own_slots


def test_the_tests_that_cannot_share_the_machine_are_serial() -> None:
    from tests.campaigns.conftest import SERIAL_CAMPAIGNS
    from tests.e2e.test_parallel_loop import test_four_leaves_run_at_once_and_merge_in_order

    assert set(SERIAL_CAMPAIGNS) == {"test_hostile_campaign.py", "test_serve_load.py"}
    assert all((ROOT / "tests" / "campaigns" / name).is_file() for name in SERIAL_CAMPAIGNS)
    marks = test_four_leaves_run_at_once_and_merge_in_order.pytestmark  # type: ignore[attr-defined]
    assert "serial" in {mark.name for mark in marks}


def test_the_timing_summary_gives_each_pass_and_the_ten_slowest(tmp_path: Path) -> None:
    cases = "".join(
        f'<testcase classname="tests.t" name="test_{n}" time="{n}.5"/>' for n in range(12)
    )
    junit = tmp_path / "suite.xml"
    junit.write_text(f"<testsuites><testsuite>{cases}</testsuite></testsuites>", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "timings.py"), "754", f"suite=600:{junit}"],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = result.stdout.splitlines()
    assert "  suite: 600 s wall, 12 tests" in lines
    assert "  .ci/run as a whole (installs, lint, types, tests): 12 min 34 s" in lines
    slowest = lines[lines.index("the 10 slowest tests:") + 1 :]
    assert len(slowest) == 10
    assert slowest[0].split() == ["11.50", "s", "suite", "tests.t::test_11"]
    assert slowest[-1].split()[0] == "2.50"


def test_where_no_process_writes_bytecode_the_suite_wrote_it_first() -> None:
    """tests/conftest.py: under PYTHONDONTWRITEBYTECODE every `runner` process the suite starts
    reads the bytecode of runner's modules instead of compiling them again."""
    if not sys.dont_write_bytecode:
        pytest.skip("PYTHONDONTWRITEBYTECODE is not set: each process writes what it compiles")
    sources = [path for package in RUNNER_PACKAGES for path in (ROOT / package).rglob("*.py")]
    caches = {path: Path(importlib.util.cache_from_source(str(path))) for path in sources}
    stale = [
        path
        for path, cache in caches.items()
        if not cache.is_file() or cache.stat().st_mtime < path.stat().st_mtime
    ]
    assert not stale, stale[:5]
