"""What `runner show ITER` shows: one iteration's meta, output, files and the heads of its logs,
with its commit and the agent's diff stat.

Decides the `runner show --json` document and its lines from the files the shell read (from the
iteration's directory, the log archive or the commit trailers). Never reads a file or git.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from runner_core.backends.egress import Refusal
from runner_core.guard.ratchet import TestFigures
from runner_core.history.records import ExecutionRecord, record_to_meta
from runner_core.json_form import json_form, shaped
from runner_core.views.history import record_status
from runner_core.views.layout import duration_text, table, tokens_text
from runner_core.views.text import flatten


@attrs.frozen(slots=True)
class FileFacts:
    """A file of an iteration directory; `head` only for logs, never more than was read."""

    name: str
    size: int
    head: tuple[str, ...] | None = None
    truncated: bool = False


def _meta_json(meta: ExecutionRecord | None) -> dict[str, Any] | None:
    return None if meta is None else record_to_meta(meta)


def _files_json(files: Sequence[FileFacts]) -> dict[str, Any]:
    """Every file by name and size, and the heads of the logs among them."""
    return {
        "files": [{"name": facts.name, "size": facts.size} for facts in files],
        "logs": [json_form(facts) for facts in files if facts.head is not None],
    }


def network_lines(refused: Sequence[Refusal]) -> list[str]:
    """What the agent's egress proxy refused, one line each, in the order it refused them."""
    if not refused:
        return []
    return [
        f"network: {len(refused)} refused (network.log)",
        *(
            f"  refused {_endpoint(refusal.host, refusal.port)} at {refusal.at}: "
            f"{flatten(refusal.reason, 200)}"
            for refusal in refused
        ),
    ]


def _endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def iterations_text(numbers: Sequence[int]) -> str:
    """`1-5, 7`: the iterations on disk, consecutive ones as ranges."""
    spans: list[list[int]] = []
    for number in numbers:
        if spans and spans[-1][1] == number - 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans) or "none"


@attrs.frozen(slots=True)
class IterationFiles:
    """One iteration directory as `runner show` reads it: the first keys of `runner show
    --json`, with its meta, output, files and the heads of its logs."""

    run_id: str
    iteration: int = attrs.field(metadata=shaped(key="iter"))
    directory: str = attrs.field(metadata=shaped(key="dir"))
    meta: ExecutionRecord | None = attrs.field(metadata=shaped(encode=_meta_json))
    meta_problem: str | None
    output: dict[str, Any] | None
    output_problem: str | None
    files: tuple[FileFacts, ...] = attrs.field(
        metadata=shaped(inline=True, encode=_files_json, keys=("files", "logs"))
    )
    tests: Mapping[str, Any] | None = None  # tests.json, when the guard wrote a report
    # network.log: what the agent's egress proxy refused
    network: tuple[Refusal, ...] = attrs.field(default=(), metadata=shaped(key="network_refused"))


# Where a merge session's prompt, log and answer are, in the iteration's directory.
MERGER_FILES = "merger.prompt.md, merger.log, merger_output.json"


