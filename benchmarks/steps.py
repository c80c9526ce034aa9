"""The `step` group of bench.py: a no-op `runner step` with and without the sandbox beside one
shell floor, the git processes a step spawns, and the agent's scratch checkout being reset.

Since the agent works in a scratch checkout (`<git-dir>/runner/slots/0`) and the runner imports
what it left as files, the floor does the same work in sh: reset a checkout sharing the run's
objects to HEAD, run the agent and `true` in it, list what the agent changed there and copy it
back, append one record, `git add -A` and commit. A step's own git commands cannot be replayed
into another repository (they name its object ids), so the floor is this script, not a trace.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path

import bench

from runner_shell.git.repo import open_repo
from runner_shell.sandbox import probe
from runner_shell.scratch.slots import prepare_slot

STEP_TARGET = 6.0
LOOP_TARGET = 3.0  # an iteration of a long loop pays no interpreter start-up
# Steps one `runner loop` takes per timed run of the loop row (its start-up spread over them).
LOOP_STEPS = 20
GIT_PROCESS_TARGET = 6
# The repository a slot reset is measured on: files of FILE_BYTES in directories of 100.
SLOT_FILES = 5_000
SLOT_FILE_BYTES = 4_096
SLOT_RESET_TARGET = 2.0  # vs `git reset --hard` + `git clean` of an ordinary clone
SLOT_RATE_TARGET = 1.0  # resets per second at that size
# Files the agent touches between two resets: tracked ones edited, new ones left untracked.
SLOT_EDITS = 20

STEP_FLOOR_SCRIPT = """set -e
export GIT_AUTHOR_NAME=runner GIT_COMMITTER_NAME=runner
export GIT_AUTHOR_EMAIL=runner@localhost GIT_COMMITTER_EMAIL=runner@localhost
repo=$(pwd)
base=$(git rev-parse HEAD)
git -C {slot} reset --quiet --hard "$base"
git -C {slot} clean -ffdq
cd {slot}
RUNNER_OUTPUT_PATH={output} {agent}
true
git ls-files -z --modified --others --exclude-standard | xargs -0r cp --parents -t "$repo"
cd "$repo"
date +%s%N >> floor-counter.txt
git add -A
git commit --quiet -m step
"""


def step_floor(workdir: Path, name: str, leaves: int) -> tuple[Path, Path]:
    """A run's repository, the checkout its floor works in (sharing its objects) and the
    script: the floor's whole work, run from the repository."""
    repo = bench.make_repo(workdir / name, bench.step_tree(leaves), ["true"])
    slot = workdir / f"{name}-slot"
    bench.run(["git", "clone", "--quiet", "--shared", str(repo), str(slot)], workdir)
    script = workdir / f"{name}.sh"
    script.write_text(
        STEP_FLOOR_SCRIPT.format(
            slot=shlex.quote(str(slot)),
            output=shlex.quote(str(workdir / f"{name}-output.json")),
            agent=shlex.join(bench.NOOP_AGENT),
        ),
        encoding="utf-8",
    )
    return repo, script


def bwrap_problem() -> str | None:
    """Why bubblewrap cannot confine the agent here, or None when it can."""
    return probe().problem


