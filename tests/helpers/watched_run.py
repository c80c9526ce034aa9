"""A scripted four-slot run to watch: eight leaves `n1`…`n8` in four slots, each agent sleeping
and reporting tokens and cost, a guard writing a JUnit report (leaf k's test passes once its
file is there), and `n3` asking for a retry on its first attempt. The pictures, the TUI and
the truth of what serve says are tested on it."""

from __future__ import annotations

import json
import sys

from tests.e2e.test_parallel_loop import NODE_AGENT, _flat_tree
from tests.helpers.e2e import Project

LEAVES = tuple(f"n{index}" for index in range(1, 9))
SLOTS = 4

_SLEEP = 'time.sleep(action.get("sleep", 0))'
assert _SLEEP in NODE_AGENT
# The node agent, also reporting its usage (every run: 1,000 tokens in, 200 out, $0.05).
AGENT = NODE_AGENT.replace(
    _SLEEP,
    _SLEEP + "\nPath(os.environ['RUNNER_USAGE_PATH']).write_text(json.dumps("
    "{'input_tokens': 1000, 'output_tokens': 200, 'cost_usd': 0.05}))",
)

# One test per leaf in a JUnit report: it passes once the leaf's file is in the work tree.
GUARD = r"""
import json, os
from pathlib import Path
from xml.sax.saxutils import quoteattr
leaves = json.loads(Path(os.environ["RUNNER_TEST_HARNESS"], "leaves.json").read_text())
cases = []
for leaf in leaves:
    name = quoteattr(f"test_{leaf}")
    if Path(f"{leaf}.txt").exists():
        cases.append(f'<testcase classname="suite" name={name}/>')
    else:
        failure = '<failure message="missing"/>'
        cases.append(f'<testcase classname="suite" name={name}>{failure}</testcase>')
report = f'<testsuite name="suite" tests="{len(cases)}">{"".join(cases)}</testsuite>'
Path(os.environ["RUNNER_GUARD_REPORT"]).write_text(report, encoding="utf-8")
"""


def four_slot_run(project: Project, seconds: float, leaves: tuple[str, ...] = LEAVES) -> None:
    """Prepare the run: `leaves` in `SLOTS` slots, each agent sleeping `seconds`."""
    (project.harness / "node_agent.py").write_text(AGENT, encoding="utf-8")
    (project.harness / "node_guard.py").write_text(GUARD, encoding="utf-8")
    (project.harness / "leaves.json").write_text(json.dumps(list(leaves)), encoding="utf-8")
    actions = {leaf: [{"files": {f"{leaf}.txt": f"{leaf}\n"}, "sleep": seconds}] for leaf in leaves}
    actions["n3"] = [{"sleep": seconds, "status": "retry"}, *actions["n3"]]
    (project.harness / "nodes.json").write_text(json.dumps(actions), encoding="utf-8")
    project.prepare(
        _flat_tree(list(leaves)),
        agent_command=[sys.executable, str(project.harness / "node_agent.py")],
        guard_command=[sys.executable, str(project.harness / "node_guard.py")],
        parallel={"slots": SLOTS},
    )
