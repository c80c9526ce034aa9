"""What the hostile campaign checks after every step: the witness of one run.

It remembers what must not change (the sentinel directory outside, the runner-owned files of
the run as the campaign set them up, the commits and log archive so far) and checks each step
against it; see tests/campaigns/test_hostile_campaign.py for the list. The two checks that read
the whole run (`git fsck`, `runner audit`) cost more with every iteration, so they run every few
steps (`cumulative`): what they would find stays there to be found, since every step checks
that the earlier commits and the log archive are kept, and a finding names the step whose
commit it is.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from runner_core.changes.import_rules import NOTES_FILES, is_git_name
from tests.helpers.crash import cli
from tests.helpers.e2e import Project

# What an iteration commit may change under `.runner/`: the runner writes the tree and the
# run's state; the agent may only append to the notes files.
RUNNER_WRITES = (".runner/state/tree.json", ".runner/state/run_state.json")
# How long the processes of a session's namespace may take to be gone once the step ended.
REAPED_WITHIN_SECS = 5
ESCAPED = "PWNED-outside"


class Witness:
    def __init__(self, project: Project, outside: Path, marker: str) -> None:
        self.project = project
        self.outside = outside
        self.marker = marker.encode()
        self.sentinel = files_of(outside)
        self.head = project.git("rev-parse", "HEAD").strip()
        self.before_campaign = set(project.git("rev-list", "HEAD").split())
        self.archive_ref = f"refs/runner/logs/{project.run_id}"
        self.archive: str | None = None
        self.made_by: dict[str, str] = {}  # an iteration commit's 8 digits: the step's label

    def check(self, label: str) -> None:
        assert files_of(self.outside) == self.sentinel, f"{label}: the sentinel changed"
        self.nothing_escaped_into_the_run(label)
        self.no_process_survives(label)
        self.commits_hold_only_imports(label)
        self.archive_only_grows(label)
        self.tree_holds_only_guard_passes(label)

    def cumulative(self) -> None:
        """The checks over the whole run so far."""
        self.fsck()
        self.audit_finds_nothing()

    def nothing_escaped_into_the_run(self, label: str) -> None:
        for directory, dirnames, filenames in os.walk(self.project.root):
            if Path(directory) == self.project.root / ".git":
                dirnames[:] = [name for name in dirnames if name != "runner"]  # slots, homes
            assert ESCAPED not in filenames, f"{label}: the agent wrote into {directory}"

    def no_process_survives(self, label: str) -> None:
        give_up_at = time.monotonic() + REAPED_WITHIN_SECS
        alive = marked_processes(self.marker)
        while alive and time.monotonic() < give_up_at:
            time.sleep(0.1)
            alive = marked_processes(self.marker)
        assert not alive, f"{label}: processes the agent started outlived its session: {alive}"

    def commits_hold_only_imports(self, label: str) -> None:
        head = self.project.git("rev-parse", "HEAD").strip()
        ancestor = subprocess.run(
            ["git", "merge-base", "--is-ancestor", self.head, head], cwd=self.project.root
        )
        assert ancestor.returncode == 0, f"{label}: an earlier commit left the branch"
        for commit in self.project.git("rev-list", f"{self.head}..{head}").split():
            subject = self.project.git("log", "-1", "--format=%s", commit)
            assert "\n" not in subject.strip(), (label, subject)
            if subject.startswith("chore(loop):"):
                self.made_by[commit[:8]] = label
                self.iteration_commit(label, commit)
        self.head = head

    def iteration_commit(self, label: str, commit: str) -> None:
        message = self.project.git("log", "-1", "--format=%B", commit)
        assert "forged" not in message, (label, message)
        args = ["diff-tree", "--no-commit-id", "--name-only", "-r", "-z", f"{commit}^", commit]
        listed = subprocess.run(["git", *args], cwd=self.project.root, capture_output=True)
        changed = os.fsdecode(listed.stdout).split("\0")  # any bytes the agent named a file
        for path in filter(None, changed):
            assert not any(is_git_name(part) for part in path.split("/")), (label, path)
            if path in NOTES_FILES:
                before = self.blob(f"{commit}^", path)
                after = self.blob(commit, path)
                assert after is not None and after.startswith(before or b""), (label, path)
            elif path.startswith(".runner/"):
                assert path in RUNNER_WRITES, f"{label}: {commit[:8]} changed {path}"

    def blob(self, commit: str, path: str) -> bytes | None:
        result = subprocess.run(
            ["git", "show", f"{commit}:{path}"], cwd=self.project.root, capture_output=True
        )
        return result.stdout if result.returncode == 0 else None

    def archive_only_grows(self, label: str) -> None:
        archive = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", self.archive_ref],
            cwd=self.project.root,
            capture_output=True,
            text=True,
        ).stdout.strip()
        if self.archive is not None:
            assert archive, f"{label}: the log archive is gone"
            kept = subprocess.run(
                ["git", "merge-base", "--is-ancestor", self.archive, archive],
                cwd=self.project.root,
            )
            assert kept.returncode == 0, f"{label}: the log archive started over"
        self.archive = archive or None

    def tree_holds_only_guard_passes(self, label: str) -> None:
        tree = self.project.tree()
        assert not tree["passes"], f"{label}: the run was completed"
        passed = {child["id"] for child in tree["children"] if child["passes"]}
        guarded: set[str] = set()
        for iteration in range(1, self.project.run_state()["next_iter"]):
            meta = self.project.meta(iteration)
            if meta["guard"] == "pass" and meta["error_kind"] is None:
                guarded.add(meta["node_id"])
        assert passed <= guarded, f"{label}: passes no guard gave: {sorted(passed - guarded)}"

    def audit_finds_nothing(self) -> None:
        result = cli(self.project, "audit")
        assert "Traceback" not in result.stderr, result.stderr
        setup = {commit[:8] for commit in self.before_campaign}
        for line in result.stdout.splitlines():
            if line.startswith("audit: finding "):
                commit = line.split("commit=", 1)[1].split()[0]
                assert commit in setup, f"{self.made_by.get(commit, 'a step')}: {line}"

    def saw_no_runner(self, iter_dir: Path, label: str) -> None:
        seen = iter_dir / "seen"
        if seen.is_file():
            assert seen.read_text(errors="replace") == "", f"{label}: the agent saw the runner"

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

    def all_logged(self) -> None:
        next_iter = self.project.run_state()["next_iter"]
        logged = [
            n for n in range(1, next_iter) if (self.project.iter_dir(n) / "meta.json").is_file()
        ]
        assert logged == list(range(1, next_iter))


def files_of(directory: Path) -> dict[str, bytes | None]:
    """Every entry under `directory` by relative path: a file's bytes, None for a directory."""
    found: dict[str, bytes | None] = {}
    for path in sorted(directory.rglob("*")):
        relative = str(path.relative_to(directory))
        found[relative] = None if path.is_dir() and not path.is_symlink() else path.read_bytes()
    return found


def marked_processes(marker: bytes) -> list[str]:
    """The live processes (not zombies) whose argv holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state not in ("Z", "X"):
            shown = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{entry.name}: {shown}")
    return found
