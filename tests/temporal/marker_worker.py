"""A worker process for the lost-worker test: `python marker_worker.py ADDRESS QUEUE IDENTITY DIR`.

Its job writes `DIR/<IDENTITY>.started`, then sleeps while its heartbeats go on (killed here,
the first worker is lost) unless DIR/release exists, and answers `done by IDENTITY`. Prints
`polling` once it polls.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from runner_shell.remote.temporal import serve_jobs
from tests.temporal.workers import TEST_KEY


def main(address: str, queue: str, identity: str, directory: Path) -> None:
    def job(request_json: str, heartbeat: Callable[[str], None]) -> str:
        (directory / f"{identity}.started").write_text(request_json, encoding="utf-8")
        while not (directory / "release").exists():
            time.sleep(0.1)
        return f"done by {identity}"

    serve_jobs(
        address,
        "default",
        queue,
        identity,
        1,
        job,
        None,
        key=TEST_KEY,
        on_polling=lambda: print("polling", flush=True),
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]))
