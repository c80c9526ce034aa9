"""`runner serve --snapshot FILE`: the page of the run as it stands, written once."""

from __future__ import annotations

from pathlib import Path

from runner_shell.errors import UserFacingError, os_error_message
from runner_shell.git.repo import Repo
from runner_shell.store.files import atomic_write_text
from runner_shell.store.layout import RunnerPaths
from runner_shell.web.page import render_page
from runner_shell.web.serve import Api


def write_snapshot(root: Path, run: str | None, out: Path) -> None:
    """`runner serve --snapshot FILE`: the page of the run as it stands, self-contained (its
    CSS inline, no script), written at once; never takes the lock."""
    facts = Api(RunnerPaths(root), Repo(root), run).page_facts()
    page = render_page(facts, snapshot=True)
    try:
        atomic_write_text(out, page)
    except OSError as error:
        why = os_error_message(error) or str(error)
        raise UserFacingError(f"serve --snapshot: cannot write {out}: {why}") from None
