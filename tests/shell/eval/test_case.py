"""runner_shell/eval/case.py and the plan of runner_shell/eval/command.py in this process: a case
file is read whole or refused in one line naming its field; the plan checks every case and
prompt variant before any run."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner_shell.errors import UserFacingError
from runner_shell.eval.case import DEFAULT_TIMEOUT_SECS, load_case
from runner_shell.eval.command import plan_jobs

CASE = """[case]
id = "{id}"
goal = "Make check.py pass."
project = "project"
max_iterations = 4

[config.guard]
command = ["python", "{{case_dir}}/check.py"]

[[checks]]
kind = "command_succeeds"
command = ["python", "{{case_dir}}/check.py"]

[[checks]]
kind = "runner_completed"
"""


def write_case(directory: Path, case_id: str = "calc", text: str = CASE) -> Path:
    (directory / "project").mkdir(exist_ok=True)
    path = directory / f"{case_id}.toml"
    path.write_text(text.format(id=case_id), encoding="utf-8")
    return path


def test_a_case_is_read_with_its_directory_expanded(tmp_path: Path) -> None:
    case = load_case(write_case(tmp_path))
    where = str(tmp_path.resolve())
    assert (case.id, case.project, case.repo) == ("calc", tmp_path.resolve() / "project", None)
    assert case.config == {"guard": {"command": ["python", f"{where}/check.py"]}}
    assert case.checks[0]["command"] == ["python", f"{where}/check.py"]
    assert (case.max_iterations, case.timeout_secs) == (4, DEFAULT_TIMEOUT_SECS)
    assert case.directory == tmp_path.resolve()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (('project = "project"', 'project = "project"\nrepo = "r"'), "case.project: give exactly"),
        (('project = "project"', 'project = "project"\ncommit = "abcdef1"'), "case.commit: only a"),
        (('kind = "runner_completed"', "kind = 3"), "checks[1].kind: must be one of"),
        (('kind = "runner_completed"', 'kind = "runner_completed"\nx = 1'), "checks[1].x: unknown"),
    ],
)
def test_a_bad_field_is_one_line_naming_it(
    tmp_path: Path, change: tuple[str, str], said: str
) -> None:
    path = write_case(tmp_path, text=CASE.replace(*change))
    with pytest.raises(UserFacingError) as refused:
        load_case(path)
    assert str(refused.value).startswith(f"eval: {path}: {said}")


def test_an_unreadable_case_is_named(tmp_path: Path) -> None:
    with pytest.raises(UserFacingError, match=r"^eval: .*gone\.toml: cannot be read: "):
        load_case(tmp_path / "gone.toml")


def test_the_plan_is_every_combination_and_refuses_twins_before_any_run(tmp_path: Path) -> None:
    first, second = write_case(tmp_path, "a"), write_case(tmp_path, "b")
    jobs = plan_jobs([first, second], ["codex"], [], 2)
    assert [(job.case.id, job.number) for job in jobs] == [("a", 1), ("a", 2), ("b", 1), ("b", 2)]
    twin = tmp_path / "twin.toml"
    twin.write_text(first.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(UserFacingError, match=r"case\.id: 'a' is also the id of "):
        plan_jobs([first, twin], ["codex"], [], 1)


def test_a_prompt_variant_must_hold_only_templates_that_compile(tmp_path: Path) -> None:
    case = write_case(tmp_path)
    variant = tmp_path / "terse"
    variant.mkdir()
    with pytest.raises(UserFacingError, match=r"holds no executor\.md\.j2 or decomposer\.md\.j2"):
        plan_jobs([case], ["codex"], [variant], 1)
    (variant / "executor.md.j2").write_text("{{ node.goal }}\n", encoding="utf-8")
    (variant / "notes.txt").write_text("x\n", encoding="utf-8")
    with pytest.raises(UserFacingError, match=r"notes\.txt is no template the runner reads"):
        plan_jobs([case], ["codex"], [variant], 1)
    (variant / "notes.txt").unlink()
    jobs = plan_jobs([case], ["codex"], [variant], 1)
    assert [job.variant.name for job in jobs] == ["codex+terse"]
    with pytest.raises(UserFacingError, match=r"^eval: --prompts .*nowhere: is not a directory"):
        plan_jobs([case], ["codex"], [tmp_path / "nowhere"], 1)


@pytest.mark.parametrize("text", ["[case", "x = " + "[" * 5_000 + "]" * 5_000])
def test_a_case_that_is_not_toml_is_named(tmp_path: Path, text: str) -> None:
    path = write_case(tmp_path, text=text.replace("{", "{{").replace("}", "}}"))
    with pytest.raises(UserFacingError, match=r"^eval: .*calc\.toml: is not TOML: "):
        load_case(path)
