"""`runner tui`: a terminal UI over a run, live as `runner serve` is, for a night over ssh.

Shows the tree (each node's state, attempts and tests), the running jobs per slot (node, role,
elapsed, last output line, worker), the event stream, and on Enter an iteration's detail (meta,
output, guard log, test changes, tree diff). Its keys do what an operator does at night — stop
after this iteration, tell, answer, node retry / skip, open in $EDITOR — each by running the
same `runner` command the operator would type, so a key is refused exactly where the CLI
refuses, in the CLI's own words. It reads the run's files as `status` and `serve` do: it never
takes the loop's lock and never writes a file itself. Textual is imported only by this module,
and `runner tui` imports it only on a terminal (elsewhere it prints `runner status`). Every
text shown is plain (rich Text): a node id or an agent's line is never read as markup.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Header, Input, Log, Static, Tree

from runner_core.views.charts import duration_text, meta_reason, parse_time
from runner_core.views.follow import event_text
from runner_core.views.status import status_to_json
from runner_shell.store.event_log import EventTail
from runner_shell.store.layout import RunnerPaths
from runner_shell.views.reading import status_reading

POLL_SECS = 0.5
EVENT_LINES = 500


def runner_argv(*args: str) -> list[str]:
    """The `runner` command line the keys run (this interpreter, this runner)."""
    return [sys.executable, "-m", "runner_shell", *args]


class Prompt(ModalScreen[str | None]):
    """One line of text for `tell` or `answer`; Escape cancels."""

    BINDINGS: ClassVar[list[Any]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label

    def compose(self) -> ComposeResult:
        yield Vertical(Static(Text(self.label)), Input(id="prompt-input"), id="prompt")

    def on_input_submitted(self, message: Input.Submitted) -> None:
        self.dismiss(message.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class RunnerTui(App[None]):
    """The run at `root`, read every POLL_SECS."""

    TITLE = "runner"
    CSS = """
    #top { height: 1fr; }
    #tree { width: 1fr; border: solid $accent; }
    #right { width: 1fr; }
    #jobs { height: 10; border: solid $accent; }
    #events { height: 1fr; border: solid $accent; }
    #detail { height: 1fr; border: solid $accent; overflow-y: auto; display: none; }
    #detail.shown { display: block; }
    #said { height: 1; }
    #prompt { width: 80; height: 7; border: solid $accent; background: $panel; }
    Prompt { align: center middle; }
    """
    BINDINGS: ClassVar[list[Any]] = [
        Binding("s", "stop", "Stop after this iteration"),
        Binding("t", "tell", "Tell"),
        Binding("a", "answer", "Answer"),
        Binding("r", "retry", "Retry node"),
        Binding("k", "skip", "Skip node"),
        Binding("e", "edit", "Open in $EDITOR"),
        Binding("escape", "close_detail", "Close detail", show=False),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root
        self.paths = RunnerPaths(root)
        self.status: dict[str, Any] | None = None
        self.history: dict[int, dict[str, Any]] = {}
        self.shape: tuple[str, ...] = ()
        self.tail: EventTail | None = None
        self.following: str | None = None
        self.last_lines: dict[int, str] = {}
        self.chosen_iteration: int | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="top"):
            yield Tree("run", id="tree")
            with Vertical(id="right"):
                yield DataTable(id="jobs", cursor_type="row")
                yield Static(id="detail")
                yield Log(id="events", max_lines=EVENT_LINES)
        yield Static(id="said")
        yield Footer()

    def on_mount(self) -> None:
        jobs = self.query_one("#jobs", DataTable)
        jobs.add_columns("slot", "iter", "node", "role", "elapsed", "last output", "worker")
        self.query_one("#tree", Tree).show_root = False
        self.refresh_run()
        self.set_interval(POLL_SECS, self.refresh_run)

    # ------------------------------------------------------------ reading the run

    def refresh_run(self) -> None:
        try:
            reading = status_reading(self.paths, _repo(self.root), lambda _line: None)
        except Exception as error:  # a run mid-change or damaged: said, read again next poll
            self.say(f"cannot read the run: {error}")
            return
        status = status_to_json(reading.view)
        self.status = status
        self.history = {r.iteration: _record_json(r) for r in reading.history.records}
        self.sub_title = _headline(status)
        self._show_tree(status)
        self._follow_events(status.get("run_id"))
        self._show_jobs(status)

    def _show_tree(self, status: dict[str, Any]) -> None:
        tree = self.query_one("#tree", Tree)
        rows = status["tree"]
        shape = tuple(f"{row['depth']}:{row['id']}" for row in rows)
        labels = {row["id"]: _node_label(row, self._tests_of(row["id"])) for row in rows}
        if shape != self.shape:
            self.shape = shape
            tree.clear()
            stack: list[Any] = [tree.root]
            for row in rows:
                del stack[row["depth"] + 1 :]
                parent = stack[row["depth"]]
                label, node_id = Text(labels[row["id"]]), row["id"]
                if row["leaf"]:
                    stack.append(parent.add_leaf(label, data=node_id))
                else:
                    stack.append(parent.add(label, data=node_id, expand=True))
            tree.root.expand_all()
            return
        for node in _walk(tree.root):
            if node.data in labels and str(node.label) != labels[node.data]:
                node.set_label(Text(labels[node.data]))

    def _tests_of(self, node_id: str) -> str:
        for record in sorted(self.history.values(), key=lambda r: -r["iter"]):
            if record["node_id"] == node_id and record.get("tests"):
                tests = record["tests"]
                return f"{tests['passed']}/{tests['total']}"
        return "-"

    def _follow_events(self, run_id: str | None) -> None:
        if run_id is None:
            return
        if run_id != self.following:
            self.following = run_id
            self.tail = EventTail(self.paths.events_log(run_id))
        assert self.tail is not None
        try:
            events, _, _ = self.tail.read()
        except OSError as error:
            self.say(f"events stopped: {error}")
            return
        log = self.query_one("#events", Log)
        for event in events:
            lines = event_text(event)
            if event.type.value == "agent_output" and lines:
                self.last_lines[event.iter] = lines[-1].removeprefix("  | ")
            tag = f"[{event.iter}] " if event.iter else ""
            log.write_lines([f"{tag}{line.strip()}" for line in lines])

    def _show_jobs(self, status: dict[str, Any]) -> None:
        table = self.query_one("#jobs", DataTable)
        jobs = list(status.get("jobs") or [])
        if not jobs and status.get("running") is not None:
            jobs = [{**status["running"], "worker": None}]
        now = datetime.now(UTC)
        table.clear()
        for job in sorted(jobs, key=lambda j: j["iteration"]):
            slot = self._slot_of(job["iteration"])
            elapsed = duration_text((now - parse_time(job["started_at"])).total_seconds())
            table.add_row(
                slot,
                str(job["iteration"]),
                job["node_id"],
                job["role"],
                elapsed,
                self.last_lines.get(job["iteration"], "")[:60],
                job.get("worker") or "-",
                key=str(job["iteration"]),
            )

    def _slot_of(self, iteration: int) -> str:
        """The slot a parallel job runs in, as its loop wrote it beside its journal (`remote`
        for a job on a worker, `-` for a one-slot run's iteration)."""
        from runner_shell.step.lock_and_journal import job_place_path
        from runner_shell.store.state_files import read_optional_text

        text = read_optional_text(job_place_path(_repo(self.root), iteration), 64)
        word = (text or "").split()[:1]
        if not word or not word[0].lstrip("-").isdigit():
            return "-"
        return "remote" if int(word[0]) < 0 else word[0]

    # ------------------------------------------------------------ the detail of an iteration

    def on_tree_node_selected(self, message: Tree.NodeSelected[Any]) -> None:
        node_id = message.node.data
        runs = [r for r in self.history.values() if r["node_id"] == node_id]
        if not runs:
            self.say(f"{node_id}: no iteration yet")
            return
        self.show_iteration(max(r["iter"] for r in runs))

    def on_data_table_row_selected(self, message: DataTable.RowSelected) -> None:
        if message.row_key.value is not None:
            self.show_iteration(int(message.row_key.value))

    def show_iteration(self, number: int) -> None:
        """`runner show N --json` and `runner diff N --json`, as the CLI reads them."""
        shown = self._cli_json("show", str(number), "--json")
        diff = self._cli_json("diff", str(number), "--json")
        self.chosen_iteration = number
        detail = self.query_one("#detail", Static)
        detail.update(Text(_detail_text(number, shown, diff)))
        detail.add_class("shown")

    def action_close_detail(self) -> None:
        self.query_one("#detail", Static).remove_class("shown")

    def _cli_json(self, *args: str) -> dict[str, Any] | str:
        done = self._run(*args)
        if done.returncode != 0:
            return done.stderr.strip()
        try:
            found: dict[str, Any] = json.loads(done.stdout)
        except ValueError:
            return done.stdout.strip()
        return found

    # ------------------------------------------------------------ keys: the CLI's commands

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            runner_argv(*args), cwd=self.root, capture_output=True, text=True, timeout=120
        )

    def command(self, *args: str) -> None:
        """Run `runner ARGS` and say its last line (its refusal, when it refuses)."""
        done = self._run(*args)
        said = (done.stdout.strip() or done.stderr.strip()).splitlines()
        self.say(said[-1] if said else f"runner {' '.join(args)}: exit {done.returncode}")
        self.refresh_run()

    def say(self, line: str) -> None:
        self.query_one("#said", Static).update(Text(line))

    def chosen_node(self) -> str | None:
        node = self.query_one("#tree", Tree).cursor_node
        return None if node is None or node.data is None else str(node.data)

    def action_stop(self) -> None:
        self.command("stop")

    def action_tell(self) -> None:
        self.push_screen(Prompt("tell every following agent:"), self._told)

    def _told(self, text: str | None) -> None:
        if text:
            self.command("tell", text)

    def action_answer(self) -> None:
        self.push_screen(Prompt("answer the open questions:"), self._answered)

    def _answered(self, text: str | None) -> None:
        if text:
            self.command("answer", text)

    def action_retry(self) -> None:
        node = self.chosen_node()
        if node is not None:
            self.command("node", "retry", node)

    def action_skip(self) -> None:
        node = self.chosen_node()
        if node is not None:
            self.command("node", "skip", node)

    def action_edit(self) -> None:
        """$EDITOR on the chosen iteration's meta.json, else on the guidance file."""
        run_id = (self.status or {}).get("run_id")
        target = self.paths.guidance
        if run_id and self.chosen_iteration is not None:
            target = self.paths.iter_dir(run_id, self.chosen_iteration) / "meta.json"
        editor = shlex.split(os.environ.get("EDITOR") or "vi")
        with self.suspend():
            subprocess.run([*editor, str(target)], cwd=self.root)
        self.say(f"edited {self.paths.relative(target)}")


