"""The template agent `runner init --backend command` writes to `.runner/agent.py`.

A working starting point for a user's own agent: it speaks the whole contract (prompt on
stdin, RUNNER_* variables, one JSON document at RUNNER_OUTPUT_PATH) and does no work itself.
runner_core.run.template_agent decides when it is written and how config runs it.
"""

from __future__ import annotations

from runner_core.run.template_agent import TEMPLATE_AGENT_PATH
from runner_shell.store.files import atomic_write_text
from runner_shell.store.layout import RunnerPaths

TEMPLATE_AGENT = '''#!/usr/bin/env python3
"""A template `command` agent for runner: edit it to call your own model or tool.

The contract (see the README, "Writing a command agent"):
- runner starts this program in the repository root, in its own process group, once per
  iteration, with the prompt (Markdown: the task, the selected node, the output contract) on
  stdin. A timeout kills the whole group.
- Environment: RUNNER_ROLE is "decomposer" or "executor"; RUNNER_OUTPUT_PATH is where to
  write exactly one JSON document; RUNNER_OUTPUT_SCHEMA is the JSON Schema it must satisfy;
  RUNNER_RUN_ID, RUNNER_ITER, RUNNER_NODE_ID and RUNNER_ITER_DIR say where you are;
  RUNNER_USAGE_PATH (optional) takes {"input_tokens": n, "output_tokens": n,
  "cached_input_tokens": n} so budgets can count tokens.
- A decomposer writes {"summary": "...", "children": [{"title": "...", "goal": "...",
  "acceptance": ["..."], "next": "execute" | "decompose"}]} (at least one child) and should
  not edit the repository.
- An executor does the selected node's work in the repository, then writes
  {"status": "done" | "retry", "summary": "..."}; on "done" the runner runs the guard.
- Exit 0. A non-zero exit, a missing or invalid output is a runner error: the iteration is
  retried later and never counts against the node's attempts.

As written, it splits a node into one child with the same goal, and claims every executor
task done without changing anything, so the guard alone decides. Replace `execute` (and,
if you like, `decompose`) with calls to your agent.
"""

import json
import os
import sys
from pathlib import Path


def selected_node(node_id):
    """The selected node as .runner/state/tree.json holds it."""
    stack = [json.loads(Path(".runner/state/tree.json").read_text(encoding="utf-8"))]
    while stack:
        node = stack.pop()
        if node["id"] == node_id:
            return node
        stack.extend(node["children"])
    raise SystemExit(f"agent: node {node_id} is not in tree.json")


def decompose(prompt, node):
    child = {
        "title": node["title"],
        "goal": node["goal"],
        "acceptance": node["acceptance"] or ["The goal above is met."],
        "next": "execute",
    }
    return {"summary": "One child with the node's own goal.", "children": [child]}


def execute(prompt, node):
    # Do the node's work here: call your model with `prompt`, edit files, run tests.
    return {"status": "done", "summary": f"Nothing changed for {node['id']}; the guard decides."}


def main():
    prompt = sys.stdin.read()
    node = selected_node(os.environ["RUNNER_NODE_ID"])
    if os.environ["RUNNER_ROLE"] == "decomposer":
        output = decompose(prompt, node)
    else:
        output = execute(prompt, node)
    Path(os.environ["RUNNER_OUTPUT_PATH"]).write_text(json.dumps(output), encoding="utf-8")


if __name__ == "__main__":
    main()
'''


def write_template_agent(paths: RunnerPaths) -> bool:
    """Write the template unless the user already has one there; whether it was written."""
    target = paths.root / TEMPLATE_AGENT_PATH
    if target.exists():
        return False
    atomic_write_text(target, TEMPLATE_AGENT, mode=0o755)
    return True