def bench_step(repeat: int, workdir: Path, log: Callable[[str], None]) -> list[bench.Row]:
    """A no-op step sandboxed and unsandboxed, each beside the same kind of floor."""
    leaves = 2 * repeat + 8
    floor_repo, script = step_floor(workdir, "step-floor", 4 * repeat + 8)
    floor = bench.process(["sh", str(script)], floor_repo)
    rows: list[bench.Row] = []
    problem = bwrap_problem()
    for mode in ("bwrap", "off"):
        if mode == "bwrap" and problem is not None:
            log(f"step: bubblewrap is not usable here ({problem}); the sandboxed row is skipped")
            continue
        log(f'step: a no-op step with [sandbox] mode = "{mode}" beside the sh floor')
        repo = bench.make_repo(
            workdir / f"step-{mode}", bench.step_tree(leaves), ["true"], sandbox_mode=mode
        )
        measured, floor_time = bench.paired_processes(
            bench.process([*bench.runner_command(), "step"], repo), floor, repeat
        )
        rows.append(
            bench.ratio_row(
                f'`runner step` (no-op agent, guard true, sandbox "{mode}") vs sh floor',
                None,
                measured,
                floor_time,
                STEP_TARGET,
                note="floor: reset a shared clone, agent, true, import changed files, commit",
            )
        )
        if mode == "off":
            rows.append(git_process_row(repo, floor_repo, script, workdir, log))
    mode = "off" if problem is not None else "bwrap"
    rows.append(loop_iteration_row(mode, floor, repeat, workdir, log))
    return rows


def loop_iteration_row(
    mode: str, floor: Callable[[], None], repeat: int, workdir: Path, log: Callable[[str], None]
) -> bench.Row:
    """One iteration of `runner loop` (LOOP_STEPS no-op steps in one process, the loop's
    start-up spread over them) beside one run of the step floor: what each iteration of a
    long unattended run costs, where the step row also pays the interpreter and its imports."""
    log(f'step: {LOOP_STEPS} iterations of one `runner loop` with [sandbox] mode = "{mode}"')
    leaves = LOOP_STEPS * (repeat + 1)
    repo = bench.make_repo(
        workdir / f"loop-{mode}",
        bench.step_tree(leaves),
        ["true"],
        max_iterations=leaves + 1,
        sandbox_mode=mode,
    )
    loop = bench.process(
        [*bench.runner_command(), "loop", "--max-steps", str(LOOP_STEPS), "--quiet"], repo
    )

    def floors() -> None:
        for _ in range(LOOP_STEPS):
            floor()

    measured, floor_time = bench.paired_processes(loop, floors, repeat)
    return bench.ratio_row(
        f'`runner loop`, per iteration (no-op agent, guard true, sandbox "{mode}") vs sh floor',
        None,
        _per_step(measured),
        _per_step(floor_time),
        LOOP_TARGET,
        note=f"{LOOP_STEPS} steps of one loop vs the step floor {LOOP_STEPS} times",
    )


def _per_step(timing: bench.Timing) -> bench.Timing:
    median, runs = timing
    return median / LOOP_STEPS, tuple(run / LOOP_STEPS for run in runs)


def git_processes(argv: list[str], cwd: Path, trace_dir: Path) -> int:
    """How many git processes `argv` started, git's own children included (git's trace2
    events: every git process, however started, writes one `start` event)."""
    trace = trace_dir / f"trace2-{len(list(trace_dir.iterdir()))}.json"
    env = {**bench.PROCESS_ENV, "GIT_TRACE2_EVENT": str(trace)}
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} exited {result.returncode}: {result.stderr!r}")
    events = trace.read_text(encoding="utf-8").splitlines() if trace.exists() else []
    return sum(json.loads(line).get("event") == "start" for line in events)


def git_process_row(
    repo: Path, floor_repo: Path, script: Path, workdir: Path, log: Callable[[str], None]
) -> bench.Row:
    """One more step of `repo` and of the floor, their git processes counted."""
    log("step: counting the git processes of one step")
    trace_dir = workdir / "step-git-trace"
    trace_dir.mkdir()
    ours = git_processes([*bench.runner_command(), "step"], repo, trace_dir)
    theirs = git_processes(["sh", str(script)], floor_repo, trace_dir)
    return bench.Row(
        metric="git processes per no-op `runner step`, git's children included",
        size=None,
        runner=ours,
        floor=theirs,
        unit="count",
        target=f"<= {GIT_PROCESS_TARGET}",
        met=ours <= GIT_PROCESS_TARGET,
        note="floor: the sh floor's git processes; counted from GIT_TRACE2_EVENT",
    )


