"""A guard that judges the node's own work, end to end: a small Python package whose pytest
suite already holds failing tests for the five functions still to write.

A scripted agent really edits the source: the decomposer splits the goal into five leaves, each
naming its own test (`test: *::test_<name>`); each executor writes its function (slugify wrong
on the first attempt). In exit mode the first leaf can never pass, since the other four
functions' tests still fail; in ratchet mode the run completes with every leaf passing on the
attempt where its own test passes and nothing regressed. Then the ways an agent weakens the
guard: deleting, skipping or rewriting a passing test, breaking another leaf's test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers.e2e import PYTHON, Project, lines, node

NAMES = ("slugify", "add", "reverse", "is_even", "shout")
BODIES = {
    "slugify": 'return "-".join(text.lower().split())',
    "add": "return a + b",
    "reverse": "return text[::-1]",
    "is_even": "return n % 2 == 0",
    "shout": 'return text.upper() + "!"',
}
ARGS = {"slugify": "text", "add": "a, b", "reverse": "text", "is_even": "n", "shout": "text"}
TESTS = {
    "slugify": 'assert slugify("Hello World") == "hello-world"',
    "add": "assert add(2, 3) == 5",
    "reverse": 'assert reverse("abc") == "cba"',
    "is_even": "assert is_even(4) and not is_even(3)",
    "shout": 'assert shout("hi") == "HI!"',
}

# The agent: the decomposer names one leaf per function with its own test; an executor writes
# its function into pkg/funcs.py (slugify wrong the first time), or does what $HARNESS/trick
# says to the tests.
AGENT = r"""
import json, os, pathlib, re, sys
out = pathlib.Path(os.environ["RUNNER_OUTPUT_PATH"])
names = NAMES
if os.environ["RUNNER_ROLE"] == "decomposer":
    children = [
        {"title": f"implement {name}", "goal": f"Write {name} in pkg/funcs.py.",
         "acceptance": [f"test: *::test_{name}"], "next": "execute"}
        for name in names
    ]
    out.write_text(json.dumps({"summary": "one leaf per function", "children": children}))
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
funcs = pathlib.Path("pkg/funcs.py")
text = funcs.read_text()
body = BODIES[name]
tried = pathlib.Path("notes") / f"{name}.tried"
if name == "slugify" and not tried.exists():
    body = "return text.lower()"  # wrong: spaces stay
tried.parent.mkdir(exist_ok=True)
tried.write_text("tried\n")
text = re.sub(rf"(def {name}\(.*\):\n)    .*\n", lambda m: m.group(1) + "    " + body + "\n", text)
funcs.write_text(text)
trick = pathlib.Path(os.environ["HARNESS"]) / "trick.py"
if trick.exists():
    exec(trick.read_text())
