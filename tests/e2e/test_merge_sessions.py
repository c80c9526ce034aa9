"""Merge sessions: two parallel leaves edit one line of one file; the agent, role `merger`,
joins them on the merged head, the guard judges the result, and it is committed; a session
that gives up, or breaks its rules, leaves the later leaf to run again as a conflict.

The scripted agent: as an executor (RUNNER_ROLE=executor) it writes `nodes.json`'s files for
its leaf after `sleep` seconds; as the merger it records its prompt and the conflicted file
it found, then does what `merger.json` says: `files` ({path: text}) and `output`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Mapping
from typing import Any

import jsonschema
import pytest

from runner_shell.sandbox.status import probe
from tests.e2e.test_judging_scenarios import BODIES, CASES, FUNCTIONS
from tests.e2e.test_judging_scenarios import GUARD as NODE_GUARD
from tests.e2e.test_parallel_loop import _audit_finds_only_the_setup
from tests.e2e.test_views import json_output
from tests.helpers import SCHEMAS
from tests.helpers.e2e import Project, node

AGENT = r"""
import json, os, sys, time
from pathlib import Path

harness = Path(os.environ["RUNNER_TEST_HARNESS"])
role, node_id = os.environ["RUNNER_ROLE"], os.environ["RUNNER_NODE_ID"]
prompt = sys.stdin.read()
with open(harness / "runs.txt", "a", encoding="utf-8") as runs:
    runs.write(f"{role} {node_id}\n")
if role == "merger":
    (harness / "merger_prompt.md").write_text(prompt, encoding="utf-8")
    (harness / "merger_saw.txt").write_text(Path("shared.txt").read_text(), encoding="utf-8")
    script = json.loads((harness / "merger.json").read_text(encoding="utf-8"))
    for name, text in script.get("files", {}).items():
        Path(name).write_text(text, encoding="utf-8")
    output = script["output"]
else:
    action = json.loads((harness / "nodes.json").read_text(encoding="utf-8"))[node_id]
    for name, text in action["files"].items():
        Path(name).write_text(text, encoding="utf-8")
    time.sleep(action.get("sleep", 0))
    output = {"status": "done", "summary": f"{node_id} wrote its line"}
Path(os.environ["RUNNER_OUTPUT_PATH"]).write_text(json.dumps(output), encoding="utf-8")
"""

# Fails when `forbidden.txt` holds the line the harness's `forbid.txt` names.
GUARD = r"""
import os, sys
from pathlib import Path

harness = Path(os.environ["RUNNER_TEST_HARNESS"])
with open(harness / "guard_runs.txt", "a", encoding="utf-8") as runs:
    runs.write(Path("shared.txt").read_text().replace("\n", "|") + "\n")
forbid = harness / "forbid.txt"
if forbid.exists() and forbid.read_text() in Path("shared.txt").read_text():
    print("the merged shared.txt is refused")
    sys.exit(1)