def render_show(shown: IterationFiles, with_tests: bool = False) -> list[str]:
    """`runner show ITER`'s lines; `with_tests` (`--tests`) adds every test that changed."""
    out = [f"show: run={shown.run_id} iter={shown.iteration} dir={shown.directory}"]
    meta = shown.meta
    if meta is None:
        out.append(f"meta: {shown.meta_problem}")
    else:
        out += [
            f"node: {meta.node_id} role={meta.role.value} execution={meta.execution} "
            f"backend={meta.backend}",
            f"outcome: status={record_status(meta)} guard={meta.guard.value} "
            f"attempts={meta.attempts_before}->{meta.attempts_after}",
            f"time: {meta.started_at} .. {meta.ended_at} ({duration_text(meta.duration_ms)})",
            f"tokens: in/out/cached={tokens_text(meta.tokens)} "
            f"cost_usd={'-' if meta.cost_usd is None else meta.cost_usd}",
        ]
        if meta.merge_session is not None:
            out.append(f"merge session: role=merger end={meta.merge_session} ({MERGER_FILES})")
        if meta.error_kind is not None:
            out.append(f"error: {meta.error_kind.value}: {flatten(meta.error or '', 300)}")
        if meta.tests is not None:
            out += _figures_lines(meta.tests)
    if with_tests:
        out += tests_lines(shown.tests)
    out += network_lines(shown.network)
    if shown.output is None:
        out.append(f"output: {shown.output_problem}")
    else:
        status = shown.output.get("status")
        summary = shown.output.get("summary")
        out.append(f"output: status={status}")
        if isinstance(summary, str):
            out.append(f"summary: {flatten(summary, 300)}")
    out.append("files:")
    out += table(("NAME", "BYTES"), ((f.name, str(f.size)) for f in shown.files), indent="  ")
    for facts in shown.files:
        if facts.head is None:
            continue
        out.append(f"--- {facts.name} ({facts.size} bytes) ---")
        out += list(facts.head)
        if facts.truncated:
            out.append(f"[… more in {shown.directory}/{facts.name}]")
    return out


def _figures_lines(figures: TestFigures) -> list[str]:
    lines = [
        f"tests: {figures.line()} failed={figures.failed} skipped={figures.skipped}"
        f" removed={figures.removed} flaky={len(figures.flaky)}"
    ]
    return lines + [f"ratchet: {flatten(reason, 300)}" for reason in figures.reasons]


def tests_lines(document: Mapping[str, Any] | None) -> list[str]:
    """`runner show ITER --tests`: each test whose outcome changed against the baseline
    (`absent` where it did not exist), then the flaky ones."""
    if document is None:
        return ["tests: the guard wrote no report in this iteration"]
    changes = document.get("changes", [])
    total = len(changes) + document.get("unlisted_changes", 0)
    out = [f"test changes against the baseline ({total}):"]
    out += [
        f"  {flatten(str(change['id']), 300)}: {change['before'] or 'absent'} ->"
        f" {change['after'] or 'absent'}"
        for change in changes
    ]
    unlisted = document.get("unlisted_changes", 0)
    if unlisted:
        out.append(f"  ... and {unlisted} more changes")
    out += [f"  flaky: {flatten(str(test_id), 300)}" for test_id in document.get("flaky", [])]
    return out


def _attempt(attempt: tuple[str, str] | None) -> dict[str, str] | None:
    return None if attempt is None else {"ref": attempt[0], "commit": attempt[1]}


@attrs.frozen(slots=True)
class CommitFacet:
    """What `runner show` adds from git: the iteration's commit and the agent's diff stat."""

    sha: str | None = attrs.field(metadata=shaped(key="commit"))
    stat: tuple[str, ...] = attrs.field(metadata=shaped(key="agent_diff_stat"))
    # An iteration not judged a pass: its attempt ref and commit, where its files (`stat`) are.
    attempt: tuple[str, str] | None = attrs.field(default=None, metadata=shaped(encode=_attempt))

    def lines(self) -> list[str]:
        if self.sha is None:
            return ["commit: none found on the run's branch"]
        if self.attempt is not None:
            ref, commit = self.attempt
            return [
                f"commit: {self.sha}",
                f"attempt: {ref} {commit} (the agent's files, not on the run branch)",
                "agent diff stat:",
                *(f"  {line}" for line in self.stat),
            ]
        return [f"commit: {self.sha}", "agent diff stat:", *(f"  {line}" for line in self.stat)]


@attrs.frozen(slots=True)
class ShowDocument:
    """`runner show ITER --json` (schemas/views/show.schema.json); `runner serve` sends it too."""

    files: IterationFiles = attrs.field(metadata=shaped(inline=True))
    commit: CommitFacet = attrs.field(metadata=shaped(inline=True))
