"""A guard in a slot under `.git/runner/slots/<n>/` sees its checkout at /checkout: Jest, whose
file map skips every path with a `.git` component, finds the slot's tests there, and the ids
and texts read back from its report are the same whichever slot ran it. What `[sandbox] setup`
made where it saw the checkout at one path is made again to be used at the other.

Jest and jest-junit are the ones `.ci/run` installs (under ~/.cache, outside the clone); a
machine without them skips the Jest test and says why.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner_core.guard.report import TestOutcome, TestReport
from runner_shell.git.repo import open_repo
from runner_shell.guard.baselines import checkout_paths, take_report
from runner_shell.sandbox import SandboxRefused, SandboxStatus, seen_at
from runner_shell.sandbox.processes import run_process
from runner_shell.sandbox.seen_at import CHECKOUT, ITERATION, SANDBOX_HOME
from runner_shell.scratch.sandbox import Sandbox, refuse_seen_places
from runner_shell.scratch.slots import prepare_slot, slot_path
from tests.helpers.git_repos import git, new_repo

JEST_HOME = Path(os.environ.get("RUNNER_TEST_JEST", Path.home() / ".cache" / "runner-test-jest"))
FAILING = (
    "test('truncate custom suffix', () => { expect('he...').toBe('he…'); });\n"
    "test('ok', () => { expect(1).toBe(1); });\n"
)


def test_the_paths_the_sandbox_shows_are_written_in_one_place() -> None:
    """The sandbox binds, the prompt names and a report read back maps the same paths: each is
    spelled only in runner_shell/sandbox/seen_at.py."""
    shell = Path(seen_at.__file__).parent.parent
    for place in (CHECKOUT, ITERATION, SANDBOX_HOME):
        spelled = sorted(
            str(module.relative_to(shell))
            for module in shell.rglob("*.py")
            if f'"{place}"' in module.read_text(encoding="utf-8")
        )
        assert spelled == ["sandbox/seen_at.py"], (place, spelled)


def _jest_in_slot(status: SandboxStatus, repo: Path, number: int) -> TestReport | None:
    jest = JEST_HOME / "node_modules" / ".bin" / "jest"
    slot = repo / ".git" / "runner" / "slots" / str(number)
    (slot / "test").mkdir(parents=True)
    (slot / "package.json").write_text('{"name": "words"}\n', encoding="utf-8")
    (slot / "test" / "words.test.js").write_text(FAILING, encoding="utf-8")
    output = repo / ".git" / "runner" / "runs" / "r" / str(number) / "guard"
    output.mkdir(parents=True)
    report = output / "report.xml"
    line = f'JEST_JUNIT_OUTPUT_FILE="$RUNNER_GUARD_REPORT" {jest} --ci --reporters=jest-junit'
    argv = ["sh", "-c", line]
    box = Sandbox(status, (repo,), repo / ".git" / "runner" / "slots" / f"homes-{number}")
    env = box.guard_env(
        {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RUNNER_GUARD_REPORT": str(report)}
    )
    env["NODE_PATH"] = str(JEST_HOME / "node_modules")  # as `[guard] env` would pass it
    result = run_process(
        argv,
        cwd=slot,
        env=env,
        stdin_path=None,
        timeout_secs=120,
        log_path=output.parent / "guard.log",
        limit_bytes=1_000_000,
        # Jest's own packages, as a checkout's node_modules would hold them.
        confinement=box.confine(argv, slot, output, False, "guard", (JEST_HOME,)),
    )
    assert result.exit_code != 0  # one test fails
    found, problem = take_report(report, checkout_paths(slot, confined=True))
    assert problem is None, (output.parent / "guard.log").read_text(encoding="utf-8")
    return found


def test_jest_finds_the_tests_of_a_slot_under_git_and_each_has_one_id_in_every_slot(
    usable_sandbox: SandboxStatus, tmp_path: Path
) -> None:
    if not (JEST_HOME / "node_modules" / ".bin" / "jest").exists():
        pytest.skip(f"jest is not installed under {JEST_HOME} (.ci/run installs it)")
    repo = tmp_path.resolve() / "repo"

    first = _jest_in_slot(usable_sandbox, repo, 0)
    second = _jest_in_slot(usable_sandbox, repo, 2)

    assert first is not None, "jest found no test in the slot"
    outcomes = first.outcomes()
    assert outcomes["truncate custom suffix::truncate custom suffix"] is TestOutcome.FAILED
    assert outcomes["ok::ok"] is TestOutcome.PASSED
    assert second is not None and second.outcomes() == outcomes
    (failure,) = first.failures
    assert "<checkout>/test/words.test.js" in failure.text
    assert "/checkout/" not in failure.text.replace("<checkout>/", "")
    assert ".git/runner/slots" not in failure.text


def test_a_setup_made_unconfined_is_made_again_for_the_sandbox_and_back(
    usable_sandbox: SandboxStatus, tmp_path: Path
) -> None:
    # What setup made may name where it saw the checkout (a `.venv`'s scripts do).
    root = tmp_path / "repo"
    new_repo(root, ignored="venv/\n")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "files")
    repo = open_repo(root)
    setup = ("sh", "-c", 'mkdir -p venv && echo "$PWD" > venv/made-in')
    box = Sandbox(usable_sandbox, (root.resolve(),), slot_path(repo).parent / "homes")
    head = repo.head_sha()

    def made_in(sandbox: Sandbox | None) -> str:
        slot = prepare_slot(repo, head, setup, sandbox=sandbox)
        return (slot / "venv" / "made-in").read_text(encoding="utf-8").strip()

    assert made_in(None) == str(slot_path(repo))
    assert made_in(box) == "/checkout"
    assert made_in(box) == "/checkout"
    assert made_in(None) == str(slot_path(repo))


def test_a_path_shown_where_the_sandbox_shows_its_own_is_refused_in_one_line() -> None:
    with pytest.raises(SandboxRefused) as refused:
        refuse_seen_places([("[sandbox] read_only entry", Path("/checkout/tools"))])

    assert str(refused.value) == (
        "sandbox: [sandbox] read_only entry /checkout/tools lies under /checkout, where the "
        'sandbox shows its own: move it elsewhere, or set [sandbox] mode = "off" in '
        ".runner/state/config.toml"
    )
    with pytest.raises(SandboxRefused, match="the repository /iteration lies under /iteration"):
        refuse_seen_places([("the repository", Path("/iteration"))])
    refuse_seen_places([("the repository", Path("/checkouts/r")), ("x", Path("/srv/checkout"))])
