"""The `runner` command (typer): parses arguments, calls the shell, prints the contract lines.

Output lines and exit codes are a contract: 0 ok / open leaf, 1 error (and the
loop's iteration limit), 2 complete, 3 stuck. Any error a user can cause ends in one line on
stderr, never a traceback; set RUNNER_DEBUG=1 to see one for a runner bug.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from runner_core.backends.registry import DEFAULT_BACKEND, backend_names
from runner_core.iteration.prompt_pack import DEFAULT_PROMPT_BUDGET
from runner_core.run.exit_codes import ExitCode
from runner_core.tree.model import Node
from runner_core.tree.selection import select_leaf
from runner_shell.cli import commands
from runner_shell.cli.base import (
    HELP_OPTIONS,
    AsJson,
    PromptBudget,
    _fail,
    _paths,
    app,
    guarded,
    node_app,
)
from runner_shell.cli.commands import failure_of
from runner_shell.cli.help_text import RunnerTyper
from runner_shell.errors import UserFacingError, failure_line, internal_error_line
from runner_shell.git.repo import GitError
from runner_shell.step.lock_and_journal import exclusive_lock

# `app` is base's, with every command of this module and steering's on it.
__all__ = ["app", "main"]


@app.command()
@guarded
def init(
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing state files.")] = False,
    guard: Annotated[
        list[str] | None,
        typer.Option(
            "--guard",
            metavar="COMMAND",
            help="Guard command: one shell-quoted string, or one --guard per word "
            "(default: just ci).",
        ),
    ] = None,
    backend: Annotated[
        str,
        typer.Option("--backend", metavar="NAME", help=f"Agent backend: one of {backend_names()}."),
    ] = DEFAULT_BACKEND,
    agent: Annotated[
        list[str] | None,
        typer.Option(
            "--agent",
            metavar="COMMAND",
            help="Agent command for backend=command: one shell-quoted string, or one --agent "
            "per word (none: a template agent is written to .runner/agent.py).",
        ),
    ] = None,
) -> None:
    """Scaffold .runner/ with a default config, a placeholder GOAL.md and a root node."""
    from runner_core import ConfigError, parse_config
    from runner_core.run.config import command_words
    from runner_core.run.template_agent import TEMPLATE_AGENT_PATH, init_agent_command
    from runner_shell.setup.command_agent import write_template_agent
    from runner_shell.setup.scaffold import init_runner, write_git_exclude

    paths, repo = _paths()
    try:
        given = command_words("--agent", tuple(agent or ()))
        agent_words, template = init_agent_command(backend, given)
        data: dict[str, object] = {"agent": {"backend": backend, "command": list(agent_words)}}
        if guard:
            data["guard"] = {"command": list(command_words("--guard", tuple(guard)))}
        config = parse_config(data)
    except ConfigError as error:
        raise UserFacingError(f"init: {error}") from None
    # `init --force` rewrites the state files under a running loop's feet unless it waits its turn.
    with exclusive_lock(repo):
        init_runner(paths, force, config)
        if template:
            write_template_agent(paths)
        write_git_exclude(repo)
    typer.echo(
        f"initialized {paths.relative(paths.runner_dir)}/ "
        "(edit .runner/GOAL.md, then run 'runner start')"
    )
    if template:
        typer.echo(f"init: agent={TEMPLATE_AGENT_PATH} (a template agent: edit it to call yours)")


@app.command()
@guarded
def start(
    new: Annotated[
        bool, typer.Option("--new", help="Start another run from GOAL.md beside existing ones.")
    ] = False,
) -> None:
    """Create or check out the run branch runner/<run-id> and commit the run's identity."""
    from runner_shell.setup.scaffold import start_run

    paths, repo = _paths()
    with exclusive_lock(repo):
        started = start_run(paths, repo, new)
    said = "already started" if started.already else "started"
    typer.echo(f"{said} run={started.run_id} branch={started.branch}")


@app.command()
@guarded
def validate(as_json: AsJson = False) -> None:
    """Check layout, config, tree and run identity."""
    # The body lives in commands.py, shared with the launcher's fast path (entry.py).
    if not as_json:
        raise typer.Exit(commands.validate(typer.echo))
    from runner_core.views.checks import validation_to_json

    lines: list[str] = []
    try:
        code = commands.validate(lines.append)
    except (UserFacingError, GitError, OSError) as error:
        failure = failure_of(error)
        if failure is None:
            raise
        # The document comes with the failure too, so a script reads one answer either way.
        typer.echo(json.dumps(validation_to_json(lines, failure[0]), indent=2))
        raise _fail(*failure) from None
    typer.echo(json.dumps(validation_to_json(lines), indent=2))
    raise typer.Exit(code)


