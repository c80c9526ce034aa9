"""How a process the agent controls is spawned: the one place the sandbox wraps an argv.

Every agent session, guard and slot setup command is started through `sandboxed_argv`; the
sandbox (a read-only system, `work_dir` and `writable_paths` writable, the network only when
asked) is applied here and nowhere else. Without one, the argv is spawned as given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


def sandboxed_argv(
    argv: Sequence[str],
    work_dir: Path,
    env: Mapping[str, str],
    writable_paths: Sequence[Path],
    network: bool,
) -> tuple[str, ...]:
    """The argv to spawn so that `argv` runs in `work_dir` seeing only what it may."""
    del work_dir, env, writable_paths, network  # the sandbox runtime plugs in here
    return tuple(argv)