sys.exit(0)
"""

ACTIONS = {
    "a": {"files": {"shared.txt": "head\nfrom a\ntail\n"}, "sleep": 1},
    "b": {"files": {"shared.txt": "head\nfrom b\ntail\n"}, "sleep": 1},
}


def _setup(project: Project, merger: Mapping[str, Any], sessions: bool = True) -> None:
    project.root.joinpath("shared.txt").write_text("head\nzero\ntail\n", encoding="utf-8")
    agent, guard = project.harness / "agent.py", project.harness / "guard.py"
    agent.write_text(AGENT, encoding="utf-8")
    guard.write_text(GUARD, encoding="utf-8")
    (project.harness / "nodes.json").write_text(json.dumps(ACTIONS), encoding="utf-8")
    (project.harness / "merger.json").write_text(json.dumps(merger), encoding="utf-8")
    tree = node("root", children=[node("a", order=0), node("b", order=1)])
    project.prepare(
        tree,
        agent_command=[sys.executable, str(agent)],
        guard_command=[sys.executable, str(guard)],
        parallel={"slots": 2, "merge_sessions": sessions},
    )


def _runs(project: Project) -> list[str]:
    return (project.harness / "runs.txt").read_text(encoding="utf-8").splitlines()


def _passes(project: Project) -> dict[str, tuple[bool, int]]:
    tree = json.loads(project.tree_path.read_text(encoding="utf-8"))
    return {child["id"]: (child["passes"], child["attempts"]) for child in tree["children"]}


JOINED = "head\nfrom a\nfrom b\ntail\n"
RESOLVED = {
    "files": {"shared.txt": JOINED},
    "output": {"status": "resolved", "summary": "kept both lines"},
}


def test_a_merge_session_joins_two_leaves_that_edited_one_line(project: Project) -> None:
    _setup(project, RESOLVED)
    result = project.runner("loop", timeout=120)
    assert result.returncode == 0, result.stderr
    assert _passes(project) == {"a": (True, 0), "b": (True, 0)}
    assert (project.root / "shared.txt").read_text() == JOINED
    # b ran once as an executor and once as the merger: no rerun from scratch.
    assert sorted(_runs(project)) == ["executor a", "executor b", "merger b"]
    saw = (project.harness / "merger_saw.txt").read_text()
    assert "from a\n" in saw and "from b\n" in saw and "zero\n" in saw and "<<<<<<<" in saw
    prompt = (project.harness / "merger_prompt.md").read_text()
    assert "`shared.txt`" in prompt and "MERGER" in prompt
    # The guard judged the joined file, in the merge queue's slot.
    assert "head|from a|from b|tail|" in (project.harness / "guard_runs.txt").read_text()
    meta = project.meta(2)
    assert meta["merge_session"] == "resolved" and meta["status"] == "done", meta
    assert meta["guard"] == "pass" and meta["error_kind"] is None
    assert "merge_rerun" not in meta
    assert (project.iter_dir(2) / "merger.log").exists()
    assert json.loads((project.iter_dir(2) / "merger_output.json").read_text())["status"] == (
        "resolved"
    )
    history = project.runner("history").stdout
    assert any(
        line.split()[:4] == ["2", "b", "executor", "merged"] for line in history.splitlines()
    ), history
    assert "status=merged" in result.stdout + result.stderr
    assert project.status() == ""
    # Every --json view says it the same way, each checked against its schema.
    assert json_output(project, "show", "2")["meta"]["merge_session"] == "resolved"
    shown = project.runner("show", "2").stdout.splitlines()
    assert "outcome: status=merged guard=pass attempts=0->0" in shown, shown
    assert "merge session: role=merger end=resolved (merger.prompt.md, merger.log, " in "\n".join(
        shown
    )
    rows = json_output(project, "history")["iterations"]
    assert [row.get("merge_session") for row in rows] == [None, "resolved"]
    assert "Runner-Merge-Session: resolved" in project.git("log", "-1", "--format=%B")
    _audit_finds_only_the_setup(project)
    # The events say the merger's agent ran in iteration 2, and its record how it ended.
    log = project.runner_dir / "iterations" / project.run_id / "events.jsonl"
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    schema = json.loads((SCHEMAS / "events.schema.json").read_text(encoding="utf-8"))
    for event in events:
        jsonschema.validate(event, schema)
    roles = [(e["iter"], e["role"]) for e in events if e["type"] == "agent_started"]
    assert sorted(roles) == [(1, "executor"), (2, "executor"), (2, "merger")], roles
    ended = [e for e in events if e["type"] == "iteration_finished" and e["iter"] == 2]
    assert ended[0]["meta"]["merge_session"] == "resolved"
    follow = project.runner("follow", "--since", "1")
    assert "status=merged" in follow.stdout, follow.stdout + follow.stderr


def test_a_merge_session_that_gives_up_leaves_the_leaf_to_run_again(project: Project) -> None:
    _setup(project, {"output": {"status": "gave_up", "summary": "both lines cannot hold"}})
    result = project.runner("loop", timeout=120)
    assert result.returncode == 0, result.stderr
    assert _passes(project) == {"a": (True, 0), "b": (True, 0)}
    assert (project.root / "shared.txt").read_text() == "head\nfrom b\ntail\n"
    assert _runs(project).count("executor b") == 2 and "merger b" in _runs(project)
    meta = project.meta(2)
    assert meta["merge_session"] == "gave_up" and meta["merge_rerun"] is True, meta
    error = (project.iter_dir(2) / "runner_error.log").read_text()
    assert "files do not merge" in error and "the merge session gave up: both lines" in error
    history = project.runner("history").stdout
    assert any(
        line.split()[:4] == ["2", "b", "executor", "conflict"] for line in history.splitlines()
    ), history
    assert json_output(project, "show", "2")["meta"]["merge_session"] == "gave_up"
    _audit_finds_only_the_setup(project)


def test_a_merge_session_that_changes_another_file_is_rejected(project: Project) -> None:
    merger = {
        "files": {"shared.txt": JOINED, "other.txt": "not mine\n"},
        "output": {"status": "resolved", "summary": "kept both lines"},
    }
    _setup(project, merger)
    result = project.runner("loop", timeout=120)
    assert result.returncode == 0, result.stderr
    assert not (project.root / "other.txt").exists()
    meta = project.meta(2)
    assert meta["merge_session"] == "rejected" and meta["merge_rerun"] is True, meta
    error = (project.iter_dir(2) / "runner_error.log").read_text()
    assert "changed files that did not conflict: other.txt" in error


def test_a_merge_sessions_result_the_guard_fails_is_a_conflict(project: Project) -> None:
    _setup(project, RESOLVED)
    (project.harness / "forbid.txt").write_text("from a\nfrom b\n")
    result = project.runner("loop", timeout=120)
    assert result.returncode == 0, result.stderr
    assert (project.root / "shared.txt").read_text() == "head\nfrom b\ntail\n"
    meta = project.meta(2)
    assert meta["merge_session"] == "guard_failed" and meta["merge_rerun"] is True, meta
    assert _runs(project).count("executor b") == 2


def test_without_merge_sessions_a_conflict_runs_the_leaf_again(project: Project) -> None:
    _setup(project, RESOLVED, sessions=False)
    result = project.runner("loop", timeout=120)
    assert result.returncode == 0, result.stderr
    assert "merger b" not in _runs(project)
    assert "merge_session" not in project.meta(2)


SANDBOXED_AGENT = r"""
if [ "$RUNNER_ROLE" = merger ]; then
  test -r "$RUNNER_OUTPUT_SCHEMA" || exit 3
  # The prompt names the output file where the sandboxed agent sees it.
  case "$RUNNER_OUTPUT_PATH" in /iteration/*) ;; *) exit 5 ;; esac
  grep -qF "$RUNNER_OUTPUT_PATH" || exit 6
  grep -q '^<<<<<<<' shared.txt || exit 4
  printf 'head\nfrom a\nfrom b\ntail\n' > shared.txt
  printf '{"status": "resolved", "summary": "joined"}' > "$RUNNER_OUTPUT_PATH"
  exit 0
fi
printf 'head\nfrom %s\ntail\n' "$RUNNER_NODE_ID" > shared.txt
sleep 1
printf '{"status": "done", "summary": "ok"}' > "$RUNNER_OUTPUT_PATH"
"""
BWRAP = probe()


@pytest.mark.skipif(
    BWRAP.bwrap is None and os.environ.get("CI") != "true",
    reason=f"bubblewrap is not usable here: {BWRAP.problem}",
)
def test_a_sandboxed_merge_session_reads_its_schema_and_joins_the_lines(project: Project) -> None:
    project.root.joinpath("shared.txt").write_text("head\nzero\ntail\n", encoding="utf-8")
    tree = node("root", children=[node("a", order=0), node("b", order=1)])
    project.prepare(
        tree,
        agent_command=["sh", "-c", SANDBOXED_AGENT],
        guard_command=["sh", "-c", "true"],
        parallel={"slots": 2},
        sandbox={"mode": "bwrap"},
    )
    result = project.runner("loop", timeout=120)
    assert result.returncode == 0, result.stderr
    assert (project.root / "shared.txt").read_text() == JOINED
    assert project.meta(2)["merge_session"] == "resolved", project.meta(2)


# ---------------------------------------------------------------- the Node scenario, one line
# As tests/e2e/test_judging_scenarios.py's, but each leaf rewrites the one line of
# `src/index.js` that lists the exports (not an append: a change of a base line on each side),
# so the jobs that ran beside one another conflict. The scripted merger joins the two lists.

NODE_AGENT = r"""
import json, os, pathlib, re, sys
out = pathlib.Path(os.environ["RUNNER_OUTPUT_PATH"])
harness = pathlib.Path(os.environ["HARNESS"])
role = os.environ["RUNNER_ROLE"]
prompt = sys.stdin.read()
entry = re.compile(r"(\w+): require\('\./\w+\.js'\)")
if role == "decomposer":
    children = [
        {"title": f"implement {name}", "goal": f"Write src/{name}.js and export it.",
         "acceptance": [f"test: *{name.lower()}*"], "next": "execute"}
        for name in FUNCTIONS
    ]
    out.write_text(json.dumps({"summary": "one leaf per function", "children": children}))
    sys.exit(0)
index = pathlib.Path("src/index.js")
def exports_line(names):
    inner = ", ".join(f"{n}: require('./{n}.js')" for n in names)
    return "module.exports = { " + inner + " };\n"
if role == "merger":
    with (harness / "mergers.log").open("a") as log:
        log.write(os.environ["RUNNER_NODE_ID"] + "\n")
    names = []
    for line in index.read_text().splitlines():
        for name in entry.findall(line):
            if name not in names:
                names.append(name)
    index.write_text("'use strict';\n" + exports_line(names))
    out.write_text(json.dumps({"status": "resolved", "summary": "kept every export"}))
    sys.exit(0)
tree = json.loads(pathlib.Path(".runner/state/tree.json").read_text())
def find(item):
    if item["id"] == os.environ["RUNNER_NODE_ID"]:
        return item
    for child in item["children"]:
        found = find(child)
        if found:
            return found
name = find(tree)["title"].split()[-1]
call, want = CASES[name]
pathlib.Path("test").mkdir(exist_ok=True)
pathlib.Path(f"test/{name}.test.js").write_text(
    "const test = require('node:test');\nconst assert = require('node:assert');\n"
    f"const {{ {name} }} = require('../src/index.js');\n"
    f"test('{name} works', () => {{ assert.strictEqual({call}, {want}); }});\n"
)
body = BODIES[name]
tried = harness / f"{name}.tried"
if name == "truncate" and not tried.exists():
    body = "(s, n) => s.slice(0, n) + '...'"  # wrong: the suffix
tried.write_text("tried\n")
pathlib.Path(f"src/{name}.js").write_text(f"module.exports = {body};\n")
names = [n for line in index.read_text().splitlines() for n in entry.findall(line)]
index.write_text("'use strict';\n" + exports_line([*names, name]))
out.write_text(json.dumps({"status": "done", "summary": f"wrote {name}"}))
"""


def _node_scenario(project: Project, sessions: bool) -> str:
    script = project.harness / "node_agent.py"
    script.write_text(
        f"FUNCTIONS = {FUNCTIONS!r}\nBODIES = {BODIES!r}\nCASES = {CASES!r}\n" + NODE_AGENT,
        encoding="utf-8",
    )
    project.set_config(
        agent_command=[sys.executable, str(script)],
        guard_command=["sh", "-c", NODE_GUARD],
        iteration_timeout_secs=120,
        parallel={"slots": 4, "merge_sessions": sessions},
    )
    text = project.config_path.read_text(encoding="utf-8")
    text = re.sub(r"(\[guard\]\ncommand = .*\n)", lambda m: m.group(1) + 'mode = "ratchet"\n', text)
    project.config_path.write_text(text, encoding="utf-8")
    project.env["HARNESS"] = str(project.harness)
    (project.root / "src").mkdir()
    (project.root / "src" / "index.js").write_text(
        "'use strict';\nmodule.exports = {};\n", encoding="utf-8"
    )
    (project.root / "test").mkdir()
    (project.root / "test" / "index.test.js").write_text(
        "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "test('index loads', () => { assert.ok(require('../src/index.js')); });\n",
        encoding="utf-8",
    )
    return project.prepare(node("root", next_="decompose", title="Write the string helpers"))


@pytest.mark.parametrize("sessions", [False, True], ids=["no-merge-sessions", "merge-sessions"])
def test_the_node_scenario_with_one_exports_line_keeps_its_work_through_merge_sessions(
    project: Project, sessions: bool
) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed (.ci/run installs it)")
    run = _node_scenario(project, sessions)

    result = project.runner("loop", "--max-steps", "30", timeout=900)

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith(f"loop: status=complete run={run}")
    metas = sorted(project.root.glob(".runner/iterations/*/*/meta.json"))
    records = [json.loads(path.read_text(encoding="utf-8")) for path in metas]
    reruns = [r for r in records if r.get("merge_rerun")]
    merged = [r for r in records if r.get("merge_session") == "resolved"]
    # Measured: printed for the report (pytest -s), asserted to the bound.
    print(
        f"node one-line scenario merge_sessions={sessions}: iterations={len(records)} "
        f"conflict reruns={len(reruns)} merged by a session={len(merged)}"
    )
    if sessions:
        assert reruns == [] and merged, records
    else:
        assert reruns and merged == [], records
    assert all(child["passes"] for child in project.tree()["children"])
    index = (project.root / "src" / "index.js").read_text(encoding="utf-8")
    assert all(f"{name}: require" in index for name in FUNCTIONS)
    _audit_finds_only_the_setup(project)