# ---------------------------------------------------------------- slot reset


def make_files_repo(directory: Path, files: int, file_bytes: int) -> None:
    """A committed repository of `files` files of `file_bytes` each, 100 to a directory."""
    directory.mkdir(parents=True)
    bench.run(["git", "init", "--quiet", "--initial-branch=main"], directory)
    line = b"0123456789abcdef" * 4 + b"\n"
    body = (line * (file_bytes // len(line) + 1))[:file_bytes]
    for number in range(files):
        path = directory / f"d{number // 100:04d}" / f"f{number:06d}.txt"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(f"{number}\n".encode() + body)
    (directory / ".gitignore").write_text(".venv/\n", encoding="utf-8")
    bench.run(["git", *bench.GIT_IDENTITY, "add", "-A"], directory)
    bench.run(["git", *bench.GIT_IDENTITY, "commit", "--quiet", "-m", "files"], directory)


def agent_edits(checkout: Path, files: int) -> None:
    """What an agent leaves: SLOT_EDITS tracked files edited and as many new files."""
    step = max(files // SLOT_EDITS, 1)
    for number in range(0, min(files, step * SLOT_EDITS), step):
        path = checkout / f"d{number // 100:04d}" / f"f{number:06d}.txt"
        path.write_bytes(b"edited by the agent\n")
        (path.parent / f"new-{number}.txt").write_bytes(b"new\n")


def bench_slot_reset(
    files: int, file_bytes: int, repeat: int, workdir: Path, log: Callable[[str], None]
) -> list[bench.Row]:
    """The reset of a step's scratch checkout beside git's own reset of an ordinary clone."""
    megabytes = files * file_bytes / 1e6
    log(f"slot: resetting a scratch checkout of {files} files, {megabytes:.0f} MB")
    source = workdir / "slot-repo"
    make_files_repo(source, files, file_bytes)
    repo = open_repo(source)
    base = repo.head_sha()
    # Made once, as the first step of a run does; what `[sandbox] setup` installed is what a
    # reset keeps (every other ignored file is reset: docs/sandbox.md).
    setup = ("sh", "-c", "mkdir -p .venv && echo installed > .venv/kept")
    slot = prepare_slot(repo, base, setup)
    clone = workdir / "slot-clone"
    bench.run(["git", "clone", "--quiet", "--shared", str(source), str(clone)], workdir)
    (clone / ".venv").mkdir()  # the floor's ignored files, which `git clean -ffd` keeps
    (clone / ".venv" / "kept").write_text("installed\n", encoding="utf-8")

    def reset_slot() -> None:
        agent_edits(slot, files)
        prepare_slot(repo, base, setup)

    def reset_clone() -> None:
        agent_edits(clone, files)
        bench.run(["git", "reset", "--quiet", "--hard", base], clone)
        bench.run(["git", "clean", "-ffdq"], clone)

    reset_slot()  # warm the page cache for both
    reset_clone()
    measured, floor = bench.paired_times(reset_slot, reset_clone, repeat)
    assert (slot / ".venv" / "kept").is_file(), "a slot reset lost what setup made"
    size = f"{files} files, {megabytes:.0f} MB"
    rate = 1 / measured[0]
    return [
        bench.ratio_row(
            f"slot reset ({size}) vs git reset --hard + clean of a clone",
            None,
            measured,
            floor,
            SLOT_RESET_TARGET,
            note=f"the agent edited {SLOT_EDITS} files and added as many before each reset",
        ),
        bench.Row(
            metric=f"slot resets per second ({size})",
            size=None,
            runner=rate,
            floor=1 / floor[0],
            unit="/s",
            target=f">= {SLOT_RATE_TARGET:g}/s",
            met=rate >= SLOT_RATE_TARGET,
            note=f"{rate * megabytes:.0f} MB of checkout reset per second; floor: the clone's",
        ),
    ]
