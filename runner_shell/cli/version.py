"""What `runner --version` prints, for the launcher and typer's option alike."""

from __future__ import annotations


def version_line() -> str:
    """The installed package's version, read only when asked (importlib.metadata is slow)."""
    from importlib.metadata import version

    return f"runner {version('runner')}"
