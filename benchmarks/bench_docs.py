"""The benchmark's figures in the README and docs/performance.md, generated from a results file.

A generated block sits between `<!-- bench:begin NAME -->` and `<!-- bench:end -->`; the text
outside the markers is prose and is never touched. `python benchmarks/bench.py --write-docs`
measures, writes the results file (docs/performance.json) and rewrites every block from it;
`--docs-from FILE` rewrites them from a results file without measuring. The suite checks that
the blocks equal what the results file gives, so a figure typed by hand is caught.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "performance.json"
DOCUMENTS = (ROOT / "README.md", ROOT / "docs" / "performance.md")
BLOCK = re.compile(r"(<!-- bench:begin ([a-z0-9-]+) -->\n)(.*?)(<!-- bench:end -->)", re.DOTALL)


class DocsError(Exception):
    """A document names a block the results cannot fill; str() names the file and block."""


def _figure(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value * 1000:.1f} ms" if value < 10 else f"{value:.1f} s"
    if unit == "bytes":
        return f"{value / 2**20:.1f} MiB" if value >= 2**20 else f"{value / 1000:.1f} kB"
    if unit == "count":
        return f"{value:.0f}"
    if unit == "/s":
        return f"{value:.1f}/s"
    if unit == "%":
        return f"{value:.1f}%"
    return f"{value:.2f}x"


def _size(size: int | None) -> str:
    if size is None:
        return "-"
    if size < 1000:
        return str(size)
    return f"{size // 1_000_000}M" if size >= 1_000_000 else f"{size // 1000}k"


def _met(met: bool | None) -> str:
    return "-" if met is None else ("yes" if met else "NO")


def _headline(row: Mapping[str, Any]) -> str:
    """What the target is about: the ratio of two timings, else the runner's own figure."""
    if row["unit"] == "s":
        return f"{row['ratio']:.2f}x"
    return _figure(row["figure"], row["unit"])


def markdown_table(header: Sequence[str], lines: Sequence[Sequence[str]]) -> str:
    """A table whose columns line up in the source as well as on the page."""
    cells = [tuple(header), *(tuple(line) for line in lines)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    out = []
    for number, line in enumerate(cells):
        out.append(
            "| " + " | ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) + " |"
        )
        if number == 0:
            out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)


def full_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Every row: the runner's figure, its floor's, their ratio, the target and whether met."""
    return markdown_table(
        ("metric", "nodes", "runner", "floor", "ratio", "target", "met"),
        [
            (
                row["metric"],
                _size(row["size"]),
                _figure(row["runner"], row["unit"]),
                _figure(row["floor"], row["unit"]),
                f"{row['ratio']:.2f}",
                row["target"] or "-",
                _met(row["met"]),
            )
            for row in rows
        ],
    )


def measured_by(results: Mapping[str, Any]) -> str:
    """One line: the command, the machine and the commit the figures come from."""
    machine = results["machine"]
    commit = (machine.get("commit") or "")[:12] or "an unknown commit"
    dirty = " with local changes" if machine.get("dirty") else ""
    return (
        f"Measured by `{results.get('command', 'python benchmarks/bench.py')}` at {commit}"
        f"{dirty} on {machine['cpus']} CPUs, {machine['implementation']} {machine['python']}, "
        f"{machine['platform']}; {results['elapsed_s']:.0f} s."
    )


def summary(results: Mapping[str, Any]) -> str:
    """The rows that state a target: what each is about, beside the target and whether met."""
    targeted = [row for row in results["results"] if row["target"]]
    table = markdown_table(
        ("figure", "nodes", "measured", "target", "met"),
        [
            (row["metric"], _size(row["size"]), _headline(row), row["target"], _met(row["met"]))
            for row in targeted
        ],
    )
    missed = sum(row["met"] is False for row in targeted)
    return f"{measured_by(results)} Targets missed: {missed} of {len(targeted)}.\n\n{table}\n"


def blocks(results: Mapping[str, Any]) -> dict[str, str]:
    """Every generated block's text, by name."""
    return {
        "summary": summary(results),
        "table": f"{measured_by(results)}\n\n{full_table(results['results'])}\n",
    }


def render(text: str, generated: Mapping[str, str], name: str = "document") -> str:
    """`text` with every block's body replaced by its generated text."""

    def body(match: re.Match[str]) -> str:
        block = match.group(2)
        if block not in generated:
            known = ", ".join(sorted(generated))
            raise DocsError(f"{name}: no generated block named {block!r} (known: {known})")
        return f"{match.group(1)}{generated[block]}{match.group(4)}"

    return BLOCK.sub(body, text)


def load(path: Path) -> dict[str, Any]:
    results: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return results


def write_docs(results_path: Path = RESULTS, documents: Sequence[Path] = DOCUMENTS) -> list[Path]:
    """Rewrite each document's blocks from the results file; the documents that changed."""
    generated = blocks(load(results_path))
    changed = []
    for document in documents:
        text = document.read_text(encoding="utf-8")
        new = render(text, generated, str(document.relative_to(ROOT)))
        if new != text:
            document.write_text(new, encoding="utf-8")
            changed.append(document)
    return changed
