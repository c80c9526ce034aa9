"""The failure section reaches the real CLIs' model: an executor whose guard failed on a JUnit
report is run again, and the request the real Codex CLI or Claude Code sends to the scripted
model on loopback holds the failing test's id and the message of its assertion, as the report
had them (README, "What the agent is told"). The CLIs, their configuration and the sandbox are
those of tests/e2e/test_real_agent_clis.py; skipped as it is."""

from __future__ import annotations

import json

import pytest

from tests.e2e.test_real_agent_clis import (  # noqa: F401
    FINAL,
    configure,
    pytestmark,
    user_settings,
)
from tests.helpers.e2e import Project
from tests.helpers.scripted_model import ScriptedModel

MESSAGE = "AssertionError: add(2, 2) returned 5, expected 4"
TEST_ID = "test/add.test.js::add sums two numbers"
# A guard that judges with a JUnit report and always fails the same test.
REPORT = (
    '<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="test/add.test.js"'
    ' tests="1" failures="1"><testcase classname="test/add.test.js"'
    ' name="add sums two numbers"><failure message="' + MESSAGE + '"'
    ' type="AssertionError">at Object.&lt;anonymous&gt; (test/add.test.js:4:10)</failure>'
    "</testcase></testsuite></testsuites>\n"
)
# The guard is a script of the project's, so that the prompt, which names the guard's command,
# holds nothing of its report.
GUARD = f"printf '%s' '{REPORT}' > \"$RUNNER_GUARD_REPORT\"\nexit 1\n"


@pytest.mark.parametrize("backend", ["codex", "claude"])
def test_the_real_cli_is_sent_the_failing_assertion_of_its_last_attempt(
    project: Project, backend: str
) -> None:
    model = ScriptedModel("echo 5 > add.txt", json.dumps(FINAL))
    configure(project, backend, model)
    text = project.config_path.read_text(encoding="utf-8")
    (project.root / "judge.sh").write_text(GUARD, encoding="utf-8")
    guard = json.dumps(["sh", "judge.sh"])
    start = text.index("\n[guard]\n")
    line_end = text.index("\n", text.index("command = ", start))
    text = text[: text.index("command = ", start)] + f"command = {guard}" + text[line_end:]
    project.config_path.write_text(text, encoding="utf-8")
    project.commit_setup("a guard that judges with JUnit")
    path = {"codex": "/v1/responses", "claude": "/v1/messages"}[backend]
    sent = []
    with model:
        user_settings(project, backend, model)
        for _ in range(2):
            result = project.runner("step", timeout=90)
            assert result.returncode == 0, (result.stdout, result.stderr)
            record = project.meta(project.run_state()["next_iter"] - 1)
            assert (record["node_id"], record["guard"]) == ("root.1", "fail"), record
            sent.append(len(model.model_requests(path)))

    turns = [json.dumps(request["body"]) for request in model.model_requests(path)]
    first, second = "".join(turns[: sent[0]]), "".join(turns[sent[0] : sent[1]])
    # The model of the second attempt reads the report's failing test and its message; the
    # first attempt had nothing to read.
    assert TEST_ID.split("::")[1] in second and MESSAGE in second, second[:4000]
    assert MESSAGE not in first