out.write_text(json.dumps({"status": "done", "summary": f"wrote {name}"}))
"""


def _write_package(project: Project) -> None:
    pkg = project.root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    funcs = "".join(
        f"def {name}({ARGS[name]}):\n    raise NotImplementedError\n\n\n" for name in NAMES
    )
    (pkg / "funcs.py").write_text(funcs + 'VERSION = "1.0"\n', encoding="utf-8")
    tests = project.root / "tests"
    tests.mkdir()
    body = "from pkg.funcs import VERSION, " + ", ".join(NAMES) + "\n\n\n"
    body += "def test_version():\n    assert VERSION == '1.0'\n\n\n"
    body += "".join(f"def test_{name}():\n    {TESTS[name]}\n\n\n" for name in NAMES)
    (tests / "test_funcs.py").write_text(body, encoding="utf-8")
    (project.root / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n", encoding="utf-8")


def _configure(
    project: Project, mode: str, *extra: str, slugify_right: bool = False, commit: bool = True
) -> None:
    script = project.harness / "agent.py"
    script.write_text(
        f"NAMES = {NAMES!r}\nBODIES = {BODIES!r}\n" + AGENT,
        encoding="utf-8",
    )
    guard = [
        "sh",
        "-c",
        f'PYTHONDONTWRITEBYTECODE=1 exec "{PYTHON}" -m pytest -q -p no:cacheprovider'
        ' --junitxml="$RUNNER_GUARD_REPORT" tests',
    ]
    project.set_config(
        agent_command=[PYTHON, str(script)], guard_command=guard, iteration_timeout_secs=60
    )
    text = project.config_path.read_text(encoding="utf-8")
    settings = "".join(f"{line}\n" for line in (f'mode = "{mode}"', *extra))
    text = re.sub(r"(\[guard\]\ncommand = .*\n)", lambda m: m.group(1) + settings, text)
    project.config_path.write_text(text, encoding="utf-8")
    project.env["HARNESS"] = str(project.harness)
    root = node("root", next_="decompose", title="Write the five functions")
    _write_package(project)
    if slugify_right:
        (project.root / "notes").mkdir()
        (project.root / "notes" / "slugify.tried").write_text("tried\n", encoding="utf-8")
    if commit:
        project.prepare(root)
    else:
        project.write_tree(root)


def _loop(project: Project) -> str:
    result = project.runner("loop", "--max-steps", "30", timeout=600)
    return result.stdout + result.stderr


# One slot: the first leaf's guard meets the others' unwritten functions. With several slots
# the five leaves run side by side, so no leaf waits behind the others and the run completes.
@pytest.mark.one_slot
def test_in_exit_mode_the_first_leaf_is_stuck_behind_the_others_tests(project: Project) -> None:
    _configure(project, "exit")

    output = _loop(project)

    assert "status=stuck" in output
    assert "root.1 attempts=3/3" in output or "attempts=3/3" in output


# One slot: it pins the iterations' numbers and that a later executor finds the first one's
# baseline known. With several slots the five executors start together from one commit, each
# measuring its baseline, and their retries are numbered as they are scheduled.
@pytest.mark.one_slot
def test_in_ratchet_mode_every_leaf_passes_on_the_attempt_its_own_test_passes(
    project: Project,
) -> None:
    _configure(project, "ratchet", 'protected = ["tests/**"]')

    output = _loop(project)

    assert "status=complete" in output, output
    leaves = {child["title"]: child for child in project.tree()["children"]}
    # A passing done consumes no attempt: slugify's wrong first one is its only failure.
    assert {title: leaf["attempts"] for title, leaf in leaves.items()} == {
        "implement slugify": 1,
        "implement add": 0,
        "implement reverse": 0,
        "implement is_even": 0,
        "implement shout": 0,
    }
    assert all(leaf["passes"] for leaf in leaves.values())
    # The first executor measured the base commit; later ones found its baseline known.
    assert (project.iter_dir(2) / "guard.baseline.log").is_file()
    assert not (project.iter_dir(4) / "guard.baseline.log").exists()
    slugify_first = project.meta(2)
    assert slugify_first["guard"] == "fail"
    assert slugify_first["tests"]["reasons"] == [
        "target test 'tests.test_funcs::test_slugify' failed"
    ]
    last = project.meta(7)
    assert last["tests"]["passed"] == 6 and last["tests"]["total"] == 6
    tests = json.loads((project.iter_dir(3) / "tests.json").read_text(encoding="utf-8"))
    assert {"id": "tests.test_funcs::test_slugify", "before": "failed", "after": "passed"} in tests[
        "changes"
    ]
    history = project.runner("history").stdout
    assert "2/6 +1 -0" in history
    shown = project.runner("show", "3", "--tests").stdout
    assert "tests.test_funcs::test_slugify: failed -> passed" in shown


TRICKS = {
    "deletes a passing test": (
        "p = pathlib.Path('tests/test_funcs.py')\n"
        "p.write_text(p.read_text().replace('def test_version', 'def _gone'))\n"
    ),
    "skips a passing test": (
        "p = pathlib.Path('tests/test_funcs.py')\n"
        "p.write_text('import pytest\\n' + p.read_text().replace("
        "'def test_version', '@pytest.mark.skip\\ndef test_version'))\n"
    ),
    "rewrites a passing test": (
        "p = pathlib.Path('tests/test_funcs.py')\n"
        "p.write_text(p.read_text().replace(\"VERSION == '1.0'\", \"VERSION == '2.0'\"))\n"
    ),
    "breaks a test another leaf made pass": (
        "p = pathlib.Path('pkg/funcs.py')\n"
        "p.write_text(p.read_text().replace('VERSION = \"1.0\"', 'VERSION = \"0\"'))\n"
    ),
}


WEAKENINGS = [
    *(
        (trick, True, None)
        for trick in sorted(TRICKS)
        if trick != "breaks a test another leaf made pass"
    ),
    ("deletes a passing test", False, "missing"),
    ("skips a passing test", False, "skipped"),
    ("rewrites a passing test", False, "failed"),
    ("breaks a test another leaf made pass", False, "failed"),
]


@pytest.mark.parametrize(("trick", "protect", "outcome"), WEAKENINGS)
def test_an_agent_that_weakens_the_guard_is_caught_with_a_one_line_reason(
    project: Project, trick: str, protect: bool, outcome: str | None
) -> None:
    protected = ['protected = ["tests/**"]'] if protect else []
    _configure(project, "ratchet", *protected, slugify_right=True)
    (project.harness / "trick.py").write_text(TRICKS[trick], encoding="utf-8")

    assert project.runner("step", timeout=120).returncode == 0  # the decomposition
    project.runner("step", timeout=120)

    meta = project.meta(2)
    history = project.runner("history").stdout
    if protect:
        assert meta["error_kind"] == "agent"
        assert "changed protected test file 'tests/test_funcs.py'" in meta["error"]
        assert "changed protected test file" in history
        return
    reason = f"regressed test 'tests.test_funcs::test_version' ({outcome})"
    assert meta["guard"] == "fail"
    assert meta["tests"]["reasons"] == [reason]
    assert reason in history
    assert reason in (project.iter_dir(2) / "guard.log").read_text(encoding="utf-8")


# ---------------------------------------------------------------- reports that are not ones

REPORT_GUARD = r"""
import os, pathlib, sys
kind = sys.argv[1]
path = pathlib.Path(os.environ["RUNNER_GUARD_REPORT"])
if kind == "empty":
    path.write_bytes(b"")
