"""A stuck leaf's ways out, and guidance: `runner node retry|decompose|replace|skip` and
`runner tell`, each one operator commit.

Registered on base.py's typer app (and its `node` group) when app.py imports this module,
before the inspection commands, so `runner --help` lists `tell` right after `demo`; the
operator's other commands are steering.py's. Each parses its arguments, calls runner_shell.steer
and prints the line runner_core renders. Decides nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from runner_core.tree.model import Node
from runner_shell.cli.base import _paths, app, guarded, node_app
from runner_shell.errors import UserFacingError

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
