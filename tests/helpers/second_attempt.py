"""A scripted agent whose first attempt on a node fails the project's guard and whose second
fixes it, keeping its helper from the first: the scenario of a node's next attempt starting from
its previous attempt's files, wherever its job runs (a local slot, a worker).

It finds its records beside its own script, so it needs no variable of the environment (a
worker's sandbox passes none the request names).
"""

from __future__ import annotations

import json
from typing import Any

from tests.helpers.e2e import PYTHON, Project

# Attempt 1 writes a helper and a wrong answer; attempt 2 records what its checkout holds (the
# helper, the wrong answer) and fixes the answer.
AGENT = r"""
import json, os, pathlib, sys
out = pathlib.Path(os.environ["RUNNER_OUTPUT_PATH"])
harness = pathlib.Path(__file__).resolve().parent
name = os.environ["RUNNER_NODE_ID"]
tries = harness / f"{name}.tries"
n = int(tries.read_text()) + 1 if tries.exists() else 1
tries.write_text(str(n))
helper, answer = pathlib.Path(f"lib/{name}.sh"), pathlib.Path(f"{name}.txt")
entry = {
    "node": name, "iter": int(os.environ["RUNNER_ITER"]), "try": n,
    "prompt": sys.stdin.read(), "helper": helper.exists(),
    "answer": answer.read_text() if answer.exists() else None,
}
with (harness / "seen.log").open("a") as log:
    log.write(json.dumps(entry) + "\n")
if n == 1:
    pathlib.Path("lib").mkdir(exist_ok=True)
    helper.write_text("echo 42\n")
    answer.write_text("41\n")
else:
    answer.write_text("42\n")
out.write_text(json.dumps({"status": "done", "summary": f"attempt {n}"}))
"""

# The project's own test: each answer is what its helper prints.
GUARD = (
    'for f in lib/*.sh; do [ -f "$f" ] || continue; n=$(basename "$f" .sh); '
    '[ "$(sh "$f")" = "$(cat "$n.txt")" ] || exit 1; done; ls lib/*.sh >/dev/null'
)

RESUMED = "Your previous attempt's files (iteration {}) are in your checkout"


def commands(project: Project) -> dict[str, Any]:
    """The config keys that run this agent and guard in `project`."""
    script = project.harness / "second_attempt_agent.py"
    script.write_text(AGENT, encoding="utf-8")
    return {"agent_command": [PYTHON, str(script)], "guard_command": ["sh", "-c", GUARD]}


def seen(project: Project) -> list[dict[str, Any]]:
    """What each run of the agent found in its checkout, in the order they ran."""
    text = (project.harness / "seen.log").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]
