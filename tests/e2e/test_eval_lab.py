"""The prompt lab, `runner eval --role decomposer --inputs DIR`: each prompt variant against fixed
inputs, only the decomposer run (a real `runner step`), its output judged by the runner and
scored, every answer cached by (prompt template, input, backend, model)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers.e2e import PYTHON

AGENT = """
import json, os, sys
from pathlib import Path
prompt = sys.stdin.read()
first = "TEST-FIRST" in prompt
children = [
    {"title": "Add", "goal": "add", "acceptance": ["test: *add*" if first else "works"],
     "next": "execute"},
    {"title": "Sub", "goal": "sub", "acceptance": ["test: *nothing*" if first else "ok"],
     "next": "execute"},
]
if "EMPTY" in prompt:
    children = []
output = {"summary": "split", "children": children}
Path(os.environ["RUNNER_OUTPUT_PATH"]).write_text(json.dumps(output))
usage = {"input_tokens": 100, "output_tokens": 50, "cached_input_tokens": 0}
Path(os.environ["RUNNER_USAGE_PATH"]).write_text(json.dumps(usage))
"""
TEMPLATE = '{{ [contract, goal, selected, output] | select | join("\\n") }}\n'


def lab(tmp_path: Path, *args: str) -> dict[str, Any]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    result = subprocess.run(
        [
            PYTHON,
            "-m",
            "runner_shell",
            "eval",
            "--role",
            "decomposer",
            "--inputs",
            "inputs",
            *args,
            "--json",
        ],
        cwd=tmp_path,
        env={**os.environ, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_the_lab_scores_each_variant_and_caches_its_answers(tmp_path: Path) -> None:
    inputs = tmp_path / "inputs"
    for name, goal in (("calc", "A calculator."), ("strings", "Strings.")):
        (inputs / name).mkdir(parents=True)
        (inputs / name / "GOAL.md").write_text(f"# Goal\n\n{goal}\n")
    (inputs / "calc" / "tests.txt").write_text("tests/test_calc.py::test_add\n")
    (inputs / "decomposer.py").write_text(AGENT)
    (inputs / "lab.toml").write_text(
        '[config.guard]\ncommand = ["true"]\n'
        '[config.agent]\ncommand = ["python3", "{inputs_dir}/decomposer.py"]\n'
    )
    variant = tmp_path / "test-first"
    variant.mkdir()
    template = variant / "decomposer.md.j2"
    template.write_text("TEST-FIRST: name each child's tests.\n" + TEMPLATE)

    first = lab(tmp_path, "--prompts", str(variant))
    assert first["inputs"] == ["calc", "strings"]
    [row] = first["rows"]
    assert (row["variant"], row["valid"], row["mean_children"]) == ("command+test-first", 2, 2)
    # Four `test:` lines; one names a test calc really has.
    assert (row["test_lines"], row["test_lines_matching"], row["cached"]) == (4, 1, 0)
    assert row["tokens"] == 300

    again = lab(tmp_path, "--prompts", str(variant))
    assert again["rows"][0]["cached"] == 2
    assert {k: v for k, v in again["rows"][0].items() if k not in ("cached", "answers")} == {
        k: v for k, v in row.items() if k not in ("cached", "answers")
    }

    template.write_text("EMPTY\n" + TEMPLATE)  # a new prompt: a new key, run again
    changed = lab(tmp_path, "--prompts", str(variant))["rows"][0]
    assert (changed["cached"], changed["valid"], changed["mean_children"]) == (0, 0, 0)
    problems = [answer["problem"] for answer in changed["answers"]]
    assert all("decomposer returned no children" in str(problem) for problem in problems)
