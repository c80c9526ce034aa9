"""git in a repository an agent may have rigged: no hooks, no filters, and a deadline.

Every git command runs with hooks disabled (core.hooksPath=/dev/null) and no fsmonitor, passed
through the environment (GIT_CONFIG_COUNT) so the command line stays git's own; the filters a
repository configures are disabled for the commit that adds the agent's files; a command past
its deadline is killed with its whole process group and reported, never waited on. Decides
nothing about what git is asked.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

GIT_TIMEOUT_SECS = 120.0

# Settings an agent could use to make a runner git command run its code.
_NEUTRAL_SETTINGS = (("core.hooksPath", "/dev/null"), ("core.fsmonitor", "false"))


class GitTimeout(Exception):
    """git did not finish before its deadline; it and its children were killed."""


def contained_env(env: Mapping[str, str] | None, filters: Iterable[str] = ()) -> dict[str, str]:
    """`env` (or ours) with git told to run no hook, fsmonitor or filter `filters` names."""
    settings = list(_NEUTRAL_SETTINGS)
    for name in filters:
        settings += [(f"filter.{name}.{key}", "") for key in ("clean", "smudge", "process")]
        settings.append((f"filter.{name}.required", "false"))
    result = dict(os.environ if env is None else env)
    start = int(result.get("GIT_CONFIG_COUNT", "0") or "0")
    for offset, (key, value) in enumerate(settings):
        result[f"GIT_CONFIG_KEY_{start + offset}"] = key
        result[f"GIT_CONFIG_VALUE_{start + offset}"] = value
    result["GIT_CONFIG_COUNT"] = str(start + len(settings))
    return result


def filter_names(config_lines: Iterable[str]) -> tuple[str, ...]:
    """The filter drivers named by `git config --get-regexp` output lines (`filter.<x>.<key> v`)."""
    names: list[str] = []
    for line in config_lines:
        key = line.partition(" ")[0]
        if key.startswith("filter.") and key.count(".") >= 2:
            name = key[len("filter.") : key.rindex(".")]
            if name not in names:
                names.append(name)
    return tuple(names)


# `[filter "x"]` or the old `[filter.x]`: the sections that define a filter driver.
_FILTER_SECTION = re.compile(r'^\s*\[\s*filter(?:\s+"([^"]*)"|\.([^\]\s]+))\s*\]', re.I | re.M)


def configured_filters(config_texts: Iterable[str]) -> tuple[str, ...]:
    """The filter drivers the repository's own config files define (read without a git
    process, so every git command can run with them disabled)."""
    names: list[str] = []
    for text in config_texts:
        for quoted, dotted in _FILTER_SECTION.findall(text):
            name = quoted or dotted
            if name not in names:
                names.append(name)
    return tuple(names)


def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    timeout: float = GIT_TIMEOUT_SECS,
    filters: Iterable[str] = (),
) -> subprocess.CompletedProcess[bytes]:
    """`git <args>` contained (`filters` disabled too); FileNotFoundError without git,
    GitTimeout past `timeout`."""
    proc = subprocess.Popen(
        ["git", *args],
        cwd=cwd,
        env=contained_env(env, filters),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # a hook or filter it starts dies with it
    )
    try:
        stdout, stderr = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise GitTimeout(f"git {' '.join(args[:2])} timed out after {timeout:g} s") from None
    except BaseException:
        _kill_group(proc)
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    proc.wait()
