"""git in a repository an agent may have rigged: no hooks, no filters, and a deadline.

Every git command reads no system or global config (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL),
and runs with the settings below fixed through the environment (GIT_CONFIG_COUNT, the same
level as `-c`, so the command line stays git's own): no hooks, fsmonitor, signing or automatic
maintenance; commit messages kept verbatim in UTF-8 with `#` as the comment character; every
filter driver git's config defines disabled (an agent may define one and name it in
.gitattributes). A command past its deadline is killed with its whole process group and
reported, never waited on. Decides nothing about what git is asked.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from runner_shell.store.files import read_bytes_capped

GIT_TIMEOUT_SECS = 120.0

# Settings an agent could use to make a runner git command run its code, or to change what a
# commit's message, signature or object becomes.
_NEUTRAL_SETTINGS = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.bare", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("commit.cleanup", "verbatim"),
    ("core.commentChar", "#"),
    ("i18n.commitEncoding", "UTF-8"),
    ("i18n.logOutputEncoding", "UTF-8"),
    ("maintenance.auto", "false"),
    ("gc.auto", "0"),
)


class GitError(Exception):
    """A git command failed; str() is one line naming the command and git's complaint."""

    @classmethod
    def failed(cls, args: Sequence[str], complaint: str) -> GitError:
        """`git <args>` exited non-zero; `complaint` is what it printed."""
        lines = [line.strip() for line in complaint.strip().splitlines() if line.strip()]
        return cls(f"git {' '.join(args[:2])} failed: {lines[0] if lines else 'no message'}")


class GitTimeout(GitError):
    """git did not finish before its deadline; it and its children were killed."""


def without_user_config(env: Mapping[str, str] | None) -> dict[str, str]:
    """`env` (or ours) with git told to read neither the system's nor the user's config."""
    result = dict(os.environ if env is None else env)
    result.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    result.pop("GIT_CONFIG_SYSTEM", None)
    return result


def contained_env(
    env: Mapping[str, str] | None, filters: Iterable[str] = (), user_config: bool = False
) -> dict[str, str]:
    """`env` (or ours) with git told to run no hook, fsmonitor or filter `filters` names, and
    to read no system or global config unless `user_config` (only to learn the identity)."""
    settings = list(_NEUTRAL_SETTINGS)
    for name in filters:
        settings += [(f"filter.{name}.{key}", "") for key in ("clean", "smudge", "process")]
        settings.append((f"filter.{name}.required", "false"))
    result = dict(os.environ if env is None else env) if user_config else without_user_config(env)
    start = int(result.get("GIT_CONFIG_COUNT", "0") or "0")
    for offset, (key, value) in enumerate(settings):
        result[f"GIT_CONFIG_KEY_{start + offset}"] = key
        result[f"GIT_CONFIG_VALUE_{start + offset}"] = value
    result["GIT_CONFIG_COUNT"] = str(start + len(settings))
    return result


# `[filter "x"]` (a quote or backslash escaped with a backslash) or the old `[filter.x]`, whose
# name git lowercases: the sections that define a filter driver. Found anywhere, not only at a
# line's start (after a byte-order mark): a name too many only disables a driver that is not there.
_FILTER_SECTION = re.compile(r'\[\s*filter\s*(?:"((?:[^"\\\n]|\\.)*)"|\.([^\]\s]+))\s*\]', re.I)
# `[include]` and `[includeIf "..."]` name more files; only git knows which and what they hold.
_INCLUDE_SECTION = re.compile(r"\[\s*include", re.I)
# A config file is small; past this size it is git that is asked what it defines.
_CONFIG_MAX_BYTES = 4 * 1024 * 1024
_TRUE = ("1", "true", "yes", "on")


