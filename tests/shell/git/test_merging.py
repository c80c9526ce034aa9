"""A file two jobs changed, merged line by line with git's own merge-file: changes apart join,
two additions at one place both stay (the head's first), a changed line on both sides is a
conflict (runner_shell/git/merging.py, runner_core.parallel.additions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner_core.changes.import_rules import FILE_MODE, Change
from runner_shell.git.merging import carry_onto, marked_conflicts, merge_lines
from runner_shell.git.repo import Repo, open_repo
from tests.helpers.git_repos import git, new_repo

BASE = "'use strict';\n\nmodule.exports = {};\n"


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    root = tmp_path / "repo"
    new_repo(root)
    (root / "index.js").write_text(BASE)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return open_repo(root)


def blob(repo: Repo, text: str) -> str:
    return git(repo.root, "hash-object", "-w", "--stdin", stdin=text).strip()


def merged(repo: Repo, head: str, mine: str) -> str | None:
    oid = merge_lines(repo, blob(repo, BASE), blob(repo, head), blob(repo, mine))
    return None if oid is None else git(repo.root, "cat-file", "blob", oid)


def test_two_appends_to_one_file_are_both_kept_the_heads_first(repo: Repo) -> None:
    head = BASE + "exports.camelCase = require('./camelCase.js');\n"
    mine = BASE + "exports.kebabCase = require('./kebabCase.js');\n"

    assert merged(repo, head, mine) == (
        BASE
        + "exports.camelCase = require('./camelCase.js');\n"
        + "exports.kebabCase = require('./kebabCase.js');\n"
    )


def test_changes_apart_join_and_one_line_changed_on_both_sides_conflicts(repo: Repo) -> None:
    head = BASE.replace("'use strict';", '"use strict";')
    mine = BASE.replace("{}", "{ a: 1 }")

    assert merged(repo, head, mine) == '"use strict";\n\nmodule.exports = { a: 1 };\n'
    assert merged(repo, head, BASE.replace("'use strict';", "// strict")) is None


def test_a_line_that_looks_like_a_marker_is_kept_as_a_line(repo: Repo) -> None:
    head = BASE + "<<<<<<< head\n"
    mine = BASE + "=======\n>>>>>>> mine\n"

    assert merged(repo, head, mine) == BASE + "<<<<<<< head\n=======\n>>>>>>> mine\n"


def test_a_job_carried_onto_a_head_that_appended_too_conflicts_no_more(repo: Repo) -> None:
    base = repo.head_sha()
    (repo.root / "index.js").write_text(BASE + "exports.a = 1;\n")
    git(repo.root, "commit", "-qam", "the head's append")
    change = Change("index.js", FILE_MODE, blob(repo, BASE + "exports.b = 2;\n"))

    changes, conflicts = carry_onto(repo, base, repo.head_sha(), [change])

    assert conflicts == ()
    (joined,) = changes
    assert joined.oid is not None
    text = git(repo.root, "cat-file", "blob", joined.oid)
    assert text == BASE + "exports.a = 1;\nexports.b = 2;\n"


def test_a_line_conflict_is_marked_in_the_diff3_style_and_a_deletion_is_not(repo: Repo) -> None:
    base = repo.head_sha()
    (repo.root / "index.js").write_text(BASE.replace("{}", "{ a }"))
    (repo.root / "gone.js").write_text("x\n")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "the head's line")
    mine = [
        Change("index.js", FILE_MODE, blob(repo, BASE.replace("{}", "{ b }"))),
        Change("gone.js", FILE_MODE, blob(repo, "y\n")),  # added on both sides: no lines
    ]

    marked = marked_conflicts(repo, base, repo.head_sha(), mine, ["gone.js", "index.js"])

    assert [(item.path, item.mode, item.marker_length) for item in marked] == [
        ("index.js", FILE_MODE, 7)
    ]
    assert marked[0].marked.decode() == (
        "'use strict';\n\n<<<<<<< head\nmodule.exports = { a };\n||||||| base\n"
        "module.exports = {};\n=======\nmodule.exports = { b };\n>>>>>>> mine\n"
    )
