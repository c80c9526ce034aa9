"""How config.toml spells a value: tomli-w writes each one (its quoting and escaping are the
only ones), and an array goes on one line, as `runner init` has always laid the file out.

Decides nothing about which keys are written or what their comments say (each table's render
function does); never parses. tomli-w is imported by the first value written: a command that
only reads the config never loads it.
"""

from __future__ import annotations


def toml_value(value: object) -> str:
    """`value` as TOML: an array of values on one line, anything else as tomli-w writes it."""
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    import tomli_w

    return tomli_w.dumps({"v": value}).removeprefix("v = ").removesuffix("\n")


def toml_line(key: str, value: object, comment: str = "") -> str:
    """`key = value`, then `  # comment` when it has one, and the end of the line."""
    return f"{key} = {toml_value(value)}" + (f"  # {comment}" if comment else "") + "\n"


def example_line(key: str, value: object, comment: str = "") -> str:
    """A key left unset, shown as a commented-out `# key = value` the user may uncomment."""
    return "# " + toml_line(key, value, comment)
