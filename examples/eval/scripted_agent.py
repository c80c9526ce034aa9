"""A scripted agent for the example eval cases: no model, the command backend's contract.

It reads the prompt on stdin and the RUNNER_* variables, and plays `script.json` of the
directory given as its one argument: the decomposer answers with its `children`; the executor,
on a node whose title a step names, copies the files of that step's folder (`"files"`) into the
repository. A step may fail first (`"first": "broken"` copies `broken/` instead on the node's
first attempt), so the guard's failure reaches the next attempt through failure.md.
"""

import json
import os
import shutil
import sys
from pathlib import Path

case_dir = Path(sys.argv[1])
script = json.loads((case_dir / "script.json").read_text(encoding="utf-8"))
prompt = sys.stdin.read()
role = os.environ["RUNNER_ROLE"]
node_id = os.environ["RUNNER_NODE_ID"]


def node_of(node_id):
    stack = [json.loads(Path(".runner/state/tree.json").read_text(encoding="utf-8"))]
    while stack:
        node = stack.pop()
        if node["id"] == node_id:
            return node
        stack.extend(node["children"])
    raise SystemExit(f"scripted agent: no node {node_id}")


def copy_tree(source):
    for path in sorted(source.rglob("*")):
        if path.is_file():
            target = Path(path.relative_to(source))
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


node = node_of(node_id)
if role == "decomposer":
    result = {"summary": script["summary"], "children": script["children"]}
else:
    step = next((s for s in script["steps"] if s["title"] == node["title"]), None)
    if step is None:
        result = {"status": "retry", "summary": f"no scripted step for {node['title']!r}"}
    else:
        first_try = node["attempts"] == 0
        folder = step.get("first") if first_try and step.get("first") else step["files"]
        copy_tree(case_dir / folder)
        said = "failure.md" if Path(".runner/context/failure.md").exists() else "the goal"
        result = {"status": "done", "summary": f"{step['title']}: wrote {folder}/ after reading {said}"}
Path(os.environ["RUNNER_OUTPUT_PATH"]).write_text(json.dumps(result), encoding="utf-8")
usage = {"input_tokens": len(prompt.encode()) // 4, "output_tokens": 80, "cached_input_tokens": 0}
Path(os.environ["RUNNER_USAGE_PATH"]).write_text(json.dumps(usage), encoding="utf-8")
print(f"scripted agent: {role} on {node_id}: {result['summary']}")
