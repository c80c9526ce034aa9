"""The guard's reports outside the run's history: the one it wrote in the iteration directory,
and the baseline each commit's files are known to have.

A baseline is the report of a guard run on a commit's files; it is kept under
`<git-dir>/runner/baselines/`, out of every agent's and guard's reach, named by a digest of the
commit's top-level tree without `.runner/` (an iteration that changed only the runner's files
keeps its base's baseline). A fresh clone has none: the ratchet then measures the base commit
again. The report a guard wrote is read as untrusted input (never through a symlink, capped)
and removed once read.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from runner_core.guard.report import TestReport, report_from_json, report_to_json
from runner_shell.git.hardened import GitError, run_git
from runner_shell.git.repo import Repo
from runner_shell.guard.junit import MAX_REPORT_BYTES, GuardReportError, read_junit
from runner_shell.sandbox.seen_at import CHECKOUT
from runner_shell.store.files import (
    FileTooLarge,
    NotRegularFile,
    atomic_write_text,
    make_directory,
    read_bytes_capped,
)

BASELINES_DIR = "runner/baselines"


def _content_key(repo: Repo, sha: str) -> str | None:
    """A digest of the commit's top-level entries but `.runner`, None when git cannot say."""
    try:
        result = run_git(["ls-tree", "-z", "--full-tree", sha], repo.root, filters=repo.filters())
    except GitError:
        return None
    if result.returncode != 0:
        return None
    entries = [entry for entry in result.stdout.split(b"\0") if entry]
    kept = b"\0".join(entry for entry in entries if entry.split(b"\t", 1)[-1] != b".runner")
    return hashlib.sha256(kept).hexdigest()


def _baseline_path(repo: Repo, sha: str) -> Path | None:
    key = _content_key(repo, sha)
    return None if key is None else repo.common_path(BASELINES_DIR) / f"{key}.json"


def known_baseline(repo: Repo, sha: str) -> TestReport | None:
    """The report a guard made on commit `sha`'s files, when one was kept and still reads."""
    if not repo.common_path(BASELINES_DIR).is_dir():
        return None  # no guard ever wrote a report here: no git process spent looking
    path = _baseline_path(repo, sha)
    if path is None:
        return None
    try:
        return report_from_json(read_bytes_capped(path, MAX_REPORT_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return None  # missing or damaged: the ratchet measures the commit again


def keep_baseline(repo: Repo, sha: str, report: TestReport) -> None:
    """Keep `report` as commit `sha`'s baseline; a failure only costs a later measurement."""
    path = _baseline_path(repo, sha)
    if path is None:
        return
    try:
        make_directory(path.parent)
        atomic_write_text(path, report_to_json(report))
    except OSError:
        pass


def take_report(path: Path, checkouts: Sequence[str] = ()) -> tuple[TestReport | None, str | None]:
    """The report the guard wrote at `path` (None, None when it wrote none) or why it cannot
    be read, read in bounded memory, the `checkouts` paths in its ids written `<checkout>`;
    the file is removed either way, so a later run never reads it again."""
    try:
        return read_junit(path, checkouts), None
    except FileNotFoundError:
        return None, None
    except NotRegularFile as error:
        return None, f"{path.name} is {error.kind}, not a report file"
    except FileTooLarge:
        return None, f"{path.name} is larger than {MAX_REPORT_BYTES} bytes"
    except GuardReportError as error:
        return None, f"{path.name} {error}"
    except OSError as error:
        return None, f"{path.name} could not be read: {error.strerror or error}"
    finally:
        discard_report(path)


def checkout_paths(checkout: Path, confined: bool = False) -> tuple[str, ...]:
    """The names a guard may know its checkout by, as given and resolved, and where the
    sandbox shows it when `confined` (/checkout): each is written `<checkout>` in the
    report's ids and texts."""
    seen = {str(CHECKOUT)} if confined else set()
    return tuple(sorted({str(checkout), str(checkout.resolve()), *seen}))


def discard_report(path: Path) -> None:
    """Remove what is at `path` (a stale report, or anything the agent planted there)."""
    try:
        if os.path.lexists(path) and (path.is_symlink() or not path.is_dir()):
            path.unlink()
    except OSError:
        pass
