"""A seeded hostile-agent campaign: every attack of the threat table, done from the sandbox.

One run over a flat tree of many leaves is driven by `runner step` with the sandbox required
(`[sandbox] mode = "bwrap"`). Before each step the campaign picks what the agent does in its
scratch checkout, a variant of a behaviour of tests/campaigns/hostile_behaviours.py, in
shuffled rounds over every variant so that a short run has done each of them; for the
behaviours that need it the runner is killed (SIGKILL) while the agent sleeps, then recovered.

After every step: the sentinel directory outside the repository (which the agent sees, read
only) is byte for byte as it was and nothing the agent wrote landed in the run's repository;
no process the agent started is alive (each carries a marker in its argv; /proc is scanned);
the agent never saw a runner process; every iteration commit changes only what the import
rules take (no `.git` path, runner-owned files as the runner wrote them, the notes files only
grown); the tree holds no pass the guard did not give; earlier commits and the log archive are
still ancestors; and the step ended on its own with no traceback, its failure (if any) one
line: a runner error the loop waits out, or a refusal naming `runner recover`, which the
campaign then runs. Every 10 steps and at the end, `git fsck` passes and `runner audit` finds
nothing in the run's iterations (each reads the whole run, and a finding names the step that
made its commit).

CI runs until RUNNER_HOSTILE_ITERATIONS=60 iterations are committed (about three minutes on
two busy cores; the first round, every variant once, fits in them and the test checks it);
set it to 300 or more for a full run, RUNNER_HOSTILE_SEED to replay another order. Marked
`hostile`: `-m hostile` runs it alone, `-m "not hostile"` leaves it out. Skipped where
bubblewrap does not work, except under CI=true.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from runner_shell.sandbox.status import probe
from tests.campaigns.hostile_behaviours import (
    BEHAVIOURS,
    FORGE_TREE,
    STUBBORN_PROGRAM,
    script_of,
)
from tests.campaigns.hostile_checks import Witness
from tests.helpers.crash import cli, spawn, wait_for_processes
from tests.helpers.e2e import Project, node

BWRAP = probe()
pytestmark = [
    pytest.mark.hostile,
    pytest.mark.skipif(
        BWRAP.bwrap is None and os.environ.get("CI") != "true",
        reason=f"bubblewrap is not usable here: {BWRAP.problem}",
    ),
]

SEED = int(os.environ.get("RUNNER_HOSTILE_SEED", "10"))
CI_ITERATIONS = 60
ITERATIONS = int(os.environ.get("RUNNER_HOSTILE_ITERATIONS", str(CI_ITERATIONS)))
TIMEOUT_SECS = 10
GRACE_SECS = 20

AGENT = r"""
cat > /dev/null
. "$RUNNER_TEST_HARNESS/next.sh"
printf '{"status": "done", "summary": "ok"}' > "$RUNNER_OUTPUT_PATH" 2>/dev/null || true
"""
EVIL = '#!/bin/sh\necho "$@" >> {outside}/evil-ran\nexit 1\n'


def all_variants() -> list[tuple[str, int]]:
    return [(name, n) for name, b in sorted(BEHAVIOURS.items()) for n in range(len(b.variants))]


def picks(rng: random.Random) -> list[tuple[str, int]]:
    """One round: every variant of every behaviour once, plus plain work as often again as
    the other behaviours' average, in a seeded order."""
    round_ = all_variants()
    round_ += [("work", n % 2) for n in range(len(round_) // len(BEHAVIOURS))]
    rng.shuffle(round_)
    return round_


class Campaign:
    def __init__(self, project: Project, witness: Witness, places: dict[str, str]) -> None:
        self.project = project
        self.witness = witness
        self.places = places
        self.counts: Counter[str] = Counter()
        self.variants: set[tuple[str, int]] = set()

    def attempts(self) -> dict[str, int]:
        return {child["id"]: child["attempts"] for child in self.project.tree()["children"]}

    def step(self, name: str, variant: int) -> None:
        iteration = self.project.run_state()["next_iter"]
        script = script_of(name, variant, self.places)
        (self.project.harness / "next.sh").write_text(script + "\n", encoding="utf-8")
        print(f"hostile: iteration {iteration}: {name}[{variant}]")  # shown when a check fails
        if BEHAVIOURS[name].kill:
            self.killed_step(iteration)
            return
        try:
            result = cli(self.project, "step", timeout=TIMEOUT_SECS + GRACE_SECS)
        except subprocess.TimeoutExpired:
            pytest.fail(f"a step with agent behaviour {name}[{variant}] hung")
        what = (name, variant, result.stderr)
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr, what
        if result.returncode != 0:
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1, what
            if "runner recover" in lines[0]:  # the only fix a refusal may ask for: done
                self.counts["refused"] += 1
                self.recover(name)
            else:  # a runner error: the iteration is recorded and the next step goes on
                assert lines[0].startswith("runner: runner error: "), what
                self.counts["runner-errors"] += 1
        self.witness.saw_no_runner(self.project.iter_dir(iteration), name)

    def killed_step(self, iteration: int) -> None:
        before = self.attempts()
        runner = spawn(self.project, "step")
        wait_for_processes(self.project, 1)
        started = self.project.iter_dir(iteration) / "started"
        give_up_at = time.monotonic() + TIMEOUT_SECS
        while not started.exists() and time.monotonic() < give_up_at:
            time.sleep(0.02)
        runner.send_signal(signal.SIGKILL)
        runner.communicate()
        self.recover("killed")
        assert self.attempts() == before, "a kill consumed an attempt"
        self.counts["kills"] += 1

    def recover(self, name: str) -> None:
        recovered = cli(self.project, "recover", timeout=TIMEOUT_SECS + GRACE_SECS)
        assert recovered.returncode == 0, (name, recovered.stderr)
        assert "Traceback" not in recovered.stderr, (name, recovered.stderr)


def harness_programs(project: Project, outside: Path) -> dict[str, str]:
    """The programs the behaviours name, in the harness (read-only inside the sandbox)."""
    evil = project.harness / "evil"
    evil.write_text(EVIL.format(outside=outside), encoding="utf-8")
    evil.chmod(0o755)
    (project.harness / "forge.py").write_text(FORGE_TREE, encoding="utf-8")
    (project.harness / "stubborn.py").write_text(STUBBORN_PROGRAM, encoding="utf-8")
    marker = f"hostile-campaign-{os.getpid()}-{SEED}"
    return {
        "root": str(project.root),
        "outside": str(outside),
        "evil": str(evil),
        "harness": str(project.harness),
        "marker": marker,
    }


def start(project: Project, outside: Path) -> dict[str, str]:
    places = harness_programs(project, outside)
    (project.runner_dir / "state/questions.md").write_text("Why?\n", encoding="utf-8")
    (project.runner_dir / "state/assumptions.md").write_text("Given.\n", encoding="utf-8")
    leaves = [node(f"leaf{n}", order=n, max_attempts=50) for n in range(ITERATIONS + 5)]
    project.prepare(
        node("root", next_="decompose", children=leaves),
        agent_command=["sh", "-c", AGENT, places["marker"]],
        guard_command=["true"],
        iteration_timeout_secs=TIMEOUT_SECS,
        max_iterations=10 * ITERATIONS,
        sandbox={
            "mode": "bwrap",
            "writable": [],
            "read_only": [str(project.harness), str(outside)],
        },
    )
    return places


def test_a_hostile_agent_campaign_from_the_sandbox(project: Project, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "nested").mkdir(parents=True)
    (outside / "precious.txt").write_text("keep me\n", encoding="utf-8")
    (outside / "nested/deeper.txt").write_text("and me\n", encoding="utf-8")
    places = start(project, outside)
    witness = Witness(project, outside, places["marker"])
    campaign = Campaign(project, witness, places)
    bystander = subprocess.Popen(["sleep", "3600"], start_new_session=True)
    rng = random.Random(SEED)
    steps = 0
    try:
        while project.run_state()["next_iter"] <= ITERATIONS:
            for name, variant in picks(rng):
                if project.run_state()["next_iter"] > ITERATIONS:
                    break
                campaign.counts[name] += 1
                campaign.variants.add((name, variant))
                campaign.step(name, variant)
                witness.check(f"{name}[{variant}]")
                assert bystander.poll() is None, "an unrelated process was signalled"
                steps += 1
                if steps % 10 == 0:
                    witness.cumulative()
    finally:
        bystander.kill()
        bystander.wait()
    witness.cumulative()
    witness.all_logged()
    next_iter = project.run_state()["next_iter"]
    print(f"hostile campaign seed={SEED}: {next_iter - 1} iterations", json.dumps(campaign.counts))
    if ITERATIONS >= CI_ITERATIONS:  # the first round, every variant, is done by then
        assert campaign.variants == set(all_variants()), campaign.variants
