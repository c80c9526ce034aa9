"""End-to-end: what a person hands the runner, and what an agent leaves for it to read back,
is read with a cap. A device or an oversized file named with `--from` or `--file`, an
`--attempts` beyond the config's bound, a wait file's out-of-range time and a repository path
with a newline each end in one line (or, for the wait file, a recorded failure), never in
memory growing without bound, a traceback or a write outside the repository."""

from __future__ import annotations

import json
import resource
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.e2e import IDENTITY, PYTHON, Project, assert_one_error_line, lines, node

LEAF = node("root")
# Far more than the runner needs for these commands, far less than reading /dev/zero whole.
MEMORY_CAP_BYTES = 1024 * 1024 * 1024


def capped_runner(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI with its address space capped: a read without a cap fails, not the host."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))

    return subprocess.run(
        [PYTHON, "-m", "runner_shell", *args],
        cwd=project.root,
        env=project.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=cap,
    )


def sparse_file(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no disk space: a hole of zero bytes."""
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


PERSON_INPUT: dict[str, Callable[[str], tuple[str, ...]]] = {
    "node decompose --from": lambda name: ("node", "decompose", "root", "--from", name),
    "node replace --from": lambda name: ("node", "replace", "root", "--from", name),
    "tell --file": lambda name: ("tell", "--file", name),
    "answer --file": lambda name: ("answer", "--file", name),
}


@pytest.mark.parametrize("command", sorted(PERSON_INPUT))
def test_a_device_named_as_person_input_is_refused_in_one_line(
    project: Project, command: str
) -> None:
    project.prepare(LEAF)
    head = project.head()

    result = capped_runner(project, *PERSON_INPUT[command]("/dev/zero"))

    assert "/dev/zero" in assert_one_error_line(result)
    assert "not a regular file" in result.stderr
    assert project.head() == head


@pytest.mark.parametrize("command", sorted(PERSON_INPUT))
def test_a_huge_file_named_as_person_input_is_refused_before_it_is_read(
    project: Project, tmp_path: Path, command: str
) -> None:
    project.prepare(LEAF)
    head = project.head()
    huge = sparse_file(tmp_path / "huge.json", 300 * 1024 * 1024)

    result = capped_runner(project, *PERSON_INPUT[command](str(huge)))

    message = assert_one_error_line(result)
    assert str(huge) in message
    assert "bytes" in message
    assert project.head() == head


@pytest.mark.parametrize("attempts", ["1001", "99999999999999999999"])
def test_retry_attempts_beyond_the_config_s_bound_are_a_usage_error(
    project: Project, attempts: str
) -> None:
    project.prepare(LEAF)
    head = project.head()

    result = project.runner("node", "retry", "root", "--attempts", attempts)

    assert assert_one_error_line(result) == (
        f"node retry: --attempts must be at most 1000, not {attempts}"
    )
    assert project.head() == head
    assert project.tree()["max_attempts"] == LEAF["max_attempts"]


def test_retry_attempts_at_the_config_s_bound_are_given(project: Project) -> None:
    project.prepare(LEAF)

    result = project.runner("node", "retry", "root", "--attempts", "1000")

    assert result.returncode == 0, result.stderr
    assert project.tree()["max_attempts"] == 1000


@pytest.mark.parametrize(
    "retry_at",
    ["0001-01-01T00:00:00-23:59", "0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59"],
)
def test_a_wait_file_time_out_of_range_is_the_agents_error_in_one_line(
    project: Project, retry_at: str
) -> None:
    run = project.prepare(LEAF)
    project.agent_script({1: {"wait": {"retry_at": retry_at}, "exit": 1}})

    result = project.runner("step")

    assert result.returncode == 0, result.stderr
    assert "internal error" not in result.stderr
    assert lines(result.stdout) == [f"step: run={run} iter=1 node=root status=retry guard=skipped"]
    events_log = project.runner_dir / "iterations" / run / "events.jsonl"
    kinds = [json.loads(line)["type"] for line in events_log.read_text().splitlines()]
    assert "limit_reached" not in kinds
    meta = project.meta(1)
    assert meta["error_kind"] == "agent" and meta["attempts_after"] == 1
    assert meta["error"].startswith("wait file: ") and "\n" not in meta["error"]


def git_repository(root: Path, project: Project) -> None:
    """A repository at `root` with one commit, made with the tests' identity."""
    root.mkdir()
    (root / "README.md").write_text("# elsewhere\n", encoding="utf-8")
    for args in (("init", "--quiet", "--initial-branch=main"), ("add", "-A")):
        subprocess.run(["git", *args], cwd=root, env=project.env, check=True)
    commit = ("commit", "--quiet", "-m", "initial commit")
    subprocess.run(["git", *IDENTITY, *commit], cwd=root, env=project.env, check=True)


def newline_refusal(path: Path) -> str:
    return (
        f"{str(path)!r}"[1:-1] + ": the runner does not work in a path holding a newline, as git "
        "lists paths one a line (rename the directory)"
    )


def test_init_in_a_repository_whose_path_holds_a_newline_is_refused_in_one_line(
    fresh_project: Project, tmp_path: Path
) -> None:
    (tmp_path / "a").mkdir()
    root = tmp_path / "a\nb"
    git_repository(root, fresh_project)

    for where in (("-C", str(root)), ("-C", str(root / "."))):
        result = fresh_project.runner(*where, "init")
        assert assert_one_error_line(result) == newline_refusal(Path(where[1]).absolute())
    assert list((tmp_path / "a").iterdir()) == []
    assert sorted(path.name for path in root.iterdir()) == [".git", "README.md"]


def test_demo_in_a_directory_whose_path_holds_a_newline_is_refused_before_it_is_made(
    fresh_project: Project, tmp_path: Path
) -> None:
    directory = tmp_path / "d\nx"

    result = fresh_project.runner("demo", "--dir", str(directory))

    assert assert_one_error_line(result) == newline_refusal(directory)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["harness", "home", "repo"]


def test_a_repository_whose_path_holds_a_carriage_return_works(
    fresh_project: Project, tmp_path: Path
) -> None:
    root = tmp_path / "a\rb"
    git_repository(root, fresh_project)

    result = fresh_project.runner("-C", str(root), "init")

    assert result.returncode == 0, result.stderr
    assert (root / ".runner" / "state" / "config.toml").is_file()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a\rb", "harness", "home", "repo"]


def test_follow_skips_a_sparse_hole_in_events_jsonl_with_a_note_and_replays_the_rest(
    project: Project, tmp_path: Path
) -> None:
    run = project.prepare(LEAF)
    project.agent_script({1: {"output": {"status": "done", "summary": "did it"}}})
    assert project.runner("loop").returncode == 0
    events_log = project.runner_dir / "iterations" / run / "events.jsonl"
    recorded = events_log.read_bytes()
    before = project.runner("follow")
    sparse_file(events_log, 300 * 1024 * 1024)
    with events_log.open("ab") as handle:
        handle.write(b"\n" + recorded)

    after = capped_runner(project, "follow")

    assert after.returncode == before.returncode == 0, after.stderr
    assert after.stdout == before.stdout
    assert after.stderr == (
        "runner: warning: line 1: over 4194304 bytes, skipped (no event is that long)\n"
    )
