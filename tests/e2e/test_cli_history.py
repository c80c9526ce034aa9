"""End-to-end specification of a history that survives, and `runner audit`.

One real run (fake agent, real git) with a decomposition, a guard failure, an agent error, a
runner error, a retry, an operator decomposition and `runner tell` is audited clean; its logs
survive `git clean -fdx` and a clone (archive ref `refs/runner/logs/<run>`, else the commit
trailers); each kind of tampering is found and named.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import fastjsonschema
import pytest

from runner_core.run.trailers import parse_trailers
from tests.helpers import SCHEMAS
from tests.helpers.e2e import Project, ProjectFactory, child_spec, lines, node

SCHEMAS = SCHEMAS / "views"
DECOMPOSITION = {"summary": "Split.", "children": [child_spec("Write A"), child_spec("Write B")]}
DONE = {"status": "done", "summary": "done"}
# In execute mode no node may gain children: an agent error.
HIJACK = [["add_child", "root.2", node("root.2.9")]]
# iteration -> the subject's node, status and guard
EXPECTED = {
    1: ("root", "decomposed", "skipped"),
    2: ("root.1", "done", "fail"),
    3: ("root.1", "retry", "skipped"),  # agent error: the agent edited the root
    4: ("root.1", "runner_error", "skipped"),  # the agent exited 3
    5: ("root.1", "done", "pass"),
    6: ("root.2", "retry", "skipped"),
    7: ("root.2.1", "done", "pass"),
}
ITERATIONS = len(EXPECTED)


def _steps(project: Project) -> None:
    for iteration in range(1, 7):
        project.runner("step")
        assert project.subjects()[-1].endswith(
            "node {} status={} guard={}".format(*EXPECTED[iteration])
        ), (iteration, project.subjects()[-1])
    plan = project.root.parent / "plan.json"
    plan.write_text(
        json.dumps({"summary": "by hand", "children": [child_spec("B1"), child_spec("B2")]}),
        encoding="utf-8",
    )
    done = project.runner("node", "decompose", "root.2", "--from", str(plan))
    assert done.returncode == 0, done.stderr
    told = project.runner("tell", "keep it small")
    assert told.returncode == 0, told.stderr
    last = project.runner("step")
    assert last.returncode == 0, last.stderr


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory, make_project: ProjectFactory) -> Project:
    project = make_project(tmp_path_factory.mktemp("audited"), "started")
    project.agent_script(
        {
            1: {"output": DECOMPOSITION},
            2: {"files": {"a.txt": "wrong\n"}, "output": DONE},
            3: {"tree_ops": HIJACK, "output": DONE},
            4: {"output": DONE, "exit": 3},
            5: {"files": {"a.txt": "A\n"}, "output": DONE},
            6: {"output": {"status": "retry", "summary": "not yet"}},
            7: {"files": {"b1.txt": "B1\n"}, "output": DONE},
        }
    )
    project.guard_script([{"exit": 1, "stdout": "1 failed\n"}, {"stdout": "ok\n"}])
    _steps(project)
    return project


def copy_of(project: Project, base: Path) -> Project:
    """A copy of the whole repository (iteration directories and refs too) to tamper with."""
    root = base / "repo"
    shutil.copytree(project.root, root, symlinks=True)
    return Project(root, project.harness, project.scripts, project.env)


def audit(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    return project.runner("audit", *args)


def schema(name: str) -> Any:
    return fastjsonschema.compile(json.loads((SCHEMAS / name).read_text(encoding="utf-8")))


# ---------------------------------------------------------------- the record in git


def test_every_iteration_commit_carries_its_record_and_the_chain(audited: Project) -> None:
    messages = audited.git("log", "--format=%B%x00", "-n", "12").split("\0")
    iterations = [parse_trailers(m) for m in messages if "Runner-Iter:" in m]
    assert sorted(int(t["Runner-Iter"]) for t in iterations) == list(range(1, ITERATIONS + 1))
    for trailers in iterations:
        for name in ("Runner-Exec", "Runner-Duration-Ms", "Runner-Started-At", "Runner-Chain"):
            assert name in trailers
    errors = {t["Runner-Iter"]: t.get("Runner-Error") for t in iterations}
    assert (errors["3"], errors["4"], errors["5"]) == ("agent", "runner", None)
    assert audited.run_state()["chain"] == audited.head_chain()


def test_each_iteration_is_archived_on_the_logs_ref(audited: Project) -> None:
    ref = f"refs/runner/logs/{audited.run_id}"
    assert audited.git("rev-list", "--count", ref).strip() == str(ITERATIONS)
    names = audited.git("ls-tree", "-r", "--name-only", ref).split()
    assert {name.split("/")[1] for name in names} == {str(n) for n in range(1, ITERATIONS + 1)}
    assert {name.split("/")[0] for name in names} == {"0-99"}
    assert "0-99/2/guard.log" in names and "0-99/7/meta.json" in names


# ---------------------------------------------------------------- runner audit


def test_audit_is_clean_on_a_real_run(audited: Project) -> None:
    result = audit(audited)

    assert result.returncode == 0, result.stdout + result.stderr
    assert lines(result.stdout) == [
        f"audit: run={audited.run_id} iterations={ITERATIONS} operator_ops=2 findings=0"
    ]


def test_audit_json_is_its_documented_document(audited: Project) -> None:
    document = json.loads(audit(audited, "--json").stdout)

    schema("audit.schema.json")(document)
    assert (document["clean"], document["iterations"]) == (True, ITERATIONS)
    assert [(a["op"], a["node"]) for a in document["operator_actions"]] == [
        ("decompose", "root.2"),
        ("tell", None),
    ]


def commit_tree_edit(
    project: Project, node_id: str, field: str, value: Any, message: str = "tweak the tree"
) -> None:
    tree = project.tree()

    def visit(node: dict[str, Any]) -> None:
        if node["id"] == node_id:
            node[field] = value
        for child in node["children"]:
            visit(child)

    visit(tree)
    project.write_tree(tree)
    project.commit_setup(message)


@pytest.mark.parametrize(
    ("node_id", "field", "value", "named"),
    [
        ("root.2.2", "passes", True, "passes false -> true"),
        ("root.1", "title", "Renamed", "title"),
        ("root.2", "attempts", 0, "attempts 1 -> 0"),
    ],
    ids=["hand-flipped-passes", "edited-passed-node", "attempt-reset"],
)
def test_audit_finds_and_names_a_hand_edit(
    audited: Project, tmp_path: Path, node_id: str, field: str, value: Any, named: str
) -> None:
    project = copy_of(audited, tmp_path)
    commit_tree_edit(project, node_id, field, value)
    sha = project.head()[:8]

    result = audit(project)

    assert result.returncode == 1
    findings = lines(result.stdout)[1:]
    assert findings, result.stdout
    assert any(
        line.startswith(f"audit: finding commit={sha} iter=- node={node_id} hand edit")
        and named in line
        for line in findings
    ), findings


@pytest.mark.parametrize(
    "message",
    # Runner-Actor makes an operator's commit only of what `runner tell` commits.
    ["tweak the tree", "tweak\n\nRunner-Actor: alice"],
    ids=["plain", "forged-actor"],
)
def test_validate_warns_about_a_hand_edit_audit_finds_and_still_exits_0(
    audited: Project, tmp_path: Path, message: str
) -> None:
    project = copy_of(audited, tmp_path)
    commit_tree_edit(project, "root.2.2", "passes", True, message)
    sha = project.head()[:8]

    result = project.runner("validate")
    found = audit(project)

    assert result.returncode == 0, result.stderr
    assert re.search(
        r"runner: warning: committed tree differs from the last runner commit [0-9a-f]{8}: "
        r"node root.2.2 field passes: false -> true",
        result.stderr,
    ), result.stderr
    assert audited.runner("validate").stderr == ""
    assert found.returncode == 1
    assert any(
        line.startswith(f"audit: finding commit={sha} iter=- node=root.2.2 hand edit")
        for line in lines(found.stdout)
    ), found.stdout


def rewrite_history(project: Project, drop: int | None, amend: dict[int, str]) -> None:
    """Re-commit the run's commits after the start, dropping iteration `drop` (its changes go
    with the next commit, as a rebase resolving to the later files would) or with a message
    of `amend` replaced."""
    shas = project.git("rev-list", "--reverse", "--first-parent", "HEAD").split()
    parent = shas[0]
    for sha in shas[1:]:
        message = project.git("log", "-1", "--format=%B", sha)
        iteration = parse_trailers(message).get("Runner-Iter")
        if iteration is not None and int(iteration) == drop:
            continue
        if iteration is not None and int(iteration) in amend:
            message = amend[int(iteration)]
        tree = project.git("rev-parse", f"{sha}^{{tree}}").strip()
        parent = project.git(
            "-c", "user.name=T", "-c", "user.email=t@x", "commit-tree", tree, "-p", parent,
            "-m", message,
        ).strip()  # fmt: skip
    project.git("reset", "--quiet", "--hard", parent)


def test_audit_finds_a_dropped_iteration_commit(audited: Project, tmp_path: Path) -> None:
    project = copy_of(audited, tmp_path)
    rewrite_history(project, drop=5, amend={})

    result = audit(project)

    assert result.returncode == 1
    assert any(
        "iter=6" in line and "iteration 6 where 5 follows" in line for line in lines(result.stdout)
    ), result.stdout
    assert "Runner-Chain does not follow" in result.stdout


def test_audit_finds_an_edited_trailer(audited: Project, tmp_path: Path) -> None:
    project = copy_of(audited, tmp_path)
    message = project.git("log", "-1", "--format=%B", project.head())
    changed = re.sub(r"Runner-Duration-Ms: \d+", "Runner-Duration-Ms: 1", message)
    rewrite_history(project, drop=None, amend={ITERATIONS: changed})

    result = audit(project)

    assert result.returncode == 1
    assert f"iter={ITERATIONS} node=- Runner-Chain does not follow" in result.stdout


# ---------------------------------------------------------------- views from git alone


VIEWS = (("history",), ("report",), ("status",), ("metrics",), ("show", "2"), ("diff", "1"))


def test_after_git_clean_every_view_is_complete_from_the_archive(
    audited: Project, tmp_path: Path
) -> None:
    before = audited.runner("history", "--json").stdout
    project = copy_of(audited, tmp_path)
    project.git("clean", "-fdxq")
    assert not (project.runner_dir / "iterations").exists()

    for view in VIEWS:
        result = project.runner(*view)
        assert result.returncode == 0, (view, result.stderr)
    history = project.runner("history", "--json")
    assert history.stdout == before
    assert f"read the run from refs/runner/logs/{project.run_id}" in history.stderr
    show = project.runner("show", "2").stdout
    assert "--- guard.log" in show and "1 failed" in show

    restored = project.runner("logs", "restore")
    assert lines(restored.stdout) == [
        f"logs: restored run={project.run_id} iterations={ITERATIONS} "
        f"dir=.runner/iterations/{project.run_id}"
    ]
    assert project.runner("history", "--json").stderr == ""
    original = audited.runner_dir / "iterations" / audited.run_id / "2" / "guard.log"
    copy = project.runner_dir / "iterations" / project.run_id / "2" / "guard.log"
    assert copy.read_bytes() == original.read_bytes()


def clone(project: Project, base: Path, with_refs: bool) -> Project:
    root = base / "clone"
    subprocess.run(["git", "clone", "--quiet", str(project.root), str(root)], check=True)
    copy = Project(root, project.harness, project.scripts, project.env)
    if with_refs:
        copy.git("fetch", "--quiet", "origin", "refs/runner/*:refs/runner/*")
    assert copy.git("branch", "--show-current").strip() == f"runner/{project.run_id}"
    return copy


def test_a_clone_with_the_refs_gives_the_same_history(audited: Project, tmp_path: Path) -> None:
    copy = clone(audited, tmp_path, with_refs=True)

    assert copy.runner("history", "--json").stdout == audited.runner("history", "--json").stdout
    assert copy.runner("audit").returncode == 0


def test_a_clone_without_the_refs_reads_the_trailers_with_a_warning(
    audited: Project, tmp_path: Path
) -> None:
    copy = clone(audited, tmp_path, with_refs=False)

    for view in VIEWS:
        result = copy.runner(*view)
        assert result.returncode == 0, (view, result.stderr)
        assert "commit trailers" in result.stderr or view[0] == "diff", (view, result.stderr)
    history = copy.runner("history", "--json")
    assert history.stdout == audited.runner("history", "--json").stdout
    assert len(history.stderr.splitlines()) == 1
    assert copy.runner("audit").returncode == 0


# ---------------------------------------------------------------- diff and show


def test_diff_shows_a_decomposition(audited: Project) -> None:
    result = audited.runner("diff", "1")

    assert lines(result.stdout)[0].startswith(f"diff: run={audited.run_id} iter=1 changes=2")
    assert "  added root.1 under root" in lines(result.stdout)
    assert "  added root.2 under root" in lines(result.stdout)
    document = json.loads(audited.runner("diff", "1", "--json").stdout)
    schema("diff.schema.json")(document)


def test_diff_shows_an_executors_iteration(audited: Project) -> None:
    result = audited.runner("diff", "2")

    assert "  root.1 attempts: 0 -> 1" in lines(result.stdout)


def test_show_adds_the_commit_and_the_agents_diff_stat(audited: Project) -> None:
    result = audited.runner("show", "2")

    assert result.returncode == 0, result.stderr
    out = lines(result.stdout)
    commit = next(line for line in out if line.startswith("commit: "))
    sha = commit.removeprefix("commit: ")
    assert "Runner-Iter: 2" in audited.git("log", "-1", "--format=%B", sha)
    assert any("a.txt" in line for line in out[out.index("agent diff stat:") :])
    document = json.loads(audited.runner("show", "2", "--json").stdout)
    schema("show.schema.json")(document)
    assert document["commit"] == sha


@pytest.mark.parametrize("command", ["diff", "show"])
def test_every_key_a_history_document_always_holds_is_required_by_its_schema(
    audited: Project, command: str
) -> None:
    document = json.loads(audited.runner(command, "2", "--json").stdout)
    required = json.loads((SCHEMAS / f"{command}.schema.json").read_text(encoding="utf-8"))

    assert set(required["required"]) == set(document)


# ---------------------------------------------------------------- a kill between commit and archive

# Refuses the log archive's git commands (fast-import, or its plumbing's `hash-object ...
# --stdin`), not the commit's own fast-import (the one exporting marks) before it.
FAILING_GIT = """#!/bin/sh
case "$*" in
  *fast-import*--export-marks=*) ;;
  *fast-import*|*"hash-object -w --no-filters --stdin")
    echo "archive refused by the test" >&2; exit 1;;
