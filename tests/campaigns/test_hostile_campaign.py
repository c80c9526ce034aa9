"""A seeded hostile-agent campaign: hostile behaviours and kills, checked each time.

One run over a flat tree of many leaves is driven by `runner step`; before each step a seeded
random.Random picks what the agent does (the hostile things of tests/test_contained_agent.py,
or plain work) or whether the runner is killed (SIGKILL) while the agent runs, then recovered.
After every iteration: nothing was written in a sentinel directory outside the repository, no
step outlived the iteration timeout plus a grace, a bystander process in its own group is
alive, every earlier iteration commit is still an ancestor of HEAD, no attempt was consumed by
a kill; `git fsck` is clean every 10 iterations and at the end, and every iteration is logged.

CI runs until RUNNER_HOSTILE_ITERATIONS=60 iterations are committed (about a minute or two);
set it to 200 or more for a full run, RUNNER_HOSTILE_SEED to replay another mix. Marked
`hostile`: `-m hostile` runs it alone, `-m "not hostile"` leaves it out.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers.crash import cli, spawn, wait_for_processes
from tests.helpers.e2e import Project, node

pytestmark = pytest.mark.hostile

SEED = int(os.environ.get("RUNNER_HOSTILE_SEED", "10"))
ITERATIONS = int(os.environ.get("RUNNER_HOSTILE_ITERATIONS", "60"))
TIMEOUT_SECS = 10
GRACE_SECS = 20

AGENT = r"""
cat > /dev/null
. "$RUNNER_TEST_HARNESS/next.sh"
printf '{"status": "done", "summary": "ok"}' > "$RUNNER_OUTPUT_PATH.tmp"
mv "$RUNNER_OUTPUT_PATH.tmp" "$RUNNER_OUTPUT_PATH" 2>/dev/null || true
"""

RUN_DIR = '"$(dirname "$RUNNER_ITER_DIR")"'
RAISE_MAX_ATTEMPTS = (
    "python3 -c \"import json,pathlib; p=pathlib.Path('.runner/state/tree.json'); "
    "t=json.loads(p.read_text()); [c.__setitem__('max_attempts', 99) for c in t['children']]; "
    'p.write_text(json.dumps(t))"'
)
# What the agent does, by name; {outside} is the sentinel directory.
BEHAVIOURS = {
    "work": 'echo "$RUNNER_ITER" > "work-$RUNNER_ITER.txt"',
    "lock-symlink": "ln -sf {outside}/precious.txt .git/runner.lock",
    "journal-symlink": "ln -sf {outside}/precious.txt .git/runner-journal.json",
    "fifo-config": "rm .runner/state/config.toml && mkfifo .runner/state/config.toml",
    "fifo-tree": "rm .runner/state/tree.json && mkfifo .runner/state/tree.json",
    "hook": "mkdir -p .git/hooks && printf '#!/bin/sh\\nsleep 60\\n' > .git/hooks/post-commit"
    " && chmod +x .git/hooks/post-commit",
    "filter": "printf '* filter=slow\\n' > .gitattributes && "
    "git config filter.slow.clean 'sleep 60; cat' && git config filter.slow.required true",
    "weird-entry": f"mkdir -p {RUN_DIR}/² && touch {RUN_DIR}/stray",
    "dangling-next": f"ln -sfn /nonexistent/place {RUN_DIR}/$((RUNNER_ITER + 1))",
    "iter-dir-symlink": 'printf \'{{"status": "done", "summary": "ok"}}\' > "$RUNNER_OUTPUT_PATH"'
    ' && rm -rf "$RUNNER_ITER_DIR" && ln -s {outside} "$RUNNER_ITER_DIR" && exit 0',
    "context-symlink": "rm -rf .runner/context && ln -s {outside} .runner/context",
    "max-attempts": RAISE_MAX_ATTEMPTS,
    "reset-hard": "git reset -q --hard HEAD~1",
    "checkout-b": 'git checkout -q -b "other-$RUNNER_ITER"',
    "detach": "git checkout -q --detach",
    "kill": 'sleep 5; echo "$RUNNER_ITER" > "work-$RUNNER_ITER.txt"',
}


def pick(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return "work"
    return rng.choice(sorted(BEHAVIOURS))


class Campaign:
    def __init__(self, project: Project, outside: Path) -> None:
        self.project = project
        self.outside = outside
        self.commits: set[str] = set()
        self.counts: Counter[str] = Counter()

    def attempts(self) -> dict[str, int]:
        return {child["id"]: child["attempts"] for child in self.project.tree()["children"]}

    def step(self, behaviour: str) -> None:
        script = BEHAVIOURS[behaviour].format(outside=self.outside)
        (self.project.harness / "next.sh").write_text(script + "\n", encoding="utf-8")
        if behaviour == "kill":
            self.killed_step()
            return
        try:
            result = cli(self.project, "step", timeout=TIMEOUT_SECS + GRACE_SECS)
        except subprocess.TimeoutExpired:
            pytest.fail(f"a step with agent behaviour {behaviour!r} hung")
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr, (
            behaviour,
            result.stderr,
        )
        if result.returncode != 0:
            self.counts["refused"] += 1
            self.user_fixes(behaviour)

    def killed_step(self) -> None:
        before = self.attempts()
        runner = spawn(self.project, "step")
        wait_for_processes(self.project, 1)
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        recovered = cli(self.project, "recover", timeout=TIMEOUT_SECS + GRACE_SECS)
        assert recovered.returncode == 0, recovered.stderr
        assert self.attempts() == before, "a kill consumed an attempt"
        self.counts["kills"] += 1

    def user_fixes(self, behaviour: str) -> None:
        """What the one-line refusal tells a user to do, done."""
        lock = self.project.root / ".git/runner.lock"
        if lock.is_symlink():
            lock.unlink()
        recovered = cli(self.project, "recover", timeout=TIMEOUT_SECS + GRACE_SECS)
        assert recovered.returncode == 0, (behaviour, recovered.stderr)

    def check(self) -> None:
        entries = sorted(path.name for path in self.outside.iterdir())
        assert entries == ["precious.txt"], entries
        assert (self.outside / "precious.txt").read_text() == "keep me\n"
        history = set(self.project.git("rev-list", "HEAD").split())
        assert self.commits <= history, "an earlier iteration commit left the branch"
        self.commits = history

    def fsck(self) -> None:
        result = subprocess.run(
            ["git", "fsck", "--no-progress"],
            cwd=self.project.root,
            env=self.project.env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stderr


def test_a_hostile_agent_campaign_mixed_with_kills(project: Project, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me\n", encoding="utf-8")
    leaves = [node(f"leaf{n}", order=n, max_attempts=50) for n in range(ITERATIONS + 5)]
    project.prepare(
        node("root", next_="decompose", children=leaves),
        agent_command=["sh", "-c", AGENT],
        guard_command=["true"],
        iteration_timeout_secs=TIMEOUT_SECS,
        max_iterations=10 * ITERATIONS,
    )
    bystander = subprocess.Popen(["sleep", "3600"], start_new_session=True)
    campaign = Campaign(project, outside)
    rng = random.Random(SEED)
    try:
        for count in range(1, 2 * ITERATIONS + 1):
            if project.run_state()["next_iter"] > ITERATIONS:
                break
            behaviour = pick(rng)
            campaign.counts[behaviour] += 1
            campaign.step(behaviour)
            campaign.check()
            assert bystander.poll() is None, "an unrelated process was signalled"
            if count % 10 == 0:
                campaign.fsck()
    finally:
        bystander.kill()
        bystander.wait()
    campaign.fsck()
    next_iter = project.run_state()["next_iter"]
    logged = [n for n in range(1, next_iter) if (project.iter_dir(n) / "meta.json").is_file()]
    assert logged == list(range(1, next_iter))
    print(f"hostile campaign seed={SEED}: {next_iter - 1} iterations", json.dumps(campaign.counts))
