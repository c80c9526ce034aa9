"""git plumbing with a timeout, bytes in and bytes out, for the log archive and the audit.

Runs one `git` command in a repository and returns its stdout; never touches the index or the
work tree unless the command itself does. Decides nothing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from runner_shell.git.hardened import GIT_TIMEOUT_SECS, run_git
from runner_shell.git.repo import FALLBACK_EMAIL, FALLBACK_NAME, GitError
from runner_shell.store.files import encoded_slices

ZERO_OID = "0" * 40
# Where blobs wait, each in a private file, to be written by one git process (BlobWriter).
BLOBS_DIR = "runner/blobs"

# The archive's commits are the runner's own, whoever runs it.
RUNNER_IDENTITY = {
    "GIT_AUTHOR_NAME": FALLBACK_NAME,
    "GIT_AUTHOR_EMAIL": FALLBACK_EMAIL,
    "GIT_COMMITTER_NAME": FALLBACK_NAME,
    "GIT_COMMITTER_EMAIL": FALLBACK_EMAIL,
}


def git_bytes(
    root: Path,
    args: Sequence[str],
    stdin: bytes = b"",
    *,
    ok_codes: tuple[int, ...] = (0,),
    as_runner: bool = False,
    timeout: float = GIT_TIMEOUT_SECS,
) -> bytes:
    """stdout of `git <args>` in `root`; GitError on another exit code, a timeout or no git."""
    env = {**os.environ, **RUNNER_IDENTITY} if as_runner else None
    result = run_git(args, root, env=env, stdin=stdin, timeout=timeout)
    if result.returncode not in ok_codes:
        raise GitError.failed(args, result.stderr.decode("utf-8", "replace"))
    return result.stdout


def read_objects(
    root: Path, names: Sequence[str], kinds: tuple[bytes, ...] = (b"blob",)
) -> tuple[bytes | None, ...]:
    """The bytes of each named object (`<rev>:<path>`, a sha) through one `git cat-file --batch`;
    None when it is missing or not of one of `kinds`."""
    if not names:
        return ()
    if any("\n" in name for name in names):
        raise GitError("git cat-file: an object name holds a newline")
    out = git_bytes(root, ["cat-file", "--batch"], "".join(f"{n}\n" for n in names).encode())
    blobs: list[bytes | None] = []
    position = 0
    for _ in names:
        end = out.index(b"\n", position)
        header = out[position:end].split(b" ")
        position = end + 1
        if header[-1] == b"missing" or len(header) != 3 or header[1] not in kinds:
            blobs.append(None)
            if len(header) == 3 and header[-1].isdigit():
                position += int(header[2]) + 1
            continue
        size = int(header[2])
        blobs.append(out[position : position + size])
        position += size + 1
    return tuple(blobs)


class BlobWriter:
    """Blobs put into the object store by one `git hash-object -w --no-filters --stdin-paths`
    for them all, each one's bytes held until then in a private file under `scratch` (in the
    git directory, beyond an agent's reach): git stores exactly the bytes given."""

    def __init__(self, root: Path, scratch: Path) -> None:
        self._root = root
        self._scratch = scratch
        self._directory: Path | None = None
        self._files: list[Path] = []

    def __enter__(self) -> BlobWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)

    def add(self, data: bytes | str) -> None:
        """A blob of `data` (text: its UTF-8, written a slice at a time)."""
        if self._directory is None:
            import tempfile  # with `random`: only a writer of blobs needs them, not `validate`

            self._scratch.mkdir(parents=True, exist_ok=True)
            self._directory = Path(tempfile.mkdtemp(prefix="blobs-", dir=self._scratch))
        path = self._directory / str(len(self._files))
        with open(path, "wb") as handle:
            if isinstance(data, bytes):
                handle.write(data)
            else:
                for piece in encoded_slices(data):
                    handle.write(piece)
        self._files.append(path)

    def write(self) -> list[str]:
        """The ids of the blobs added, in order, once git has stored them all."""
        if not self._files:
            return []
        if any("\n" in str(path) for path in self._files):
            raise GitError("git hash-object: a blob's file name holds a newline")
        stdin = "".join(f"{path}\n" for path in self._files).encode()
        args = ["hash-object", "-w", "--no-filters", "--stdin-paths"]
        oids = git_bytes(self._root, args, stdin).decode().split()
        if len(oids) != len(self._files):
            raise GitError(f"git hash-object gave {len(oids)} ids for {len(self._files)} blobs")
        return oids
