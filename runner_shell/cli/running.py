"""The commands that set a run up and drive it: `runner init`, `start`, `validate`, `select`,
`step`, `loop`, `recover` and `demo`.

Registered on base.py's typer app when app.py imports this module; each parses its arguments,
calls the shell (commands.py holds the bodies the fast entry point shares) and prints the
contract lines. Decides nothing.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from runner_core.backends.registry import DEFAULT_BACKEND, backend_names
from runner_core.prompt.pack import DEFAULT_PROMPT_BUDGET
from runner_core.run.exit_codes import ExitCode
from runner_core.tree.selection import select_leaf
from runner_shell.cli import commands
from runner_shell.cli.base import AsJson, PromptBudget, _fail, _here, _paths, app, guarded
from runner_shell.cli.commands import failure_of
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import GitError
from runner_shell.step.lock_and_journal import exclusive_lock

if TYPE_CHECKING:
    from runner_core.run.config import Config
    from runner_core.run.project_kinds import ProjectKind
    from runner_shell.git.repo import Repo
    from runner_shell.store.layout import RunnerPaths


InitPrompts = Annotated[
    bool,
    typer.Option(
        "--prompts",
        help="Also write the shipped prompt templates to .runner/prompts/ (the runner then "
        "uses them; edit them to change what agents are told; docs/eval.md).",
    ),
]


DiscardRun = Annotated[
    bool,
    typer.Option(
        "--discard-run", help="With --force: overwrite the state of a run that is not finished."
    ),
]


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
        str | None,
        typer.Option(
            "--backend",
            metavar="NAME",
            help=f"Agent backend: one of {backend_names()} (default: {DEFAULT_BACKEND}, or "
            "command when --agent is given).",
        ),
    ] = None,
    agent: Annotated[
        list[str] | None,
        typer.Option(
            "--agent",
            metavar="COMMAND",
            help="Agent command for backend=command: one shell-quoted string, or one --agent "
            "per word (none: a template agent is written to .runner/agent.py).",
        ),
    ] = None,
    prompts: InitPrompts = False,
    discard_run: DiscardRun = False,
) -> None:
    """Scaffold .runner/ with a default config, a placeholder GOAL.md and a root node.

    The draft is yours to edit, `config set` and shape with `node` commands before 'runner
    start' moves it onto the run's branch."""
    from runner_core.run.template_agent import TEMPLATE_AGENT_PATH
    from runner_shell.setup.command_agent import write_template_agent
    from runner_shell.setup.scaffold import init_runner, recognised_project, write_git_exclude

    paths, repo = _here()
    if prompts and paths.runner_dir.exists() and not force:
        return _write_prompts(paths, force)  # the templates it lacks; its state files stay
    kind = recognised_project(repo.root)
    config, template = _init_config(guard, backend, agent, kind)
    # `init --force` rewrites the state files under a running loop's feet unless it waits its turn.
    with exclusive_lock(repo):
        if force and not discard_run:
            _refuse_started_run(paths, repo)
        init_runner(paths, force, config)
        if template:
            write_template_agent(paths)
        write_git_exclude(repo)
    for line in _init_lines(paths, kind, config, bool(guard)):
        typer.echo(line)
    if template:
        typer.echo(f"init: agent={TEMPLATE_AGENT_PATH} (a template agent: edit it to call yours)")
    if prompts:
        _write_prompts(paths, force)


def _init_config(
    guard: list[str] | None,
    backend: str | None,
    agent: list[str] | None,
    kind: ProjectKind | None = None,
) -> tuple[Config, bool]:
    """The config `init` writes from its options and the project's `kind`, and whether a
    template agent comes with it; a bad option is one line naming it. `--agent` alone names a
    command agent: a CLI backend takes `--agent` as a prefix only when `--backend` names it.
    `--guard` wins over the kind's guard."""
    from runner_core import ConfigError, parse_config
    from runner_core.run.config import command_words
    from runner_core.run.template_agent import init_agent_command

    try:
        given = command_words("--agent", tuple(agent or ()))
        if backend is None:
            backend = "command" if given else DEFAULT_BACKEND
        agent_words, template = init_agent_command(backend, given)
        data: dict[str, object] = {"agent": {"backend": backend, "command": list(agent_words)}}
        if guard:
            data["guard"] = {"command": list(command_words("--guard", tuple(guard)))}
        elif kind is not None and kind.guard is not None:
            data["guard"] = {"command": list(kind.guard)}
        if kind is not None and kind.setup:
            data["sandbox"] = {"setup": list(kind.setup), "setup_inputs": list(kind.setup_inputs)}
        return parse_config(data), template
    except ConfigError as error:
        raise UserFacingError(f"init: {error}") from None


def _init_lines(
    paths: RunnerPaths, kind: ProjectKind | None, config: Config, guard_given: bool
) -> list[str]:
    """What `init` says it made, and what it took from the project it recognised."""
    made = f"initialized {paths.relative(paths.runner_dir)}/ "
    made += "(edit .runner/GOAL.md, then run 'runner start')"
    return [made] if kind is None else [made, _kind_line(kind, config, guard_given)]


def _kind_line(kind: ProjectKind, config: Config, guard_given: bool) -> str:
    """What `init` took from the project it recognised, on one line."""
    said = f"init: a {kind.name} project ({kind.found}): guard={shlex.join(config.guard_command)}"
    if kind.guard is None and not guard_given:
        said += " (package.json has no test script)"
    if kind.setup:
        said += f" setup={shlex.join(kind.setup)} setup_inputs={','.join(kind.setup_inputs)}"
    return said + " (edit .runner/state/config.toml to change)"


