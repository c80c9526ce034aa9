"""What `[sandbox] setup` made in a slot: the ignored paths it left, listed beside the slot
when it succeeded. Every reset keeps them, and the sandbox binds them read-only for every agent
and guard (runner_shell.scratch.sandbox); nothing else that is ignored survives a reset.
"""

from __future__ import annotations

import os
from pathlib import Path

# The slots' directory's name (the last part of runner_shell.scratch.slots.SLOTS_DIR).
_SLOTS_NAME = "slots"


def setup_outputs_file(slot: Path) -> Path:
    """Beside the slot: what `[sandbox] setup` made in it (top-level names, NUL-separated)."""
    return slot.parent / f"{slot.name}.setup-outputs"


def setup_outputs(work_dir: Path) -> tuple[Path, ...]:
    """The paths `[sandbox] setup` made in the slot `work_dir` (none for any other directory),
    each a directory or regular file, never a symlink."""
    if work_dir.parent.name != _SLOTS_NAME:
        return ()
    try:
        listed = setup_outputs_file(work_dir).read_bytes()
    except OSError:
        return ()
    found = (work_dir / os.fsdecode(name) for name in listed.split(b"\0") if name)
    return tuple(
        path for path in found if (path.is_dir() or path.is_file()) and not path.is_symlink()
    )
