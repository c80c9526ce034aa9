"""The built-in demo agent: a real process speaking the agent contract, no model.

It reads the prompt on stdin and the RUNNER_* variables, and acts deterministically on the
demo project so that `runner demo` shows a decomposition, a guard failure that reaches the
next attempt through failure.md, a retry that reaches it through history.md, and completion.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

CHILDREN = [
    {
        "title": "Implement add",
        "goal": "calc.add(a, b) returns the sum of a and b.",
        "acceptance": ["check.py's add cases pass"],
        "next": "execute",
    },
    {
        "title": "Implement multiply",
        "goal": "calc.multiply(a, b) returns the product of a and b, negatives included.",
        "acceptance": ["check.py's multiply cases pass"],
        "next": "execute",
    },
]


def _replace_function(source: str, name: str, body: str) -> str:
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {name}("))
    end = start + 1
    while end < len(lines) and (lines[end].startswith(" ") or not lines[end].strip()):
        end += 1
    return "\n".join([*lines[: start + 1], f"    {body}", "", *lines[end:]]).rstrip() + "\n"


def _node_title(node_id: str) -> str:
    tree = json.loads(Path(".runner/state/tree.json").read_text(encoding="utf-8"))
    stack = [tree]
    while stack:
        node = stack.pop()
        if node["id"] == node_id:
            return str(node["title"])
        stack.extend(node["children"])
    return ""


def _execute(node_id: str) -> dict[str, str]:
    calc = Path("calc.py")
    context = Path(".runner/context")
    title = _node_title(node_id)
    if "add" in title:
        if not (context / "failure.md").exists():
            calc.write_text(_replace_function(calc.read_text(), "add", "return a - b"))
            return {"status": "done", "summary": "Implemented add (as a - b)."}
        calc.write_text(_replace_function(calc.read_text(), "add", "return a + b"))
        return {"status": "done", "summary": "failure.md showed add(2, 3) == -1; fixed to a + b."}
    if not (context / "history.md").exists():
        with open(".runner/state/assumptions.md", "a", encoding="utf-8") as notes:
            notes.write("- multiply must accept negative numbers (check.py tests -2 * 3).\n")
        return {
            "status": "retry",
            "summary": "Read check.py first: multiply is tested with negatives; implement next.",
        }
    calc.write_text(_replace_function(calc.read_text(), "multiply", "return a * b"))
    return {"status": "done", "summary": "Implemented multiply as a * b, as history.md planned."}


def main() -> int:
    prompt = sys.stdin.read()
    role = os.environ["RUNNER_ROLE"]
    if role == "decomposer":
        result: dict[str, object] = {
            "summary": "Split the calculator into one task per function.",
            "children": CHILDREN,
        }
    else:
        result = dict(_execute(os.environ["RUNNER_NODE_ID"]))
    Path(os.environ["RUNNER_OUTPUT_PATH"]).write_text(json.dumps(result), encoding="utf-8")
    usage = {
        "input_tokens": len(prompt.encode()) // 4,
        "output_tokens": 120,
        "cached_input_tokens": 0,
    }
    Path(os.environ["RUNNER_USAGE_PATH"]).write_text(json.dumps(usage), encoding="utf-8")
    print(f"demo agent: {role} on {os.environ['RUNNER_NODE_ID']}: {result['summary']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
