"""The run branch holds only judged work, end to end, on a small real project judged by a shell
guard. A scripted agent's first attempt fails the guard: the run branch gets the iteration's
state (its attempt used, its logs) and none of its files, which are on
`refs/runner/attempts/<run>/<iter>`, parented on the commit it started from; the node's second
attempt starts from those files (its prompt says so), fixes one and passes, and its commit on
the run branch holds them all; `runner audit` finds nothing. A line commit forged by hand with
files of a failed iteration, or an attempt ref deleted, is an audit finding.
"""

from __future__ import annotations

import json
import subprocess

import fastjsonschema

from tests.helpers import SCHEMAS
from tests.helpers.e2e import IDENTITY, PYTHON, Project, node
from tests.helpers.second_attempt import AGENT, GUARD

# The fail-then-fix agent and the project's guard: tests/helpers/second_attempt.py.


def _started(project: Project, tree: dict[str, object], **config: object) -> str:
    """`runner start` on the tree and config given: no hand commit on the run branch."""
    project.set_config(**config)
    project.write_tree(tree)
    started = project.runner("start", "--here")
    assert started.returncode == 0, started.stderr
    return project.run_id


def _prepared(project: Project, tree: dict[str, object] | None = None, **config: object) -> str:
    script = project.harness / "agent.py"
    script.write_text(AGENT, encoding="utf-8")
    project.env["HARNESS"] = str(project.harness)
    return _started(
        project,
        tree or node("root", title="Answer 42"),
        agent_command=[PYTHON, str(script)],
        guard_command=["sh", "-c", GUARD],
        **config,
    )


def _seen(project: Project) -> list[dict[str, object]]:
    text = (project.harness / "seen.log").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _iteration_commit(project: Project, iteration: int) -> str:
    log = project.git("log", "--format=%H %s")
    return next(line.split()[0] for line in log.splitlines() if f" iter {iteration} node " in line)


def _files_at(project: Project, rev: str) -> set[str]:
    listed = project.git("ls-tree", "-r", "--name-only", rev).splitlines()
    return {path for path in listed if not path.startswith(".runner/")}


def test_a_failed_attempt_keeps_its_files_off_the_line_and_the_next_starts_from_them(
    unstarted_project: Project,
) -> None:
    project = unstarted_project
    run = _prepared(project)
    start = project.head()

    result = project.runner("loop", "--max-steps", "5", timeout=300)

    assert result.returncode == 0, result.stdout + result.stderr
    assert project.meta(1)["guard"] == "fail"
    assert project.meta(1)["attempt_files"] == 2
    assert project.meta(2)["guard"] == "pass"
    failed, passed = _iteration_commit(project, 1), _iteration_commit(project, 2)
    # The failed iteration's commit on the run branch: its state, none of its files.
    assert _files_at(project, failed) == _files_at(project, start)
    assert project.git("diff", "--name-only", f"{failed}^", failed).split() == [
        ".runner/state/run_state.json",
        ".runner/state/tree.json",
    ]
    # Its files are on its attempt ref, on top of the commit it started from.
    ref = f"refs/runner/attempts/{run}/1"
    assert project.git("rev-parse", f"{ref}^").strip() == start
    assert project.git("show", f"{ref}:root.txt") == "41\n"
    assert project.git("show", f"{ref}:lib/root.sh") == "echo 42\n"
    # The second attempt started from them, and its prompt said so.
    first, second = _seen(project)
    assert (first["helper"], second["helper"]) == (False, True)
    assert second["answer"] == "41\n"
    assert "Your previous attempt's files (iteration 1) are in your checkout" in str(
        second["prompt"]
    )
    assert "the guard failed" in str(second["prompt"])
    # The pass brings them all onto the run branch.
    assert project.git("show", f"{passed}:root.txt") == "42\n"
    assert project.git("show", f"{passed}:lib/root.sh") == "echo 42\n"
    assert (project.root / "root.txt").read_text(encoding="utf-8") == "42\n"
    assert not _ref_exists(project, f"refs/runner/attempts/{run}/2")

    audit = project.runner("audit", "--json")

    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert json.loads(audit.stdout)["findings"] == []
    # The views carry the count, as their documents say.
    for command, name in ((("history", "--json"), "history"), (("show", "1", "--json"), "show")):
        shown = project.runner(*command)
        assert shown.returncode == 0, shown.stderr
        schema = json.loads((SCHEMAS / "views" / f"{name}.schema.json").read_text("utf-8"))
        fastjsonschema.compile(schema)(json.loads(shown.stdout))
        assert '"attempt_files": 2' in shown.stdout


def _ref_exists(project: Project, ref: str) -> bool:
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", ref],
        cwd=project.root,
        capture_output=True,
        check=False,
    )
    return found.returncode == 0


def _forge_files_onto(project: Project, commit: str) -> None:
    """Rewrite `commit` (the branch's tip) by hand with one file outside .runner/ added,
    keeping its message, trailers and parent."""
    (project.root / "forged.txt").write_text("not judged\n", encoding="utf-8")
    project.git("add", "forged.txt")
    project.git(*IDENTITY, "commit", "--quiet", "--no-verify", "--amend", "--no-edit")
    assert project.git("rev-parse", "HEAD").strip() != commit


