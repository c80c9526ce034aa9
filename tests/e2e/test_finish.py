"""End-to-end specification of `runner finish`: the run branch merged (or squashed) into the
branch `runner start` recorded, with a message of what the run did; refused, changing
nothing, for an incomplete run without --force or a target that conflicts."""

from __future__ import annotations

from tests.helpers.e2e import IDENTITY, Project, assert_one_error_line, lines, node

DONE = {"status": "done", "summary": "Did it."}


def fold_setup_into_start(project: Project) -> None:
    """The test's setup commit made part of the start commit: `runner audit` (which finish
    now runs first) would rightly call a later commit of the tree a hand edit."""
    project.git("reset", "--soft", "HEAD~1")
    project.git(*IDENTITY, "commit", "--quiet", "--no-verify", "--amend", "--no-edit")


def completed_run(project: Project) -> str:
    run = project.prepare(node("root"))
    fold_setup_into_start(project)
    project.agent_script({1: {"files": {"feature.txt": "new\n"}, "output": DONE}})
    assert project.runner("loop").returncode == 0
    return run


def test_start_records_the_branch_it_started_from(project: Project) -> None:
    start = project.git("log", "--format=%B", "--grep=^chore(loop): start run").strip()
    assert lines(start)[-1] == "Runner-Base: main"


def test_finish_merges_into_main_with_a_summary_and_deletes_the_branch(project: Project) -> None:
    run = completed_run(project)
    result = project.runner("finish", "--delete-branch")
    assert result.returncode == 0, result.stderr
    (line,) = lines(result.stdout)
    assert line.startswith(f"finish: run={run} into=main mode=merge commit=")
    assert line.endswith(" branch=deleted")
    assert project.git("branch", "--show-current").strip() == "main"
    assert (project.root / "feature.txt").read_text() == "new\n"
    message = project.git("log", "-1", "--format=%B")
    assert lines(message)[0] == f"chore(runner): merge run {run} into main"
    assert f"Run {run} is complete: 1/1 leaves passed in 1 iterations" in message
    assert project.git("branch", "--list", f"runner/{run}").strip() == ""


def test_finish_squash_makes_one_commit_on_main(project: Project) -> None:
    run = completed_run(project)
    main_before = project.git("rev-parse", "main").strip()
    assert project.runner("finish", "--squash").returncode == 0
    assert project.git("rev-parse", "HEAD~1").strip() == main_before
    assert project.subjects()[-1] == f"chore(runner): squash run {run} into main"


def test_finish_refuses_an_incomplete_run_unless_forced(project: Project) -> None:
    run = project.prepare(node("root"))
    before = project.head()
    result = project.runner("finish")
    assert assert_one_error_line(result) == (
        f"finish: run {run} is not complete (0/1 leaves passed); run 'runner loop', or pass --force"
    )
    assert project.head() == before
    forced = project.runner("finish", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "is incomplete (finished with --force)" in project.git("log", "-1", "--format=%B")


def test_finish_refuses_a_conflicting_target_and_changes_nothing(project: Project) -> None:
    run = completed_run(project)
    project.git("checkout", "--quiet", "main")
    (project.root / "feature.txt").write_text("theirs\n")
    project.commit_setup("main moved on")
    project.git("checkout", "--quiet", f"runner/{run}")
    before = {ref: project.git("rev-parse", ref).strip() for ref in ("main", "HEAD")}
    result = project.runner("finish")
    assert assert_one_error_line(result) == (
        f"finish: main has diverged and conflicts with runner/{run} in feature.txt; "
        "merge or rebase by hand (nothing was changed)"
    )
    assert {ref: project.git("rev-parse", ref).strip() for ref in before} == before
    assert project.status() == ""
