"""An eval case: a TOML file (schemas/eval_case.schema.json) read, checked and made a value.

A bad case is one line naming the file and the field. `{case_dir}` in a config or check string
is the case file's directory (where a scripted agent beside it lives).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from runner_core.json_text import toml_value
from runner_core.validation.schema import schema_text
from runner_shell.errors import UserFacingError

CHECK_KEYS = {
    "file_exists": ({"path"}, set()),
    "command_succeeds": ({"command"}, {"timeout_secs"}),
    "tests_pass": ({"command", "pattern"}, {"timeout_secs"}),
    "runner_completed": (set(), set()),
}
DEFAULT_TIMEOUT_SECS = 600.0


@attrs.frozen(slots=True)
class Case:
    path: Path
    shown: str  # the path as the user gave it, for messages
    id: str
    goal: str
    project: Path | None
    repo: str | None
    commit: str | None
    config: dict[str, Any] = attrs.field(eq=False)
    checks: tuple[dict[str, Any], ...] = attrs.field(eq=False)
    max_cost_usd: float | None = None
    max_iterations: int | None = None
    timeout_secs: float = DEFAULT_TIMEOUT_SECS

    @property
    def directory(self) -> Path:
        return self.path.parent


def _expand(value: Any, case_dir: str) -> Any:
    if isinstance(value, str):
        return value.replace("{case_dir}", case_dir)
    if isinstance(value, list):
        return [_expand(item, case_dir) for item in value]
    if isinstance(value, dict):
        return {key: _expand(item, case_dir) for key, item in value.items()}
    return value


def _check_problem(index: int, check: Any) -> str | None:
    where = f"checks[{index}]"
    if not isinstance(check, dict):
        return f"{where}: must be a table"
    kind = check.get("kind")
    if kind not in CHECK_KEYS:
        return f"{where}.kind: must be one of {', '.join(sorted(CHECK_KEYS))}, got {kind!r}"
    required, optional = CHECK_KEYS[kind]
    for key in sorted(required - set(check)):
        return f"{where}.{key}: missing (a {kind} check needs it)"
    for key in sorted(set(check) - required - optional - {"kind"}):
        return f"{where}.{key}: unknown key for a {kind} check"
    return None


def load_case(path: Path) -> Case:
    """The case in `path`; `UserFacingError` naming the file and the bad field."""
    import fastjsonschema

    name = str(path)
    try:
        data = toml_value(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UserFacingError(f"eval: {name}: cannot be read: {error.strerror}") from None
    except ValueError as error:  # not UTF-8, not TOML, or too deep
        raise UserFacingError(f"eval: {name}: is not TOML: {error}") from None
    checks = data.get("checks")
    for index, check in enumerate(checks if isinstance(checks, list) else []):
        problem = _check_problem(index, check)
        if problem is not None:
            raise UserFacingError(f"eval: {name}: {problem}")
    try:
        fastjsonschema.compile(json.loads(schema_text("eval_case.schema.json")))(data)
    except fastjsonschema.JsonSchemaValueException as error:
        field = str(error.name).removeprefix("data").lstrip(".") or "(the file)"
        said = str(error.message).removeprefix(str(error.name)).strip()
        raise UserFacingError(f"eval: {name}: {field}: {said}") from None
    case = data["case"]
    if ("project" in case) == ("repo" in case):
        raise UserFacingError(f"eval: {name}: case.project: give exactly one of project or repo")
    if "commit" in case and "repo" not in case:
        raise UserFacingError(f"eval: {name}: case.commit: only a repo has a commit")
    directory = path.resolve().parent
    project = None
    if "project" in case:
        project = (directory / case["project"]).resolve()
        if not project.is_dir():
            raise UserFacingError(
                f"eval: {name}: case.project: {case['project']} is not a directory beside the case"
            )
    repo = case.get("repo")
    if repo is not None and not ("://" in repo or repo.startswith("git@")):
        repo = str((directory / repo).resolve())
    return Case(
        path=path.resolve(),
        shown=name,
        id=case["id"],
        goal=case["goal"],
        project=project,
        repo=repo,
        commit=case.get("commit"),
        config=_expand(data.get("config", {}), str(directory)),
        checks=tuple(_expand(check, str(directory)) for check in data["checks"]),
        max_cost_usd=case.get("max_cost_usd"),
        max_iterations=case.get("max_iterations"),
        timeout_secs=float(case.get("timeout_secs", DEFAULT_TIMEOUT_SECS)),
    )