@app.command()
@guarded
def select(as_json: AsJson = False) -> None:
    """Print the next leaf: exit 0 open, 2 complete, 3 stuck."""
    if not as_json:
        raise typer.Exit(commands.select(typer.echo))
    from runner_core.views.checks import selection_to_json
    from runner_shell.store.state_files import load_tree

    selection = select_leaf(load_tree(_paths()[0]))
    typer.echo(json.dumps(selection_to_json(selection), indent=2, ensure_ascii=False))
    raise typer.Exit(commands.selection_exit_code(selection))


@app.command()
@guarded
def step(prompt_budget: PromptBudget = DEFAULT_PROMPT_BUDGET) -> None:
    """Run one iteration: select, prompt, run the agent, validate, guard, update, log, commit."""
    raise typer.Exit(commands.step(typer.echo, prompt_budget))


@app.command()
@guarded
def loop(
    prompt_budget: PromptBudget = DEFAULT_PROMPT_BUDGET,
    max_steps: Annotated[
        int | None,
        typer.Option("--max-steps", min=1, metavar="N", help="Stop (exit 0) after N steps."),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="On a terminal, do not show the agent's live output."),
    ] = False,
) -> None:
    """Step until the tree is complete (0), a leaf is stuck (3) or the iteration limit (1)."""
    from runner_shell.loop.command import LiveProgress, run_loop

    paths, repo = _paths()
    # The live line is for a person watching; piped output stays exactly the `loop:` lines.
    live = LiveProgress(enabled=sys.stdout.isatty(), quiet=quiet)
    with exclusive_lock(repo), live:
        shown = live if live.enabled else None
        code = run_loop(paths, repo, prompt_budget, live.emit, shown, max_steps)
    if code == ExitCode.STUCK:
        # The same way out as `runner step` gives: the stuck leaf's node commands.
        from runner_core.tree.selection import select_leaf
        from runner_shell.store.state_files import load_tree

        raise _fail(commands.stuck_message(select_leaf(load_tree(paths))), code)
    raise typer.Exit(code)


@app.command()
@guarded
def recover() -> None:
    """Finish an interrupted iteration: keep the agent's changes, restore state, log it."""
    from runner_shell.step.recover import recover as recover_iteration

    paths, repo = _paths()
    with exclusive_lock(repo):
        result = recover_iteration(paths, repo)
    if result.kind is None or result.journal is None:
        typer.echo("recover: status=clean")
        return
    journal = result.journal
    killed = ",".join(str(pgid) for pgid in result.killed_groups) or "none"
    typer.echo(
        f"recover: status={result.kind.value} run={journal.run_id} iter={journal.iteration} "
        f"node={journal.node_id} killed_process_groups={killed}"
    )


@app.command()
@guarded
def demo(
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir", metavar="DIR", help="Where to build the demo repo (default: a new temp dir)."
        ),
    ] = None,
) -> None:
    """Build a throw-away repo and run init/start/loop on it with the built-in demo agent."""
    from runner_shell.setup.demo import run_demo

    raise typer.Exit(run_demo(directory))


# ---------------------------------------------------------------- the operator

NodeId = Annotated[str, typer.Argument(metavar="ID", help="The node's id.")]
FromFile = Annotated[
    Path | None,
    typer.Option("--from", metavar="FILE", help="A JSON file (see 'runner node --help')."),
]


def _node_command(op: str, node_id: str, change: Callable[[Node, int], Node]) -> None:
    from runner_core.run.operations import NodeOperation, operation_line
    from runner_shell.steer.commits import apply_node_operation

    paths, repo = _paths()
    operation = NodeOperation(op)
    applied = apply_node_operation(paths, repo, operation, node_id, change)
    typer.echo(operation_line(applied.run_id, operation, node_id, applied.before, applied.after))


@node_app.command("retry")
@guarded
def node_retry(
    node_id: NodeId,
    attempts: Annotated[
        int | None,
        typer.Option(
            "--attempts", metavar="N", help="How many more (default: max_attempts_default)."
        ),
    ] = None,
) -> None:
    """Give a node N more attempts: max_attempts = attempts used + N."""
    from runner_core.run.operations import retry_node

    def change(tree: Node, default: int) -> Node:
        return retry_node(tree, node_id, default if attempts is None else attempts)

    _node_command("retry", node_id, change)


