"""Back on the branch a run started from: the runner's ephemeral files stay ignored there
(through the repository's exclude file) and the way on is the run branch, not `runner init`."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from runner_core.iteration.preconditions import (
    GIT_EXCLUDE_LINES,
    no_run_checked_out_problem,
    with_git_exclude_lines,
)

GIT_TEMPLATE = "# git ls-files --others --exclude-from=.git/info/exclude\n# *~\n"


def test_the_exclude_lines_are_anchored_at_the_runners_ephemeral_directories() -> None:
    assert GIT_EXCLUDE_LINES == ("/.runner/context/", "/.runner/iterations/")


def test_the_lines_are_appended_after_what_the_file_says() -> None:
    assert with_git_exclude_lines(GIT_TEMPLATE) == (
        GIT_TEMPLATE + "/.runner/context/\n/.runner/iterations/\n"
    )


def test_a_file_without_a_final_newline_keeps_its_last_line_whole() -> None:
    assert with_git_exclude_lines("*.log") == "*.log\n/.runner/context/\n/.runner/iterations/\n"


def test_only_the_missing_line_is_added() -> None:
    assert with_git_exclude_lines("/.runner/iterations/\n") == (
        "/.runner/iterations/\n/.runner/context/\n"
    )


@given(st.text(max_size=200))
def test_adding_the_lines_twice_changes_nothing_the_second_time(text: str) -> None:
    """The exclude file is written on every init and start: the second write is a no-op and
    the user's own lines are kept as they were."""
    once = with_git_exclude_lines(text)
    assert once is None or once.startswith(text)
    assert with_git_exclude_lines(once if once is not None else text) is None


def test_no_run_checked_out_names_the_branch_and_the_way_on() -> None:
    assert no_run_checked_out_problem("main", ("run-1",)) == (
        "branch 'main' holds no run (.runner/state/run_state.json is missing): run(s) run-1 "
        "exist: 'git checkout runner/run-1' to continue it, or 'runner start --new' for a new run"
    )


def test_no_run_checked_out_on_a_detached_head() -> None:
    assert no_run_checked_out_problem(None, ("run-1", "run-2")).startswith(
        "HEAD is detached (.runner/state/run_state.json is missing): run(s) run-1, run-2 exist"
    )
