"""The judging order end to end: the import is decided, and
its blobs taken, before the guard runs; what the guard writes while judging is never imported,
and a refused import is never judged.

A real step in a real repository: the scripted agent writes `src/work.py`; the guard (a shell
script run in the agent's checkout) rewrites that file, adds one of its own and passes. The
iteration's commit holds the agent's bytes, not the guard's.
"""

from __future__ import annotations

import re

from tests.helpers.e2e import PYTHON, Project, node

AGENT = (
    "import json, os, pathlib\n"
    "pathlib.Path('src').mkdir(exist_ok=True)\n"
    "pathlib.Path('src/work.py').write_text('agent\\n')\n"
    "pathlib.Path('tests').mkdir(exist_ok=True)\n"
    "if os.environ.get('WEAKEN'):\n"
    "    pathlib.Path('tests/test_a.py').write_text('def test_a():\\n    pass\\n')\n"
    "pathlib.Path(os.environ['RUNNER_OUTPUT_PATH']).write_text("
    "json.dumps({'status': 'done', 'summary': 'did it'}))\n"
)
GUARD = (
    "echo guard > src/work.py; echo planted > guard_planted.txt; "
    'echo ran >> "$HARNESS/guard_runs"; exit 0'
)


def _setup(project: Project, *guard_lines: str) -> None:
    agent = project.harness / "agent.py"
    agent.write_text(AGENT, encoding="utf-8")
    # WEAKEN and HARNESS passed on by name: the environment is an allow-list also unsandboxed.
    project.set_config(
        agent_command=[PYTHON, str(agent)],
        guard_command=["sh", "-c", GUARD],
        sandbox={"env": ["WEAKEN"]},
    )
    text = project.config_path.read_text(encoding="utf-8")
    extra = "".join(f"{line}\n" for line in (*guard_lines, 'env = ["HARNESS"]'))
    text = re.sub(r"(\[guard\]\ncommand = .*\n)", lambda m: m.group(1) + extra, text)
    project.config_path.write_text(text, encoding="utf-8")
    project.env["HARNESS"] = str(project.harness)
    tests = project.root / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text("def test_a():\n    assert 1\n", encoding="utf-8")
    project.prepare(node("root", title="Do it"))


def test_what_the_guard_writes_while_judging_is_never_imported(project: Project) -> None:
    _setup(project)

    assert project.runner("step", timeout=120).returncode == 0

    assert project.meta(1)["guard"] == "pass"
    assert project.git("show", "HEAD:src/work.py") == "agent\n"
    assert "guard_planted.txt" not in project.git("ls-tree", "-r", "--name-only", "HEAD")
    assert (project.harness / "guard_runs").read_text(encoding="utf-8") == "ran\n"


def test_a_refused_import_runs_no_guard_and_shows_no_test_figures(project: Project) -> None:
    _setup(project, 'protected = ["tests/**"]')
    project.env["WEAKEN"] = "1"

    project.runner("step", timeout=120)

    meta = project.meta(1)
    assert meta["error_kind"] == "agent"
    assert "changed protected test file 'tests/test_a.py'" in meta["error"]
    assert meta["guard"] == "skipped"
    assert meta.get("tests") is None
    assert not (project.harness / "guard_runs").exists()
    assert not (project.iter_dir(1) / "guard.log").exists()
    history = project.runner("history").stdout
    assert "tests=" not in history and "/1 +" not in history


# ---------------------------------------------------------------- failures the agent can act on

FIRST_WRONG = (
    "import json, os, pathlib\n"
    "tried = pathlib.Path(os.environ['HARNESS']) / 'tried'\n"
    "body = 'text.lower()' if not tried.exists() else '\"-\".join(text.lower().split())'\n"
    "tried.write_text('x')\n"
    "pathlib.Path('slug.py').write_text(f'def slugify(text):\\n    return {body}\\n')\n"
    "pathlib.Path(os.environ['RUNNER_OUTPUT_PATH']).write_text("
    "json.dumps({'status': 'done', 'summary': 'wrote slugify'}))\n"
)


def test_the_failing_assertion_reaches_failure_md_and_the_next_prompt_once(
    project: Project,
) -> None:
    agent = project.harness / "agent.py"
    agent.write_text(FIRST_WRONG, encoding="utf-8")
    guard = (
        f'PYTHONDONTWRITEBYTECODE=1 exec "{PYTHON}" -m pytest -q -p no:cacheprovider'
        ' --junitxml="$RUNNER_GUARD_REPORT" tests'
    )
    # HARNESS passed on to the agent by name (the environment is an allow-list).
    project.set_config(
        agent_command=[PYTHON, str(agent)],
        guard_command=["sh", "-c", guard],
        sandbox={"env": ["HARNESS"]},
    )
    text = project.config_path.read_text(encoding="utf-8")
    text = re.sub(r"(\[guard\]\ncommand = .*\n)", lambda m: m.group(1) + 'mode = "ratchet"\n', text)
    project.config_path.write_text(text, encoding="utf-8")
    project.env["HARNESS"] = str(project.harness)
    (project.root / "slug.py").write_text("def slugify(text):\n    raise NotImplementedError\n")
    (project.root / "tests").mkdir()
    (project.root / "tests" / "test_slug.py").write_text(
        "from slug import slugify\n\n\ndef test_slugify():\n"
        "    assert slugify('Hello World') == 'hello-world'\n",
        encoding="utf-8",
    )
    project.prepare({**node("root", title="Slugify"), "acceptance": ["test: *TEST_SLUGIFY"]})

    project.runner("step", timeout=120)
    project.runner("step", timeout=120)

    assert project.meta(1)["guard"] == "fail"
    assert project.meta(2)["guard"] == "pass"
    log = (project.iter_dir(1) / "guard.log").read_text(encoding="utf-8")
    assert "=== failing tests ===\n--- tests.test_slug::test_slugify (failed)\n" in log
    prompt = (project.iter_dir(2) / "prompt.md").read_text(encoding="utf-8")
    assertion = "AssertionError: assert 'hello world' == 'hello-world'"
    assert prompt.count(assertion) == 1, prompt
    assert prompt.count("--- tests.test_slug::test_slugify (failed)") == 1
    # The runner's note comes before the guard's own output in the failure section.
    failure = prompt.split("## Guard failure of the previous attempt\n", 1)[1]
    assert failure.index("=== ratchet ===") < failure.index("=== failing tests ===")
    assert ".git/runner/slots" not in prompt


# ---------------------------------------------------------------- honest accounting


def test_max_agent_iterations_counts_only_iterations_whose_agent_answered(
    project: Project,
) -> None:
    # A night's budget is spent on agent work, not on runner errors.
    loop = {"runner_error_backoff_secs": [0], "max_agent_iterations": 2}
    run = project.prepare(node("root", max_attempts=9), loop=loop)
    done = {"status": "done", "summary": "did it"}
    project.agent_script({1: {"exit": 5}, 2: {"output": done}, 3: {"output": done}})
    project.guard_script([{"exit": 1}])

    result = project.runner("loop", timeout=120)

    out = result.stdout.splitlines()
    assert out[0] == f"loop: step run={run} iter=1 node=root status=runner_error guard=skipped"
    assert out[-1].startswith(f"loop: status=budget run={run} budget=agent_iterations spent=2")
    assert project.run_state()["next_iter"] == 4  # iteration 1, a runner error, is not counted
    assert result.returncode == 1
