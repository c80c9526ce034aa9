"""The operator's commands beside `runner tell` and `runner node ...`: `runner config`,
`runner stop`, `runner answer`, `runner node add|edit` and `runner finish`.

Registered on base.py's typer app when app.py imports it; each parses its arguments, calls
runner_shell.steer and prints the line runner_core renders. Decides nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from runner_core.run.config_change import config_keys
from runner_core.tree.model import Node
from runner_shell.cli.base import HELP_OPTIONS, AsJson, app, guarded, node_app
from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.store.layout import RunnerPaths

config_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings=HELP_OPTIONS,
    help="Show or change .runner/state/config.toml, validated and committed as one operator "
    "action that 'runner audit' accepts.",
)
app.add_typer(config_app, name="config")

ConfigKey = Annotated[
    str,
    typer.Argument(
        metavar="KEY",
        help="A dotted key, e.g. guard.command, budget.max_cost_usd, hooks.on_stuck.",
        autocompletion=lambda: list(config_keys()),
    ),
]


def _paths() -> tuple[RunnerPaths, Repo]:
    from runner_shell.git.run_checkout import locate_run

    return locate_run(Path.cwd())


@config_app.command("show")
@guarded
def config_show(as_json: AsJson = False) -> None:
    """Print the effective config (defaults filled in) as canonical TOML.

    Example: runner config show --json
    """
    from runner_core.run.config import render_config
    from runner_core.run.config_change import config_document
    from runner_shell.store.state_files import load_config

    config = load_config(_paths()[0])
    if as_json:
        typer.echo(json.dumps(config_document(config), indent=2, sort_keys=True))
    else:
        typer.echo(render_config(config), nl=False)


def _change(key: str, value: str | None) -> None:
    from runner_core.views.steering import config_line
    from runner_shell.steer.settings import change_config

    changed = change_config(*_paths(), key, value)
    verb = "unset" if value is None else "set"
    typer.echo(config_line(verb, key, changed.run_id, changed.changed))


@config_app.command("set")
@guarded
def config_set(
    key: ConfigKey,
    value: Annotated[
        str,
        typer.Argument(
            metavar="VALUE",
            help='A TOML value (5, 2.5, true, ["a", "b"]); a command may be one '
            "shell-quoted string.",
        ),
    ],
) -> None:
    """Set KEY to VALUE in config.toml (rewritten in canonical form) and commit it.

    Refused while a loop holds the lock, or when the result is not a valid config.

    Example: runner config set guard.command "python -m pytest -q"
    """
    _change(key, value)


@config_app.command("unset")
@guarded
def config_unset(key: ConfigKey) -> None:
    """Remove KEY from config.toml, so its default applies again, and commit it.

    Example: runner config unset budget.max_cost_usd
    """
    _change(key, None)


@app.command()
@guarded
def stop() -> None:
    """Ask the running loop to stop after its current iteration (it exits 0, status=paused).

    'runner loop' resumes the run where it stopped.

    Example: runner stop
    """
    from runner_shell.steer.stop import request_stop

    request_stop(_paths()[1])
    typer.echo("stop: requested (the loop stops after its current iteration)")


@app.command()
@guarded
def answer(
    text: Annotated[str | None, typer.Argument(metavar="TEXT", help="The answer.")] = None,
    from_file: Annotated[
        Path | None,
        typer.Option("--file", metavar="F", help="Read the answer from F (at most 1 MiB)."),
    ] = None,
) -> None:
    """Answer the agents' open questions: the answer joins the guidance every following agent
    reads, and the questions leave questions.md, in one commit.

    Example: runner answer "Use SQLite; no server is available."
    """
    from runner_shell.steer.settings import answer_questions, read_note

    if (text is None) == (from_file is None):
        raise UserFacingError("answer: give the answer as TEXT or with --file F (one of them)")
    if from_file is not None:
        text = read_note(from_file, "answer")
    assert text is not None
    paths, repo = _paths()
    run_id = answer_questions(paths, repo, text)
    typer.echo(f"answer: run={run_id} file={paths.relative(paths.guidance)}")


Title = Annotated[str | None, typer.Option("--title", metavar="TEXT", help="The node's title.")]
Goal = Annotated[str | None, typer.Option("--goal", metavar="TEXT", help="The node's goal.")]
Acceptance = Annotated[
    list[str] | None,
    typer.Option("--acceptance", metavar="TEXT", help="An acceptance criterion (repeat for more)."),
]


@node_app.command("add")
@guarded
def node_add(
    parent: Annotated[str, typer.Argument(metavar="PARENT", help="The open node to add under.")],
    title: Title = None,
    goal: Goal = None,
    acceptance: Acceptance = None,
    next_: Annotated[
        str, typer.Option("--next", metavar="execute|decompose", help="What the node needs.")
    ] = "execute",
) -> None:
    """Add an open child last under PARENT (id <parent>.<n>); no attempt anywhere changes.

    Example: runner node add root --title Docs --goal "Document the CLI" --acceptance "README
    lists every command"
    """
    from runner_core.run.operations import NodeOperation, add_node, node_text
    from runner_shell.steer.commits import apply_node_operation, refused

    if title is None or goal is None:
        raise UserFacingError("node add: give the new node's --title and --goal")
    with refused():
        spec = node_text(NodeOperation.ADD, title, goal, tuple(acceptance or ()), next_)
    added: list[str] = []

    def change(tree: Node, default: int) -> Node:
        grown, new_id = add_node(tree, parent, spec, default)
        added.append(new_id)
        return grown

    applied = apply_node_operation(*_paths(), NodeOperation.ADD, parent, change)
    typer.echo(f"node: op=add id={added[-1]} parent={parent} run={applied.run_id}")


@node_app.command("edit")
@guarded
def node_edit(
    node_id: Annotated[str, typer.Argument(metavar="ID", help="The open node to edit.")],
    title: Title = None,
    goal: Goal = None,
    acceptance: Acceptance = None,
) -> None:
    """Rewrite an open node's title, goal or acceptance; attempts and children are kept.

    Passed nodes never change. --acceptance replaces the whole list.

    Example: runner node edit root.2 --goal "Support Python 3.11 and 3.12"
    """
    from runner_core.run.operations import NodeOperation, edit_node, operation_line
    from runner_shell.steer.commits import apply_node_operation

    operation = NodeOperation.EDIT
    criteria = None if acceptance is None else tuple(acceptance)
    applied = apply_node_operation(
        *_paths(),
        operation,
        node_id,
        lambda tree, _: edit_node(tree, node_id, title, goal, criteria),
    )
    typer.echo(operation_line(applied.run_id, operation, node_id, applied.before, applied.after))


@app.command()
@guarded
def finish(
    squash: Annotated[
        bool, typer.Option("--squash", help="One squashed commit instead of a merge commit.")
    ] = False,
    delete_branch: Annotated[
        bool, typer.Option("--delete-branch", help="Delete the run branch once merged.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Finish a run whose tree is not complete.")
    ] = False,
    into: Annotated[
        str | None,
        typer.Option(
            "--into", metavar="BRANCH", help="Merge into BRANCH (default: where the run started)."
        ),
    ] = None,
    with_state: Annotated[
        bool,
        typer.Option("--with-state", help="Land the run's .runner/ state with its code."),
    ] = False,
) -> None:
    """Merge the run branch into the branch it started from, with a summary message (nodes
    done, iterations, cost). Refused while a loop runs, for an incomplete run without --force,
    and when the target has diverged in a way that conflicts (nothing is changed then).

    Example: runner finish --squash --delete-branch
    """
    from runner_shell.steer.finish import finish_run

    done = finish_run(*_paths(), into, squash, delete_branch, force, with_state)
    if done.already:
        typer.echo(
            f"finish: run={done.run_id} already finished into={done.target} "
            f"commit={done.commit[:8]} (nothing new done)"
        )
        return
    typer.echo(
        f"finish: run={done.run_id} into={done.target} mode={'squash' if squash else 'merge'} "
        f"commit={done.commit[:8]} branch={'deleted' if done.branch_deleted else 'kept'}"
    )