elif kind == "malformed":
    path.write_text("<testsuite><testcase name='a'>")
elif kind == "bomb":
    path.write_text('<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaa">'
                    '<!ENTITY b "&a;&a;&a;&a;">]><testsuite><testcase name="&b;"/></testsuite>')
elif kind == "symlink":
    path.symlink_to("/etc/passwd")
elif kind == "huge":
    with path.open("wb") as handle:
        handle.truncate(64 * 1024 * 1024 + 1)
"""

REPORT_PROBLEMS = {
    "missing": "the guard wrote no report",
    "empty": "is not well-formed XML",
    "malformed": "is not well-formed XML",
    "bomb": "holds a DTD or an entity declaration",
    "symlink": "is a symlink, not a report file",
    "huge": "is larger than 67108864 bytes",
}


def _single_leaf(project: Project, guard: list[str], mode: str = "ratchet") -> None:
    agent = project.harness / "agent.py"
    agent.write_text(
        "import json, os, pathlib\n"
        "pathlib.Path(os.environ['RUNNER_OUTPUT_PATH']).write_text("
        "json.dumps({'status': 'done', 'summary': 'did it'}))\n",
        encoding="utf-8",
    )
    project.set_config(agent_command=[PYTHON, str(agent)], guard_command=guard)
    text = project.config_path.read_text(encoding="utf-8")
    # The guard's tests find the harness through HARNESS, named as the guard's environment is an
    # allow-list.
    extra = f'mode = "{mode}"\nenv = ["HARNESS"]\n'
    text = re.sub(r"(\[guard\]\ncommand = .*\n)", lambda m: m.group(1) + extra, text)
    project.config_path.write_text(text, encoding="utf-8")
    project.prepare(node("root", title="Do it"))


@pytest.mark.parametrize("kind", sorted(REPORT_PROBLEMS))
def test_a_report_that_is_missing_or_not_one_fails_the_done_and_says_why(
    project: Project, kind: str
) -> None:
    script = project.harness / "report_guard.py"
    script.write_text(REPORT_GUARD, encoding="utf-8")
    _single_leaf(project, [PYTHON, str(script), kind])

    result = project.runner("step", timeout=120)

    assert "guard=fail" in result.stdout, result.stdout + result.stderr
    log = (project.iter_dir(1) / "guard.log").read_text(encoding="utf-8")
    assert REPORT_PROBLEMS[kind] in log
    assert "Traceback" not in result.stderr
    assert not (project.iter_dir(1) / ".guard-report.xml").exists()  # read once, then removed
    assert Path("/etc/passwd").is_file()


FLAKY_TESTS = """
import os, pathlib