@node_app.command("decompose")
@guarded
def node_decompose(node_id: NodeId, from_file: FromFile = None) -> None:
    """Split a node: children from FILE ({summary, children}) now, else by the decomposer."""
    from runner_core.run.operations import (
        NodeOperation,
        child_specs_from_file,
        decompose_later,
        decompose_now,
    )
    from runner_shell.steer.commits import read_operator_json, refused

    if from_file is None:
        _node_command("decompose", node_id, lambda tree, _: decompose_later(tree, node_id))
        return
    with refused():
        specs = child_specs_from_file(read_operator_json(from_file), NodeOperation.DECOMPOSE)
    _node_command(
        "decompose", node_id, lambda tree, default: decompose_now(tree, node_id, specs, default)
    )


@node_app.command("replace")
@guarded
def node_replace(
    node_id: NodeId,
    from_file: Annotated[
        Path,
        typer.Option(
            "--from", metavar="FILE", help="{title, goal, acceptance, next[, children]} as JSON."
        ),
    ],
) -> None:
    """Give an open node a new plan: its text from FILE, attempts 0, children only as given."""
    from runner_core.run.operations import plan_from_json, replace_node
    from runner_shell.steer.commits import read_operator_json, refused

    with refused():
        plan = plan_from_json(read_operator_json(from_file))
    _node_command(
        "replace", node_id, lambda tree, default: replace_node(tree, node_id, plan, default)
    )


@node_app.command("skip")
@guarded
def node_skip(node_id: NodeId) -> None:
    """Abandon an open node: remove it and its open subtree."""
    from runner_core.run.operations import skip_node

    _node_command("skip", node_id, lambda tree, _: skip_node(tree, node_id))


@app.command()
@guarded
def tell(
    text: Annotated[str | None, typer.Argument(metavar="TEXT", help="The guidance.")] = None,
    from_file: Annotated[
        Path | None,
        typer.Option("--file", metavar="F", help="Read the guidance from F (at most 1 MiB)."),
    ] = None,
    clear: Annotated[
        bool, typer.Option("--clear", help="Remove all guidance given so far (one commit).")
    ] = False,
) -> None:
    """Tell every following agent something: appended to .runner/state/guidance.md, committed."""
    from runner_shell.steer.commits import add_guidance
    from runner_shell.steer.settings import clear_guidance, read_note

    paths, repo = _paths()
    if clear:
        if text is not None or from_file is not None:
            raise UserFacingError("tell: --clear takes no TEXT or --file")
        run_id = clear_guidance(paths, repo)
        typer.echo(f"tell: run={run_id} cleared={paths.relative(paths.guidance)}")
        return
    if (text is None) == (from_file is None):
        raise UserFacingError("tell: give the guidance as TEXT or with --file F (one of them)")
    if from_file is not None:
        text = read_note(from_file, "tell")
    assert text is not None
    run_id = add_guidance(paths, repo, text)
    typer.echo(f"tell: run={run_id} file={paths.relative(paths.guidance)}")


# ---------------------------------------------------------------- read-only inspection
# These never take the lock and never write: safe to run beside a loop.

RunId = Annotated[
    str | None,
    typer.Option("--run", metavar="RUN_ID", help="Inspect this run (default: run_state's run)."),
]


@app.command()
@guarded
def status(as_json: AsJson = False) -> None:
    """Show the run, the next iteration, the selected and stuck leaves, and the tree."""
    from runner_shell.views.inspect import show_status

    show_status(*_paths(), as_json)


@app.command()
@guarded
def follow(
    run: RunId = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print JSON Lines (each event as one JSON object per line)."),
    ] = False,
    last: Annotated[
        int | None,
        typer.Option("-n", min=0, metavar="N", help="Replay the last N events, not the loop's."),
    ] = None,
    since: Annotated[
        int | None,
        typer.Option("--since", min=1, metavar="ITER", help="Replay from iteration ITER on."),
    ] = None,
) -> None:
    """Print the run's events as they happen (from another terminal): the current loop's so
    far, then each new one; exit when that loop ends, or wait for one to start."""
    from runner_core.views.follow import CurrentLoop, LastEvents, Replay, SinceIteration
    from runner_shell.views.follow import follow_run
    from runner_shell.views.reading import warn

    if last is not None and since is not None:
        raise UserFacingError("follow: -n and --since cannot be combined (pick one)")
    replay: Replay = CurrentLoop()
    if last is not None:
        replay = LastEvents(last)
    elif since is not None:
        replay = SinceIteration(since)
    paths, repo = _paths()
    follow_run(paths, repo, run, as_json, lambda line: typer.echo(line), warn, replay)