def _refuse_started_run(paths: RunnerPaths, repo: Repo) -> None:
    """`init --force` never wipes a started run that was not finished."""
    from runner_shell.git.run_checkout import finished_runs
    from runner_shell.store.state_files import load_run_state

    if not paths.run_state.is_file():
        return
    try:
        run_id = load_run_state(paths).run_id
    except UserFacingError:
        return  # a broken run state is what --force is for
    if run_id is None or run_id in finished_runs(repo):
        return
    raise UserFacingError(
        f"init --force: run {run_id} is started and not finished; finish it ('runner finish') "
        "or give --discard-run to overwrite its tree, state and config"
    )


def _write_prompts(paths: RunnerPaths, force: bool) -> None:
    from runner_shell.step.prompt_templates import write_shipped_templates

    written = write_shipped_templates(paths, force)
    for path in written:
        typer.echo(f"init: prompt template {paths.relative(path)}")
    if not written:
        typer.echo("init: prompt templates already in .runner/prompts/ (--force rewrites them)")


@app.command()
@guarded
def start(
    new: Annotated[
        bool, typer.Option("--new", help="Start another run from GOAL.md beside existing ones.")
    ] = False,
    here: Annotated[
        bool,
        typer.Option(
            "--here",
            help="Run in this checkout: switch it to runner/<run-id> (by default the run "
            "gets a checkout of its own inside .git/runner/ and yours is never touched).",
        ),
    ] = False,
) -> None:
    """Check the draft .runner/, create runner/<run-id> beside your checkout, move the draft
    onto it and commit the run's identity; your branch and files are left as they are."""
    from runner_shell.git.run_checkout import active_runs
    from runner_shell.guard.start_baseline import start_baseline
    from runner_shell.setup.scaffold import start_beside, start_run
    from runner_shell.store.state_files import load_config

    paths, repo = _here()
    branch = repo.current_branch() or ""
    with exclusive_lock(repo):
        if here or branch.startswith("runner/"):
            started = start_run(paths, repo, new)
        else:
            operation = repo.operation_in_progress()
            if operation is not None:  # the run's own branch may be the one in the middle
                raise UserFacingError(
                    f"git is in the middle of {operation}; finish or abort it first"
                )
            active = active_runs(repo)
            if active and not new:
                raise UserFacingError(
                    f"start: run {active[0]} is active (work on it from here, e.g. 'runner "
                    "loop'); 'runner start --new' starts another beside it"
                )
            started, paths, repo = start_beside(paths, repo)
        said = "already started" if started.already else "started"
        typer.echo(f"{said} run={started.run_id} branch={started.branch}")
        # A ratchet's first baseline: the guard's outcome on the start commit.
        baseline = start_baseline(paths, repo, load_config(paths), started.run_id)
    if baseline is not None:
        typer.echo(baseline)


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
    detach: Annotated[
        bool,
        typer.Option(
            "--detach",
            help="Run the loop in the background, in its own session (a closed terminal does "
            "not stop it), its output in .git/runner/runs/<run-id>/loop.log.",
        ),
    ] = False,
) -> None:
    """Step until the tree is complete (0), a leaf is stuck (3) or the iteration limit (1)."""
    from runner_shell.loop.command import LiveProgress, run_loop

    paths, repo = _paths()
    if detach:
        from runner_shell.loop.detached import detach_loop

        for line in detach_loop(paths, repo, prompt_budget, max_steps):
            typer.echo(line)
        return
    # The live line is for a person watching; piped output stays exactly the `loop:` lines.
    live = LiveProgress(enabled=sys.stdout.isatty(), quiet=quiet)
    with exclusive_lock(repo), live:
        shown = live if live.enabled else None
        code = run_loop(paths, repo, prompt_budget, live.emit, shown, max_steps)
    if code == ExitCode.STUCK:
        # The same way out as `runner step` gives: the stuck leaf's node commands.
        from runner_core.tree.selection import StuckLeaf, select_leaf
        from runner_shell.store.state_files import load_tree

        selection = select_leaf(load_tree(paths))
        if isinstance(selection, StuckLeaf):
            raise _fail(commands.stuck_message(selection), code)
    raise typer.Exit(code)


@app.command()
@guarded
def recover() -> None:
    """Finish an interrupted iteration: keep the agent's changes, restore state, log it."""
    from runner_shell.loop.remote_recovery import AnswerTaker
    from runner_shell.step.recover import recover_all

    paths, repo = _paths()
    answers = AnswerTaker(paths, repo)
    try:
        with exclusive_lock(repo):
            results = recover_all(paths, repo, answers)
    finally:
        answers.close()
    if not results:
        typer.echo("recover: status=clean")
    for result in results:
        journal = result.journal
        assert result.kind is not None and journal is not None
        killed = ",".join(str(pgid) for pgid in result.killed_groups) or "none"
        typer.echo(
            f"recover: status={result.kind.value} run={journal.run_id} iter={journal.iteration} "
            f"node={journal.node_id} killed_process_groups={killed}"
        )
        if result.not_taken is not None:
            typer.echo(f"recover: iter={journal.iteration} answer not taken: {result.not_taken}")
        if journal.iteration in answers.said:
            typer.echo(f"recover: iter={journal.iteration} {answers.said[journal.iteration]}")
        if result.dropped:
            from runner_core.changes.import_rules import shown

            named = ", ".join(shown(path) for path in result.dropped)
            typer.echo(
                f"recover: iter={journal.iteration} not kept, changed by work merged since "
                f"it started: {named}"
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