def test_steady():
    assert True

def test_flaky():
    counter = pathlib.Path(os.environ["HARNESS"]) / "runs"
    runs = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(runs))
    assert runs % 2 == 1  # passes on odd runs: the baseline, then every rerun
"""


def test_a_test_that_fails_every_other_run_is_flaky_and_does_not_fail_the_leaf(
    project: Project,
) -> None:
    (project.root / "tests").mkdir()
    (project.root / "tests" / "test_flaky.py").write_text(FLAKY_TESTS, encoding="utf-8")
    (project.root / ".gitignore").write_text("__pycache__/\n", encoding="utf-8")
    project.env["HARNESS"] = str(project.harness)
    guard = [
        "sh",
        "-c",
        f'PYTHONDONTWRITEBYTECODE=1 exec "{PYTHON}" -m pytest -q -p no:cacheprovider'
        ' --junitxml="$RUNNER_GUARD_REPORT" tests',
    ]
    _single_leaf(project, guard)

    result = project.runner("step", timeout=120)

    # Baseline (run 1) passes, the judged run (2) fails, the rerun (3) passes: flaky.
    assert "guard=pass" in result.stdout, result.stdout + result.stderr
    meta = project.meta(1)
    assert meta["tests"]["flaky"] == ["tests.test_flaky::test_flaky"]
    assert (project.iter_dir(1) / "guard.rerun-1.log").is_file()
    report = project.runner("report").stdout
    assert "tests.test_flaky::test_flaky (flaked 1x)" in report
    document = json.loads(project.runner("report", "--json").stdout)
    assert document["tests"]["flaky"] == [{"id": "tests.test_flaky::test_flaky", "times": 1}]
    status = json.loads(project.runner("status", "--json").stdout)
    assert status["tests"]["last"]["flaky"] == ["tests.test_flaky::test_flaky"]


def test_start_in_ratchet_mode_records_the_first_baseline(unstarted_project: Project) -> None:
    project = unstarted_project
    _configure(project, "ratchet", commit=False)
    project.commit_setup()

    started = project.runner("start", "--here", timeout=120)

    assert started.returncode == 0, started.stderr
    assert lines(started.stdout)[-1] == "start: baseline tests=1/6 (5 not passing at the start)"
    project.runner("step", timeout=120)  # the decomposition
    project.runner("step", timeout=120)  # the first executor finds the baseline known
    assert not (project.iter_dir(2) / "guard.baseline.log").exists()
    assert project.meta(2)["tests"]["reasons"] == [
        "target test 'tests.test_funcs::test_slugify' failed"
    ]
