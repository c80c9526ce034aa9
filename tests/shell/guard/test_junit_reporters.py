"""Real reporters' JUnit reports, each from a real run of a suite with one failing assertion:
pytest (`--junitxml`), Node's built-in runner (`--test-reporter=junit`), Jest with jest-junit,
and Go through gotestsum (`--junitfile`). Each gives one id per test, the checkout's path written
`<checkout>`, and the failing test's message with the expected and actual values; the README's
"Designing guards" line for each is the command run here.

`.ci/run` installs node, golang, gotestsum and jest + jest-junit (under ~/.cache, outside the
clone); a machine without one skips that reporter's test and says which.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runner_core.guard.report import TestOutcome
from runner_shell.guard.baselines import checkout_paths
from runner_shell.guard.junit import read_junit

JEST_HOME = Path(os.environ.get("RUNNER_TEST_JEST", Path.home() / ".cache" / "runner-test-jest"))


def _guard(argv: list[str], checkout: Path, env: dict[str, str] | None = None) -> Path:
    """Run one guard line in `checkout` as the runner would, its report at RUNNER_GUARD_REPORT."""
    report = checkout.parent / "report.xml"
    full = {**os.environ, "RUNNER_GUARD_REPORT": str(report), **(env or {})}
    done = subprocess.run(argv, cwd=checkout, env=full, capture_output=True, timeout=120)
    assert done.returncode != 0, done.stdout.decode() + done.stderr.decode()  # one test fails
    return report


def _need(program: str) -> str:
    found = shutil.which(program)
    if found is None:
        pytest.skip(f"{program} is not installed (.ci/run installs it)")
    return found


def _checkout(tmp_path: Path, under_git: bool = True) -> Path:
    """A checkout where the runner puts its slots (`.git/runner/slots/N`)."""
    checkout = tmp_path / ".git" / "runner" / "slots" / "3" if under_git else tmp_path / "slot-3"
    checkout.mkdir(parents=True)
    return checkout


def test_pytest_junitxml(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    (checkout / "test_words.py").write_text(
        "def test_truncate():\n    assert 'hello'[:2] + '...' == 'he…'\n\n"
        "def test_ok():\n    assert True\n",
        encoding="utf-8",
    )
    line = f'{sys.executable} -m pytest -q -p no:cacheprovider --junitxml="$RUNNER_GUARD_REPORT"'
    report = read_junit(_guard(["sh", "-c", line], checkout), checkout_paths(checkout))

    assert report.outcomes() == {
        "test_words::test_ok": TestOutcome.PASSED,
        "test_words::test_truncate": TestOutcome.FAILED,
    }
    (failure,) = report.failures
    assert "assert 'he...' == 'he…'" in failure.message + failure.text


def test_node_builtin_runner(tmp_path: Path) -> None:
    _need("node")
    checkout = _checkout(tmp_path)
    (checkout / "test").mkdir()
    (checkout / "test" / "words.test.js").write_text(
        "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "test('camelCase spaces', () => { assert.strictEqual('a b', 'aB'); });\n"
        "test('ok', () => { assert.ok(true); });\n",
        encoding="utf-8",
    )
    (checkout / "test" / "broken.test.js").write_text("syntax error here(\n", encoding="utf-8")
    line = (
        'node --test --test-reporter=junit --test-reporter-destination="$RUNNER_GUARD_REPORT" test/'
    )
    report = read_junit(_guard(["sh", "-c", line], checkout), checkout_paths(checkout))

    ids = [result.id for result in report.results]
    assert "test::camelCase spaces" in ids
    assert "test::<checkout>/test/broken.test.js" in ids  # a file that fails to load
    assert not any(str(checkout) in test_id or "slots/3" in test_id for test_id in ids)
    said = {failure.id: failure for failure in report.failures}
    failure = said["test::camelCase spaces"]
    assert "'a b' !== 'aB'" in failure.message
    assert "<checkout>/test/words.test.js:3" in failure.text
    assert str(checkout) not in failure.text


def test_jest_with_jest_junit(tmp_path: Path) -> None:
    jest = JEST_HOME / "node_modules" / ".bin" / "jest"
    if not jest.exists():
        pytest.skip(f"jest is not installed under {JEST_HOME} (.ci/run installs it)")
    # Jest's file map ignores every path with a `.git` component: it finds no test in a slot
    # under .git/runner/slots (the sandbox must show the checkout elsewhere for Jest).
    checkout = _checkout(tmp_path, under_git=False)
    (checkout / "package.json").write_text('{"name": "words"}\n', encoding="utf-8")
    (checkout / "words.test.js").write_text(
        "test('truncate custom suffix', () => { expect('he...').toBe('he…'); });\n"
        "test('ok', () => { expect(1).toBe(1); });\n",
        encoding="utf-8",
    )
    line = f'JEST_JUNIT_OUTPUT_FILE="$RUNNER_GUARD_REPORT" {jest} --ci --reporters=jest-junit'
    env = {"NODE_PATH": str(JEST_HOME / "node_modules")}
    report = read_junit(_guard(["sh", "-c", line], checkout, env), checkout_paths(checkout))

    assert report.outcomes()["truncate custom suffix::truncate custom suffix"] is TestOutcome.FAILED
    (failure,) = report.failures
    assert 'Expected: "he…"' in failure.text and 'Received: "he..."' in failure.text


def test_go_through_gotestsum(tmp_path: Path) -> None:
    _need("go")
    _need("gotestsum")
    checkout = _checkout(tmp_path)
    (checkout / "go.mod").write_text("module example.com/words\n\ngo 1.19\n", encoding="utf-8")
    (checkout / "words.go").write_text(
        "package words\n\nfunc Truncate(s string, n int) string { return s }\n", encoding="utf-8"
    )
    (checkout / "words_test.go").write_text(
        'package words\n\nimport "testing"\n\n'
        "func TestTruncate(t *testing.T) {\n"
        '\tif got := Truncate("hello", 2); got != "he…" {\n'
        '\t\tt.Errorf("Truncate(hello, 2) = %q, want %q", got, "he…")\n\t}\n}\n\n'
        "func TestOk(t *testing.T) {}\n",
        encoding="utf-8",
    )
    env = {"GOCACHE": str(tmp_path / "gocache"), "GOFLAGS": "-mod=mod", "GOPROXY": "off"}
    line = 'gotestsum --junitfile "$RUNNER_GUARD_REPORT" ./...'
    report = read_junit(_guard(["sh", "-c", line], checkout, env), checkout_paths(checkout))

    assert report.outcomes() == {
        "example.com/words::TestOk": TestOutcome.PASSED,
        "example.com/words::TestTruncate": TestOutcome.FAILED,
    }
    (failure,) = report.failures
    assert 'Truncate(hello, 2) = "hello", want "he…"' in failure.text