def _repo(root: Path) -> Any:
    from runner_shell.git.repo import Repo

    return Repo(root)


def _walk(node: Any) -> list[Any]:
    found = []
    for child in node.children:
        found.append(child)
        found.extend(_walk(child))
    return found


def _record_json(record: Any) -> dict[str, Any]:
    from runner_core.history.execution import record_to_meta

    meta: dict[str, Any] = record_to_meta(record)
    return meta


def _node_label(row: dict[str, Any], tests: str) -> str:
    return (
        f"{row['state']:<9} {row['title']} [{row['id']}]  "
        f"att {row['attempts']}/{row['max_attempts']}  tests {tests}"
    )


def _headline(status: dict[str, Any]) -> str:
    leaves = status["leaves"]
    running = len(status.get("jobs") or []) or (1 if status.get("running") else 0)
    return (
        f"{status.get('run_id') or '(not started)'}  leaves {leaves['passed']}/{leaves['total']}"
        f"  iteration {status['next_iteration'] - 1}/{status['max_iterations']}  running {running}"
    )


def _detail_text(number: int, shown: dict[str, Any] | str, diff: dict[str, Any] | str) -> str:
    if isinstance(shown, str):
        return f"iteration {number}: {shown}"
    meta = shown.get("meta") or {}
    lines = [f"iteration {number}  ({shown.get('dir', '')})  [Escape closes]", ""]
    lines.append(
        f"node {meta.get('node_id')}  role {meta.get('role')}  status {meta.get('status')}"
        f"  guard {meta.get('guard')}  {meta.get('duration_ms', 0) / 1000:.1f}s"
    )
    reason = meta_reason(meta) if meta else None
    if reason:
        lines.append(f"why: {reason}")
    output = shown.get("output")
    if isinstance(output, dict):
        lines.append(f"output: {output.get('status', '')} {output.get('summary', '')}")
    tests = shown.get("tests")
    if tests:
        for change in tests.get("changes", []):
            before, after = change["before"] or "absent", change["after"] or "absent"
            lines.append(f"test {change['id']}: {before} -> {after}")
    for log in shown.get("logs", []):
        lines.append(f"--- {log['name']}")
        lines.extend(log["head"][-10:])
    if isinstance(diff, dict):
        lines.append(f"--- tree diff ({diff.get('source')})")
        for change in diff.get("changes", []):
            fields = ", ".join(
                f"{f['field']}: {f['old']} -> {f['new']}" for f in change.get("fields", [])
            )
            lines.append(f"{change['change']} {change['node']} {fields}".rstrip())
    return "\n".join(lines)
