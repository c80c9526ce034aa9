"""The `cli` extra (pyproject.toml): which missing module means `runner` was installed without
it, so that the command says how to install it in one line instead of a traceback."""

from __future__ import annotations

# The top-level modules of the `cli` extra (pyproject.toml): `runner` without one of them says
# how to install it, in one line, instead of a traceback.
CLI_EXTRA = ("typer", "click", "jinja2", "starlette", "uvicorn", "pyseccomp", "apprise", "textual")
MISSING_EXTRA = "runner: the command line needs the cli extra ({name} is missing): "
MISSING_EXTRA += "pip install 'runner[cli]'"


def missing_extra(error: BaseException) -> str | None:
    """The module of the `cli` extra whose absence `error` is, else None (a runner bug)."""
    if not isinstance(error, ModuleNotFoundError):
        return None
    top = (error.name or "").partition(".")[0]
    return top if top in CLI_EXTRA else None
