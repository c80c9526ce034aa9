"""Files the agent grows under archived names in its iteration directory (writable from the
sandbox) cost the step the memory of one of them, never of all: the log archive reads and
hands them to git one at a time."""

from __future__ import annotations

import subprocess

from tests.helpers.e2e import PYTHON, Project, node

TWO_LEAVES = node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)])
WRITE_DONE = 'printf \'{"status": "done", "summary": "ok"}\' > "$RUNNER_OUTPUT_PATH"'
FILES = 10
FILE_MIB = 64
# The step under a parent that reports the largest resident size of its descendants, in KiB.
MEASURED = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], check=False, capture_output=True)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def test_sparse_files_under_archived_names_are_archived_one_at_a_time(project: Project) -> None:
    names = " ".join(f"guard.rerun-{n}.log" for n in range(1, FILES + 1))
    grow = f'cd "$RUNNER_ITER_DIR" && truncate -s {FILE_MIB}M {names} && cd - >/dev/null'
    project.prepare(TWO_LEAVES, agent_command=["sh", "-c", f"{grow}\n{WRITE_DONE}"])

    measured = subprocess.run(
        [PYTHON, "-c", MEASURED, PYTHON, "-m", "runner_shell", "step"],
        cwd=project.root,
        env=project.env,
        capture_output=True,
        text=True,
        check=True,
    )

    peak_mib = int(measured.stdout) / 1024
    assert peak_mib < FILES * FILE_MIB / 2, f"the step peaked at {peak_mib:.0f} MiB"
    assert project.meta(1)["status"] == "done"
    archived = project.git("ls-tree", "-r", "--name-only", f"refs/runner/logs/{project.run_id}")
    assert "0-99/1/guard.rerun-10.log" in archived.split()