def config_files(repository: tuple[Path, Path] | None, env: Mapping[str, str]) -> tuple[Path, ...]:
    """The files git reads its config from, as `env` sets them: system (Debian's place), global
    (XDG, then ~/.gitconfig) and, given its (git, common) directories, the repository's own."""
    files: list[Path] = []
    if env.get("GIT_CONFIG_NOSYSTEM", "").lower() not in _TRUE:
        files.append(Path(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"))
    home = env.get("HOME")
    if "GIT_CONFIG_GLOBAL" in env:
        if env["GIT_CONFIG_GLOBAL"] != os.devnull:  # the hardened setting: no global config
            files.append(Path(env["GIT_CONFIG_GLOBAL"]))
    elif home:
        files.append(Path(env.get("XDG_CONFIG_HOME") or f"{home}/.config", "git", "config"))
        files.append(Path(home, ".gitconfig"))
    if repository is not None:
        git_dir, common_dir = repository
        files += [common_dir / "config", git_dir / "config.worktree"]
    return tuple(files)


def configured_filters(files: Iterable[Path], cwd: Path) -> tuple[str, ...]:
    """The filter drivers the config `files` define, for every git command to run with them
    disabled. Read from the files' text, with no git process; git itself is asked (`git config
    --includes`) when the text cannot tell: a file includes another, or is a symlink, a FIFO,
    too large or unreadable."""
    texts: list[str] = []
    for path in files:
        try:
            texts.append(os.fsdecode(read_bytes_capped(path, _CONFIG_MAX_BYTES)))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return _unique([*_filters_in(texts), *_filters_git_reads(cwd)])
    found = _filters_in(texts)
    if any(_INCLUDE_SECTION.search(text) for text in texts):
        return _unique([*found, *_filters_git_reads(cwd)])
    return found


def _filters_in(config_texts: Iterable[str]) -> tuple[str, ...]:
    names: list[str] = []
    for text in config_texts:
        for quoted, dotted in _FILTER_SECTION.findall(text):
            names.append(re.sub(r"\\(.)", r"\1", quoted) if quoted else dotted.lower())
    return _unique(names)


def _filters_git_reads(cwd: Path) -> tuple[str, ...]:
    """The filter drivers in git's own reading of its config, includes followed."""
    args = ["config", "--includes", "--name-only", "-z", "--get-regexp", r"^filter\."]
    keys = os.fsdecode(run_git(args, cwd).stdout).split("\0")
    return _unique(key[len("filter.") : key.rindex(".")] for key in keys if key.count(".") >= 2)


def _unique(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    timeout: float = GIT_TIMEOUT_SECS,
    filters: Iterable[str] = (),
    user_config: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """`git <args>` contained (`filters` disabled too); GitError without git, GitTimeout past
    `timeout`. A non-zero exit is the caller's to judge."""
    try:
        proc = subprocess.Popen(
            ["git", *args],
            cwd=cwd,
            env=contained_env(env, filters, user_config),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a hook or filter it starts dies with it
        )
    except FileNotFoundError:
        raise GitError("git is not installed or not on PATH") from None
    try:
        stdout, stderr = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise GitTimeout(f"git {' '.join(args[:2])} timed out after {timeout:g} s") from None
    except BaseException:
        _kill_group(proc)
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def start_git(
    args: Sequence[str], cwd: Path, *, filters: Iterable[str] = ()
) -> subprocess.Popen[bytes]:
    """`git <args>` contained as run_git's, left running to be spoken to through its stdin
    and stdout (flushed after each answer); its stderr goes to a private temporary file. The
    caller ends it, with `end_git`."""
    import tempfile  # here: every other git command, and so every read-only one, spares it

    env = contained_env(None, filters)
    env["GIT_FLUSH"] = "1"
    try:
        return subprocess.Popen(
            ["git", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=tempfile.TemporaryFile(),
            start_new_session=True,
        )
    except FileNotFoundError:
        raise GitError("git is not installed or not on PATH") from None


def end_git(proc: subprocess.Popen[bytes], killed: bool = False) -> None:
    """Kill `proc` and its group when `killed` (or when it does not end once its stdin is
    closed, within the usual deadline), else wait for it."""
    if killed:
        _kill_group(proc)
        return
    if proc.stdin is not None:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    if not exited_within(proc, GIT_TIMEOUT_SECS):
        _kill_group(proc)
    if proc.stdout is not None:
        proc.stdout.close()


def exited_within(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether `proc` exited (and was reaped) within `timeout` seconds. The kernel wakes the
    wait the moment it exits (a pidfd): Popen.wait polls in sleeps that grow to 50 ms, which
    a merge waiting on `git fast-import` pays at every iteration."""
    if proc.poll() is not None:
        return True
    try:
        pidfd = os.pidfd_open(proc.pid)
    except OSError:  # a kernel without pidfds: Popen.wait's polling
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=timeout)
        return proc.returncode is not None
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.poll(max(0, int(timeout * 1000)))
    finally:
        os.close(pidfd)
    return proc.poll() is not None


def kill_git(proc: subprocess.Popen[bytes]) -> None:
    """Kill `proc` and what it started, from any thread: its streams are left to its owner."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    proc.wait()
