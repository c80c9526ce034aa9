"""`runner eval`: measure which agent backend and prompt finish a set of cases (docs/eval.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from runner_shell.cli.base import AsJson, app, guarded


@app.command("eval")
@guarded
def eval_(
    cases: Annotated[
        list[Path] | None,
        typer.Argument(metavar="CASE...", help="Case files (TOML, docs/eval.md)."),
    ] = None,
    backend: Annotated[
        list[str] | None,
        typer.Option("--backend", metavar="B", help="An agent backend to try (repeatable)."),
    ] = None,
    prompts: Annotated[
        list[Path] | None,
        typer.Option(
            "--prompts",
            metavar="DIR",
            help="A prompt variant: a directory of templates (repeatable; none: built-in).",
        ),
    ] = None,
    runs: Annotated[int, typer.Option("--runs", min=1, metavar="N", help="Runs of each.")] = 1,
    jobs: Annotated[int, typer.Option("--jobs", min=1, metavar="J", help="Runs at once.")] = 1,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep each run's workspace (its path is in meta.json).")
    ] = False,
    resume: Annotated[
        bool, typer.Option("--resume", help="Finish an interrupted eval; finished runs stay.")
    ] = False,
    eval_id: Annotated[
        str | None,
        typer.Option(
            "--id",
            metavar="ID",
            help="The eval's id (default: the UTC time; with --resume, the latest).",
        ),
    ] = None,
    results: Annotated[
        Path, typer.Option("--results", metavar="DIR", help="Where results go.")
    ] = Path("eval-results"),
    compare: Annotated[
        bool,
        typer.Option(
            "--compare",
            help="Compare two summaries (CASE... is A B: directories "
            "under eval-results/ or summary.json files).",
        ),
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Run each case with each backend and prompt variant in fresh workspaces; summarise.

    Example: runner eval examples/eval/*.toml --backend command --runs 3
    """
    from runner_shell.errors import UserFacingError
    from runner_shell.eval.command import compare as compare_results
    from runner_shell.eval.command import run_eval

    given = list(cases or [])
    if compare:
        if len(given) != 2:
            raise UserFacingError("eval: --compare takes two result sets: A B")
        raise typer.Exit(compare_results(given[0], given[1], typer.echo))
    if not given:
        raise UserFacingError("eval: give at least one case file (see 'runner eval --help')")
    code = run_eval(
        given,
        list(backend or ()),
        list(prompts or ()),
        runs,
        jobs,
        results,
        eval_id,
        resume,
        keep,
        as_json,
        typer.echo,
    )
    sys.stdout.flush()
    raise typer.Exit(code)
