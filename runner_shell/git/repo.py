"""git, through the `git` CLI (no shell): the run branch, cleanliness and one commit per step.

Reports what git says and carries out commits; decides nothing about whether a step may run
(that is runner_core.iteration.preconditions). Commits succeed without a configured identity by
falling back to a runner identity, so an unconfigured machine never fails an iteration.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from runner_shell.git.hardened import GitError as GitError
from runner_shell.git.hardened import (
    config_files,
    configured_filters,
    run_git,
    without_user_config,
)

if TYPE_CHECKING:  # imported where used: finding the repository needs neither
    from runner_core.run.outside_change import BranchSeen, GitHead

FALLBACK_NAME = "runner"
FALLBACK_EMAIL = "runner@localhost"


# How many times a commit stages the work tree when protected files change under it.
STAGING_TRIES = 5


class StagingGuard(Protocol):
    """Files a commit must not take as a stray process left them (step.protected_files)."""

    def before_staging(self) -> None:
        """Put the files back."""

    def untouched_since(self) -> bool:
        """Whether they are as put back, and unchanged since then."""


def _run(
    args: Sequence[str],
    cwd: Path,
    check: bool = True,
    env: dict[str, str] | None = None,
    filters: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    raw = run_git(args, cwd, env=env, filters=filters)
    result = subprocess.CompletedProcess(
        raw.args,
        raw.returncode,
        raw.stdout.decode("utf-8", errors="replace"),
        raw.stderr.decode("utf-8", errors="replace"),
    )
    if check and result.returncode != 0:
        raise GitError.failed(args, result.stderr or result.stdout)
    return result


def _newline_refused(path: Path) -> GitError:
    return GitError(
        f"{path}: the runner does not work in a path holding a newline, as git lists paths "
        "one a line (rename the directory)"
    )


def refuse_newline_path(path: Path) -> None:
    """git answers with one path a line, so a path holding a newline would be read as two: the
    runner would work in a directory beside the repository. Such a path is refused."""
    if "\n" in str(path):
        raise _newline_refused(path)


def open_repo(start: Path) -> Repo:
    """The repository around `start`, its work tree and git directories found by one git call."""
    result = _run(
        ["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"], start, False
    )
    if result.returncode != 0:
        raise GitError(f"{start} is not inside a git repository (run 'git init' first)")
    # Only a newline ends a line of git's answer: a path may hold any other line separator.
    answer = result.stdout.removesuffix("\n").split("\n")
    if len(answer) != 3:  # the work tree, or the git directory a .git file names, holds one
        raise _newline_refused(start.absolute())
    root, git_dir, common_dir = answer
    # A relative common directory is relative to where git ran.
    return Repo(Path(root), Path(git_dir), (start / common_dir).resolve())


# Files git keeps in the common directory of a repository with linked worktrees.
_COMMON_PREFIXES = ("refs/", "config", "packed-refs", "objects/", "hooks/")


class Repo:
    def __init__(
        self, root: Path, git_dir: Path | None = None, common_dir: Path | None = None
    ) -> None:
        self.root = root
        self._git_dir = git_dir
        self._common_dir = common_dir

    def _dirs(self) -> tuple[Path, Path]:
        if self._git_dir is None or self._common_dir is None:
            found = open_repo(self.root)
            self._git_dir, self._common_dir = found._dirs()
        return self._git_dir, self._common_dir

    def git_path(self, name: str) -> Path:
        """What `git rev-parse --git-path name` says, without a process per name."""
        git_dir, common_dir = self._dirs()
        return (common_dir if name.startswith(_COMMON_PREFIXES) else git_dir) / name

    def common_path(self, name: str) -> Path:
        """`name` in the common git directory, shared by every worktree of the repository."""
        return self._dirs()[1] / name

    def git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return _run(args, self.root, check=check, filters=self.filters())

    def filters(self) -> tuple[str, ...]:
        """The filter drivers git's config defines for the repository, read now (an agent may
        have added one): every runner git command runs with them disabled."""
        try:
            dirs: tuple[Path, Path] | None = self._dirs()
        except GitError:
            dirs = None  # before `git init`: only the user's and the system's config
        return configured_filters(config_files(dirs, without_user_config(None)), self.root)

    def has_commits(self) -> bool:
        return self.git("rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0

    def head_sha(self) -> str:
        if not self.has_commits():
            raise GitError("the repository has no commits yet; make a first commit")
        return self.git("rev-parse", "HEAD").stdout.strip()

    def file_at_head(self, path: str) -> bytes | None:
        """The exact bytes of `path` (relative to the root) in HEAD, or None if it is not there."""
        return self.file_at("HEAD", path)

    def file_at(self, ref: str, path: str) -> bytes | None:
        """The exact bytes of `path` (relative to the root) at `ref`, or None if it is not there."""
        result = run_git(["cat-file", "blob", f"{ref}:{path}"], self.root, filters=self.filters())
        return result.stdout if result.returncode == 0 else None

    def head(self) -> GitHead:
        """The checked-out branch (None when detached) and HEAD's commit, in one git call."""
        found = self.head_if_any()
        if found is None:
            raise GitError("the repository has no commits yet; make a first commit")
        return found

    def head_if_any(self) -> GitHead | None:
        """`head()`, or None before the first commit; read from git's files when they plainly
        say (runner_shell.git.head_files), else asked of git."""
        from runner_core.run.outside_change import GitHead
        from runner_shell.git.head_files import head_from_files

        found = head_from_files(*self._dirs())
        if found is not None:
            return found
        result = self.git("rev-parse", "HEAD", "--symbolic-full-name", "HEAD", check=False)
        if result.returncode != 0:
            return None
        out = result.stdout.split()
        sha, name = out[0], out[1] if len(out) > 1 else "HEAD"
        return GitHead(name.removeprefix("refs/heads/") if name != "HEAD" else None, sha)

    def branch_seen(self, before: GitHead) -> BranchSeen:
        """The checkout's HEAD now and where `before`'s branch is; when the branch moved from
        `before`'s commit, whether forward and the paths the commits between changed. Nothing
        moved costs no git process."""
        from runner_core.run.outside_change import BranchSeen

        head = self.head()
        branch = before.branch
        if branch is None or head.branch == branch:
            tip: str | None = head.sha
        else:
            found = self.git(
                "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}", check=False
            )
            tip = found.stdout.strip() or None
        if tip is None or tip == before.sha:
            return BranchSeen(head, tip)
        ancestor = self.git("merge-base", "--is-ancestor", before.sha, tip, check=False)
        if ancestor.returncode != 0:
            return BranchSeen(head, tip)
        out = self.git("diff", "--name-only", "--no-renames", "-z", before.sha, tip).stdout
        return BranchSeen(head, tip, True, tuple(path for path in out.split("\0") if path))

    def head_subject(self) -> str | None:
        if not self.has_commits():
            return None
        return self.git("log", "-1", "--format=%s").stdout.strip()

    def commit_date(self, ref: str) -> str | None:
        """The committer date of `ref` (ISO 8601), or None when there is no such commit."""
        result = self.git("log", "-1", "--format=%cI", ref, "--", check=False)
        return result.stdout.strip() or None

    def messages(self, grep: str, ref: str = "HEAD") -> tuple[str, ...]:
        """The full messages of `ref`'s commits with a line matching `grep`, oldest first."""
        if not self.has_commits():
            return ()
        out = self.git("log", "--reverse", "-z", f"--grep={grep}", "--format=%B", ref).stdout
        return tuple(message for message in out.split("\0") if message.strip())

    def current_branch(self) -> str | None:
        """The checked-out branch, or None on a detached HEAD; read from git's files when they
        plainly say (runner_shell.git.head_files), else asked of git (before a first commit)."""
        from runner_shell.git.head_files import branch_from_files

        found = branch_from_files(*self._dirs())
        if found is not None:
            return found[0]
        result = self.git("symbolic-ref", "--quiet", "--short", "HEAD", check=False)
        return result.stdout.strip() if result.returncode == 0 else None

    def operation_in_progress(self) -> str | None:
        """A merge, rebase, cherry-pick or revert that git is in the middle of."""
        markers = {
            "MERGE_HEAD": "a merge",
            "rebase-merge": "a rebase",
            "rebase-apply": "a rebase",
            "CHERRY_PICK_HEAD": "a cherry-pick",
            "REVERT_HEAD": "a revert",
        }
        for marker, name in markers.items():
            if self.git_path(marker).exists():
                return name
        return None

    def dirty_paths(self, exclude_prefix: str | None = None) -> tuple[str, ...]:
        """Changed, staged and untracked (not ignored) paths, sorted."""
        out = self.git("status", "--porcelain=v1", "-z", "--untracked-files=all").stdout
        entries = out.split("\0")
        paths: list[str] = []
        index = 0
        while index < len(entries):
            entry = entries[index]
            index += 1
            if len(entry) < 4:
                continue
            code, path = entry[:2], entry[3:]
            if code[0] in "RC":
                index += 1  # the rename's source path follows as its own entry
            if exclude_prefix is None or not path.startswith(exclude_prefix):
                paths.append(path)
        return tuple(sorted(paths))

    def branches(self, prefix: str) -> tuple[str, ...]:
        out = self.git("for-each-ref", "--format=%(refname:short)", f"refs/heads/{prefix}").stdout
        return tuple(sorted(line for line in out.splitlines() if line))

    def branch_exists(self, name: str) -> bool:
        ref = f"refs/heads/{name}"
        return self.git("show-ref", "--verify", "--quiet", ref, check=False).returncode == 0

    def checkout(self, name: str, create: bool) -> None:
        self.git("checkout", "--quiet", *(["-b"] if create else []), name)

    def identity(self) -> tuple[str, str]:
        """Who is acting, as git's configured name and email (the user's own config included:
        only these two values are read from it); the runner's identity for a value that is
        unset or could not stand in a commit header (a newline, `<`, `>`)."""
        result = run_git(
            ["config", "-z", "--get-regexp", r"^user\.(name|email)$"], self.root, user_config=True
        )
        found: dict[str, str] = {}
        for entry in result.stdout.decode("utf-8", "replace").split("\0"):
            key, _, value = entry.partition("\n")
            if value.strip() and not any(c in value for c in "<>\n\r\0"):
                found[key] = value.strip()
        return found.get("user.name", FALLBACK_NAME), found.get("user.email", FALLBACK_EMAIL)

    def actor(self) -> str:
        """Who is acting, as `Name <email>`."""
        name, email = self.identity()
        return f"{name} <{email}>"

    def _identity_env(self) -> dict[str, str]:
        """The commit's environment: the identity passed explicitly, never left to git's
        config (an environment that already names one keeps it)."""
        name, email = self.identity()
        env = dict(os.environ)
        for role in ("AUTHOR", "COMMITTER"):
            env.setdefault(f"GIT_{role}_NAME", name)
            env.setdefault(f"GIT_{role}_EMAIL", email)
        return env

    def commit_tree(self, tree: str, parents: Sequence[str], message: str) -> str:
        """A new commit of `tree` with `parents` (no ref moves), as the runner's identity when
        none is configured; its sha."""
        args = ["commit-tree", tree, *(f"-p{parent}" for parent in parents), "-m", message]
        result = _run(args, self.root, env=self._identity_env(), filters=self.filters())
        return result.stdout.strip()

    def commit_all(self, message: str, guard: StagingGuard | None = None) -> None:
        """`git add -A` and commit everything.

        With a `guard`, files a stray process may rewrite are put back before each staging and
        checked untouched after it; staged again (STAGING_TRIES at most) until they were.
        Hooks are skipped: an unattended loop must not stall on an interactive or failing
        hook, and the guard is where checks belong.
        """
        env = self._identity_env()
        for _ in range(STAGING_TRIES):
            if guard is not None:
                guard.before_staging()
            _run(["add", "-A"], self.root, env=env, filters=self.filters())
            if guard is None or guard.untouched_since():
                break
        else:
            raise GitError(
                f"runner files kept changing while they were staged ({STAGING_TRIES} tries): "
                "a process the agent left behind is rewriting them; stop it"
            )
        _run(
            ["commit", "--quiet", "--no-verify", "--allow-empty", "-m", message],
            self.root,
            env=env,
            filters=self.filters(),
        )
