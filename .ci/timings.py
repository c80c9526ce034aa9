"""The timing summary at the end of `.ci/run`: each pytest pass's wall time and test count, the
whole run's wall time, and the ten slowest tests of all passes (from each pass's JUnit XML).

    python .ci/timings.py TOTAL_SECS NAME=SECS:JUNIT.xml ...
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

SLOWEST = 10


def main(arguments: list[str]) -> int:
    total, *passes = arguments
    slowest: list[tuple[float, str, str]] = []
    print("ci timings:")
    for entry in passes:
        name, rest = entry.split("=", 1)
        seconds, junit = rest.split(":", 1)
        cases = (
            list(ElementTree.parse(Path(junit)).iter("testcase")) if Path(junit).exists() else []
        )
        print(f"  {name}: {int(seconds)} s wall, {len(cases)} tests")
        for case in cases:
            test = f"{case.get('classname', '')}::{case.get('name', '')}"
            slowest.append((float(case.get("time") or 0), name, test))
    minutes, seconds_left = divmod(int(total), 60)
    print(f"  .ci/run as a whole (installs, lint, types, tests): {minutes} min {seconds_left} s")
    print(f"the {SLOWEST} slowest tests:")
    for took, name, test in sorted(slowest, reverse=True)[:SLOWEST]:
        print(f"  {took:8.2f} s  {name}  {test}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