@app.command()
@guarded
def history(
    node: Annotated[
        str | None, typer.Option("--node", metavar="ID", help="Only this node's iterations.")
    ] = None,
    run: RunId = None,
    as_json: AsJson = False,
) -> None:
    """List the run's iterations: node, role, status, guard, duration, tokens, error."""
    from runner_shell.views.inspect import show_history

    show_history(*_paths(), node, run, as_json)


Iteration = Annotated[int, typer.Argument(min=1, metavar="ITER", help="The iteration number.")]


@app.command()
@guarded
def show(iteration: Iteration, run: RunId = None, as_json: AsJson = False) -> None:
    """Show one iteration: its meta.json, output and the first lines of its logs."""
    from runner_shell.views.inspect import show_iteration

    show_iteration(*_paths(), iteration, run, as_json)


@app.command()
@guarded
def report(run: RunId = None, as_json: AsJson = False) -> None:
    """Summarise the run: totals, per-node table, slowest iterations, most-retried nodes."""
    from runner_shell.views.inspect import show_report

    show_report(*_paths(), run, as_json)


@app.command()
@guarded
def runs(as_json: AsJson = False) -> None:
    """List every run: id, branch, state, next iteration, leaves passed/total, last activity."""
    from runner_core.run.listing import run_line, runs_to_json
    from runner_shell.git.run_branches import gather_runs

    rows = gather_runs(*_paths())
    if as_json:
        typer.echo(json.dumps(runs_to_json(rows), indent=2, ensure_ascii=False))
    elif not rows:
        typer.echo("runs: none (run 'runner start')")
    else:
        typer.echo("\n".join(run_line(row) for row in rows))


@app.command()
@guarded
def metrics(run: RunId = None) -> None:
    """Print the run's figures in Prometheus text format (for a textfile collector)."""
    from runner_shell.views.inspect import show_metrics

    show_metrics(*_paths(), run)


@app.command()
@guarded
def serve(
    host: Annotated[
        str, typer.Option("--host", metavar="HOST", help="Address to bind (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port", min=0, max=65535, metavar="PORT", help="Port to bind (0: any free one)."
        ),
    ] = 8765,
    run: RunId = None,
) -> None:
    """Serve a read-only web view of the run, live while a loop runs (never takes the lock)."""
    from runner_shell.store.state_files import load_run_state
    from runner_shell.views.reading import choose_run
    from runner_shell.web.serve import serve as serve_run

    paths, _ = _paths()
    if run is not None:
        choose_run(paths, load_run_state(paths), run)
    serve_run(paths.root, host, port, run)


@app.command()
@guarded
def audit(run: RunId = None, as_json: AsJson = False) -> None:
    """Replay the run from git alone and list every change its history does not prove."""
    from runner_shell.views.history import show_audit

    raise typer.Exit(show_audit(*_paths(), run, as_json))


@app.command()
@guarded
def diff(iteration: Iteration, run: RunId = None, as_json: AsJson = False) -> None:
    """Show what one iteration did to the task tree, node by node."""
    from runner_shell.views.history import show_diff

    show_diff(*_paths(), iteration, run, as_json)


logs_app = RunnerTyper(
    no_args_is_help=True,
    help="The iteration logs archived in git on refs/runner/logs/<run>.",
    rich_markup_mode=None,
    context_settings=HELP_OPTIONS,
)
app.add_typer(logs_app, name="logs")


@logs_app.command("restore")
@guarded
def logs_restore(run: RunId = None) -> None:
    """Re-create .runner/iterations/<run>/ from refs/runner/logs/<run>."""
    from runner_shell.views.history import restore_logs

    restore_logs(*_paths(), run)


def usage_error_text(error: typer.TyperException) -> str:
    """One line naming the problem and where help is; bare `runner` gets its help instead."""
    message = error.format_message()
    if type(error).__name__ == "NoArgsIsHelpError":
        return message
    context = getattr(error, "ctx", None)
    where = f" (see '{context.command_path} --help')" if context is not None else ""
    return f"{failure_line(message)}{where}"


def main() -> None:
    try:
        code = app(standalone_mode=False, prog_name="runner")
    except typer.TyperException as error:
        # A usage error exits 1, never click's 2: to scripts 2 means "complete".
        print(usage_error_text(error), file=sys.stderr)
        sys.exit(1)
    except typer.Abort:
        print("runner: interrupted", file=sys.stderr)
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as error:  # a runner bug: one line unless debugging
        if os.environ.get("RUNNER_DEBUG"):
            raise
        print(internal_error_line(error), file=sys.stderr)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


# The operator's further commands live in their own module, registered on `app` on import;
# then every command gets its help's example.
from runner_shell.cli import steering as steering  # noqa: E402
from runner_shell.cli.examples import add_examples  # noqa: E402

add_examples(app)
