"""The cost of sealing a job's payloads (docs/temporal.md, "Sealed"), for the `temporal` group.

A job's request and its answer each cross the codec four times: sealed by the side that sends
it, opened by the workflow, sealed again into (or out of) the activity, and opened by the side
that takes it. Measured here, on this machine's CPU without the server: four seals and four
opens of a request the size of the run's tree twice over (the facts carry the tree and the run
state's copy of what the prompt needs) and of a 64 kB answer (the machine, the events, the
iteration's logs are in git, not in the answer), against the same payloads through the SDK's
plain converter. `python benchmarks/temporal_codec.py [TREE_BYTES]` prints the row alone.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time

import bench
from temporalio.converter import default as default_converter

from runner_shell.remote.keys import key_of
from runner_shell.remote.sealing import sealing_converter

ANSWER_BYTES = 64 * 1024
CROSSINGS = 4  # sent, opened by the workflow, sealed again for the activity, taken
REPEAT = 50


def _per_job(converter: object, request: str, answer: str) -> float:
    async def one_job() -> None:
        for value in (request, answer):
            for _ in range(CROSSINGS // 2):
                payloads = await converter.encode([value])  # type: ignore[attr-defined]
                await converter.decode(payloads, [str])  # type: ignore[attr-defined]

    async def timed() -> list[float]:
        times = []
        for _ in range(REPEAT):
            started = time.perf_counter()
            await one_job()
            times.append(time.perf_counter() - started)
        return times

    return statistics.median(asyncio.run(timed()))


def codec_row(tree_bytes: int) -> bench.Row:
    """Seconds per job the codec adds: the sealed converter's per-job time beside the plain."""
    request = "r" * (2 * tree_bytes)
    answer = "a" * ANSWER_BYTES
    sealed = _per_job(sealing_converter(key_of(os.urandom(32))), request, answer)
    plain = _per_job(default_converter(), request, answer)
    return bench.Row(
        metric="a job's request and answer sealed and opened (AES-256-GCM), per job",
        size=None,
        runner=sealed,
        floor=plain,
        unit="s",
        target="",
        met=None,
        note=(
            f"{CROSSINGS} crossings each of a {2 * tree_bytes} B request and a "
            f"{ANSWER_BYTES} B answer, median of {REPEAT}; floor: the SDK's plain converter"
        ),
    )


if __name__ == "__main__":
    row = codec_row(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
    print(f"{row.metric}: {row.runner * 1e3:.3f} ms (plain {row.floor * 1e3:.3f} ms)")