def test_audit_names_a_line_commit_with_files_of_a_failed_iteration(
    unstarted_project: Project,
) -> None:
    project = unstarted_project
    _prepared(project)
    assert project.runner("step", timeout=120).returncode == 0
    _forge_files_onto(project, project.head())

    audit = project.runner("audit")

    assert audit.returncode == 1, audit.stdout + audit.stderr
    assert (
        "node=root iteration not judged a pass (status=done guard=fail) changes files "
        "outside .runner/: forged.txt" in audit.stdout
    )


def test_audit_names_a_missing_attempt_ref_and_a_hand_commit_of_files(
    unstarted_project: Project,
) -> None:
    project = unstarted_project
    run = _prepared(project)
    assert project.runner("step", timeout=120).returncode == 0
    project.git("update-ref", "-d", f"refs/runner/attempts/{run}/1")
    (project.root / "by-hand.txt").write_text("a fix\n", encoding="utf-8")
    project.commit_setup("a fix by hand")

    audit = project.runner("audit")

    assert audit.returncode == 1, audit.stdout + audit.stderr
    assert f"refs/runner/attempts/{run}/1 is missing (2 files set aside)" in audit.stdout
    assert (
        "changes files outside .runner/ with no iteration judging them: by-hand.txt" in audit.stdout
    )


def test_a_refused_import_keeps_its_files_off_the_line(unstarted_project: Project) -> None:
    """An executor that changed a protected path: refused before any guard; its files go to
    its attempt ref, the run branch gets its state only."""
    project = unstarted_project
    script = project.harness / "agent.py"
    script.write_text(
        "import json, os, pathlib\n"
        "pathlib.Path('tests').mkdir(exist_ok=True)\n"
        "pathlib.Path('tests/t.sh').write_text('exit 0\\n')\n"
        "pathlib.Path('work.txt').write_text('work\\n')\n"
        "pathlib.Path(os.environ['RUNNER_OUTPUT_PATH']).write_text("
        "json.dumps({'status': 'done', 'summary': 'weakened'}))\n",
        encoding="utf-8",
    )
    project.set_config(agent_command=[PYTHON, str(script)], guard_command=["true"])
    text = project.config_path.read_text(encoding="utf-8")
    project.config_path.write_text(
        text.replace("[guard]\n", '[guard]\nprotected = ["tests/**"]\n'), encoding="utf-8"
    )
    project.write_tree(node("root", title="Do work"))
    assert project.runner("start", "--here").returncode == 0
    run = project.run_id
    start = project.head()

    result = project.runner("step", timeout=120)

    assert result.returncode == 0, result.stdout + result.stderr
    assert project.meta(1)["error_kind"] == "agent"
    assert _files_at(project, "HEAD") == _files_at(project, start)
    ref = f"refs/runner/attempts/{run}/1"
    assert _files_at(project, ref) == _files_at(project, start) | {"tests/t.sh", "work.txt"}
    audit = project.runner("audit")
    assert audit.returncode == 0, audit.stdout + audit.stderr


def test_parallel_leaves_keep_failed_attempts_off_the_line(unstarted_project: Project) -> None:
    """Two leaves in two slots, each wrong on its first attempt: every commit of the run
    branch that changes files is a pass, each leaf's second attempt starts from its own first
    attempt's files (carried onto a head the other's work may have moved), and audit is clean."""
    project = unstarted_project
    tree = node("root", next_="decompose", children=[node("root.1"), node("root.2")])
    run = _prepared(project, tree, parallel={"slots": 2})

    result = project.runner("loop", "--max-steps", "8", timeout=600)

    assert result.returncode == 0, result.stdout + result.stderr
    assert all(child["passes"] for child in project.tree()["children"])
    metas = sorted(
        (
            json.loads(path.read_text(encoding="utf-8"))
            for path in project.iter_dir(1).parent.glob("*/meta.json")
        ),
        key=lambda meta: meta["iter"],
    )
    failed = [meta for meta in metas if meta["guard"] == "fail"]
    assert {meta["node_id"] for meta in failed} == {"root.1", "root.2"}
    for meta in failed:
        assert meta["attempt_files"] == 2
        ref = f"refs/runner/attempts/{run}/{meta['iter']}"
        assert project.git("show", f"{ref}:{meta['node_id']}.txt") == "41\n"
    seconds = [entry for entry in _seen(project) if entry["try"] == 2]
    assert {entry["node"] for entry in seconds} == {"root.1", "root.2"}
    assert all(entry["helper"] and entry["answer"] == "41\n" for entry in seconds)
    for line in project.git("log", "--format=%H %s").splitlines():
        sha, subject = line.split(" ", 1)
        changed = project.git("diff-tree", "-r", "--name-only", "--no-commit-id", sha).split()
        outside = [path for path in changed if not path.startswith(".runner/")]
        if outside and "chore(loop): run " in subject:
            assert "status=done guard=pass" in subject, (subject, outside)
    audit = project.runner("audit")
    assert audit.returncode == 0, audit.stdout + audit.stderr
