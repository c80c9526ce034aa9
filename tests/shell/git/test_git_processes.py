"""What one `runner step` costs in git processes: the git directory is resolved once.

A `git` wrapper first on PATH logs every git command line of one real step (a no-op agent,
guard `true`); no `rev-parse --git-path` per file, and exactly one commit. The agent's scratch
checkout costs most of them: its reset (reset, clean; and the first time, the init of the
empty `.git` it copies), the listing of what the agent left (ls-tree, one check-ignore, one
hash-object for every changed file) and the commit built from files (one fast-import, the
identity, update-ref, then the work tree brought up to it), then the log archive's fast-import;
docs/performance.md says what is left to fold.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from tests.helpers.e2e import Project, node
from tests.helpers.git_repos import git

MAX_GIT_PROCESSES_PER_STEP = 13

WRAPPER = """#!/bin/sh
printf '%s %s\\n' "$1" "$2" >> "{log}"
exec "{git}" "$@"
"""


def test_a_step_runs_a_bounded_number_of_git_processes(project: Project, tmp_path: Path) -> None:
    done = 'printf \'{"status": "done", "summary": "ok"}\' > "$RUNNER_OUTPUT_PATH"'
    project.prepare(
        node("root", next_="decompose", children=[node("root.1")]),
        guard_command=["true"],
        agent_command=["sh", "-c", done],
    )
    real_git = shutil.which("git")
    assert real_git is not None
    bin_dir = tmp_path / "git-wrapper"
    bin_dir.mkdir()
    log = tmp_path / "git.log"
    wrapper = bin_dir / "git"
    wrapper.write_text(WRAPPER.format(log=log, git=real_git), encoding="utf-8")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    project.env["PATH"] = f"{bin_dir}{os.pathsep}{project.env['PATH']}"

    before = int(git(project.root, "rev-list", "--count", "HEAD"))

    result = project.runner("step")

    assert result.returncode == 0, result.stderr
    assert "status=done guard=pass" in result.stdout
    calls = log.read_text(encoding="utf-8").splitlines()
    assert len(calls) <= MAX_GIT_PROCESSES_PER_STEP, "\n".join(calls)
    assert not [call for call in calls if "--git-path" in call]
    assert int(git(project.root, "rev-list", "--count", "HEAD")) == before + 1
    assert [call.split()[0] for call in calls].count("fast-import") == 2  # commit, archive
