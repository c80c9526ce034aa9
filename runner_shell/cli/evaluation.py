"""`runner eval`: measure which agent backend and prompt finish a set of cases (docs/eval.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from runner_shell.cli.base import AsJson, app, guarded

Cases = Annotated[
    list[Path] | None,
    typer.Argument(metavar="CASE...", help="Case files (TOML, docs/eval.md)."),
]
Backends = Annotated[
    list[str] | None,
    typer.Option("--backend", metavar="B", help="An agent backend to try (repeatable)."),
]
PromptDirs = Annotated[
    list[Path] | None,
    typer.Option(
        "--prompts",
        metavar="DIR",
        help="A prompt variant: a directory of templates (repeatable; none: the built-in).",
    ),
]
Runs = Annotated[int, typer.Option("--runs", min=1, metavar="N", help="Runs of each.")]
Jobs = Annotated[int, typer.Option("--jobs", min=1, metavar="J", help="Runs at once.")]
Keep = Annotated[
    bool, typer.Option("--keep", help="Keep each run's workspace (its path is in meta.json).")
]
Resume = Annotated[
    bool, typer.Option("--resume", help="Finish an interrupted eval; finished runs stay.")
]
EvalId = Annotated[
    str | None,
    typer.Option(
        "--id", metavar="ID", help="The eval's id (default: the UTC time; --resume: the latest)."
    ),
]
Results = Annotated[Path, typer.Option("--results", metavar="DIR", help="Where results go.")]
Compare = Annotated[
    bool,
    typer.Option(
        "--compare",
        help="Compare two summaries: CASE... is A B (eval-results/<id>/ or summary.json).",
    ),
]

Role = Annotated[
    str | None,
    typer.Option("--role", metavar="ROLE", help="The prompt lab: run only this role (decomposer)."),
]
Inputs = Annotated[
    Path | None,
    typer.Option("--inputs", metavar="DIR", help="The prompt lab's fixed inputs (docs/eval.md)."),
]


@app.command("eval")
@guarded
def eval_(
    cases: Cases = None,
    backend: Backends = None,
    prompts: PromptDirs = None,
    runs: Runs = 1,
    jobs: Jobs = 1,
    keep: Keep = False,
    resume: Resume = False,
    eval_id: EvalId = None,
    results: Results = Path("eval-results"),
    compare: Compare = False,
    role: Role = None,
    inputs: Inputs = None,
    as_json: AsJson = False,
) -> None:
    """Run each case with each backend and prompt variant in fresh workspaces; summarise.

    Example: runner eval examples/eval/*.toml --backend command --runs 3
    """
    from runner_shell.errors import UserFacingError
    from runner_shell.eval.command import EvalPlan, run_eval
    from runner_shell.eval.command import compare as compare_results

    given = list(cases or [])
    if compare:
        if len(given) != 2:
            raise UserFacingError("eval: --compare takes two result sets: A B")
        raise typer.Exit(compare_results(given[0], given[1], typer.echo))
    if role is not None or inputs is not None:
        if role != "decomposer" or inputs is None or given:
            raise UserFacingError("eval: the prompt lab is --role decomposer --inputs DIR")
        from runner_shell.eval.lab import run_lab

        backends, variants = list(backend or ()), list(prompts or ())
        raise typer.Exit(run_lab(inputs, backends, variants, results, as_json, typer.echo))
    if not given:
        raise UserFacingError("eval: give at least one case file (see 'runner eval --help')")
    plan = EvalPlan(given, list(backend or ()), list(prompts or ()), runs, jobs, keep)
    raise typer.Exit(run_eval(plan, results, eval_id, resume, as_json, typer.echo))
