"""Comments and docstrings cite only what ships with the code.

A rule's source is docs/architecture.md or the README; a "SPEC §", an "issue N" or a "seed 00N"
points at a document a reader of the repository does not have, so each says the rule instead.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from tests.helpers import ROOT

PACKAGES = ("runner_core", "runner_shell", "tests", "property_tests")
OUTSIDE = re.compile(r"\bSPEC\b|\b[Ii]ssues? \d|\b[Ss]eeds? 00\d")


def docstring_lines(text: str) -> set[int]:
    """The first line of every docstring (and bare string statement) of Python source."""
    return {
        node.lineno
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def citations(text: str) -> list[str]:
    """`line: text` of every comment or docstring of Python source citing outside documents.

    Other strings are left alone: a message the runner prints is its output, not a comment.
    """
    docstrings = docstring_lines(text)
    found = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        cites = OUTSIDE.search(token.string)
        if cites and (
            token.type == tokenize.COMMENT
            or (token.type == tokenize.STRING and token.start[0] in docstrings)
        ):
            found.append(f"{token.start[0]}: {token.string.splitlines()[0][:80]}")
    return found


def sources() -> list[Path]:
    this = Path(__file__).resolve()
    return sorted(
        path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if path.resolve() != this
    )


def test_no_comment_or_docstring_cites_a_document_outside_the_repository() -> None:
    found = {
        str(path.relative_to(ROOT)): cited
        for path in sources()
        if (cited := citations(path.read_text(encoding="utf-8")))
    }
    assert found == {}


@pytest.mark.parametrize(
    "line",
    ['"""Layer 1 (SPEC §4.1)."""', "# seed 000's table", "x = 1  # issue 10 finding 4"],
)
def test_a_citation_is_found(line: str) -> None:
    assert citations(line + "\n")


def test_names_and_printed_messages_are_not_citations() -> None:
    assert citations('SPEC_TABLE = {}\nSPEC = ChildSpec()\nprint("seed 000")\n') == []
