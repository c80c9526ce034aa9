"""The hash chain of a run's iteration commits (`Runner-Chain`).

Decides the chain's seed and each link. The seed is sha256 of b"runner-chain-v1\\0" and the run
id in UTF-8. A link is sha256 of, in order: the previous chain value as 64 lowercase hex ASCII
bytes, b"\\n", the canonical record, b"\\n", the exact bytes of `.runner/state/tree.json` after
the iteration. The canonical record is the record's trailers as `record_trailers` renders them
(`Name: value\\n` lines in `RECORD_TRAILERS` order, optional ones left out, no `Runner-Chain`)
preceded by their byte length in decimal ASCII and b"\\n", so no record can run into the tree.
Pure computation over bytes it is given; never reads git or files.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `is_chain_value` is all a run state's reader needs of this module
    from runner_core.history.records import ExecutionRecord

CHAIN_VERSION = b"runner-chain-v1\0"
_HEX64 = re.compile(r"[0-9a-f]{64}")


def chain_seed(run_id: str) -> str:
    """The chain value of the start commit `chore(loop): start run <id>`."""
    import hashlib  # here, as in chain_link: a run state's reader loads no OpenSSL

    return hashlib.sha256(CHAIN_VERSION + run_id.encode("utf-8")).hexdigest()


def canonical_record(record: ExecutionRecord) -> bytes:
    """The record's bytes as the chain hashes them: length, newline, rendered trailers."""
    from runner_core.run.trailers import record_trailers, render_trailers

    body = render_trailers(record_trailers(record)).encode("utf-8")
    return str(len(body)).encode("ascii") + b"\n" + body


# A text tree is hashed as UTF-8 this many characters at a time: never held as str and bytes.
_SLICE_CHARS = 1 << 20


def chain_link(previous: str, record: ExecutionRecord, tree_after: bytes | str) -> str:
    """The chain value of an iteration commit, given the previous one (the tree after it as
    bytes, or as the text whose UTF-8 they are: the same value either way)."""
    if not is_chain_value(previous):
        raise ValueError(f"a chain value is 64 lowercase hex digits, got {previous!r}")
    import hashlib

    digest = hashlib.sha256()
    digest.update(previous.encode("ascii") + b"\n")
    digest.update(canonical_record(record) + b"\n")
    if isinstance(tree_after, bytes):
        digest.update(tree_after)
    else:
        for start in range(0, len(tree_after), _SLICE_CHARS):
            digest.update(tree_after[start : start + _SLICE_CHARS].encode("utf-8"))
    return digest.hexdigest()


def is_chain_value(text: str) -> bool:
    return _HEX64.fullmatch(text) is not None