esac
exec "{git}" "$@"
"""


def test_an_iteration_committed_but_not_archived_is_archived_by_recover(
    project: Project, tmp_path: Path
) -> None:
    real_git = shutil.which("git")
    assert real_git is not None
    bin_dir = tmp_path / "failing-git"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(FAILING_GIT.format(git=real_git), encoding="utf-8")
    (bin_dir / "git").chmod(0o755)
    project.agent_script({1: {"output": DECOMPOSITION}, 2: {"output": DONE}})
    path = project.env["PATH"]
    project.env["PATH"] = f"{bin_dir}:{path}"

    failed = project.runner("step")

    project.env["PATH"] = path
    assert failed.returncode == 1
    assert failed.stderr.startswith(
        "runner: iteration 1 was committed but its logs were not archived: "
    ), failed.stderr
    assert failed.stderr.rstrip().endswith("(fix the problem, then run 'runner recover')")
    assert "iter 1 node root" in project.subjects()[-1]
    refused = project.runner("step")
    assert refused.returncode == 1 and "runner recover" in refused.stderr

    recovered = project.runner("recover")

    assert recovered.returncode == 0, recovered.stderr
    ref = f"refs/runner/logs/{project.run_id}"
    assert project.git("ls-tree", "--name-only", f"{ref}:0-99").split() == ["1"]
    assert project.runner("step").returncode == 0
    assert project.git("ls-tree", "--name-only", f"{ref}:0-99").split() == ["1", "2"]
    assert project.runner("audit").returncode == 0


# Refuses the commit's own fast-import (the one exporting marks), nothing before it.
REFUSING_COMMIT_GIT = """#!/bin/sh
case "$*" in
  *fast-import*--export-marks=*) echo "commit refused by the test" >&2; exit 1;;
esac
exec "{git}" "$@"
"""


def test_an_iteration_logged_but_not_committed_says_so_and_recover_records_it(
    project: Project, tmp_path: Path
) -> None:
    real_git = shutil.which("git")
    assert real_git is not None
    bin_dir = tmp_path / "refusing-git"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(REFUSING_COMMIT_GIT.format(git=real_git), encoding="utf-8")
    (bin_dir / "git").chmod(0o755)
    project.agent_script({1: {"output": DECOMPOSITION}, 2: {"output": DONE}})
    subjects = project.subjects()
    path = project.env["PATH"]
    project.env["PATH"] = f"{bin_dir}:{path}"

    failed = project.runner("step")

    project.env["PATH"] = path
    assert failed.returncode == 1
    assert failed.stderr.startswith("runner: iteration 1 was logged but not committed: git "), (
        failed.stderr
    )
    assert failed.stderr.rstrip().endswith("(fix the problem, then run 'runner recover')")
    assert project.subjects() == subjects
    refused = project.runner("step")
    assert refused.returncode == 1 and "runner recover" in refused.stderr

    recovered = project.runner("recover")

    assert recovered.returncode == 0, recovered.stderr
    assert "iter 1 node root status=interrupted" in project.subjects()[-1]
