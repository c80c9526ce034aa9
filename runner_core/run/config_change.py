"""`runner config set|unset|show`: what an operator's change to config.toml may be.

Decides how a value typed on the command line reads (a TOML value, else a word; a command's
words split like a shell's), what the config data becomes with one dotted key set or removed,
and the commit that records it. Validation is `parse_config`'s alone: a change stands only if
the whole result parses. Never reads or writes the file; the shell hands in parsed TOML.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from typing import Any

from runner_core.json_text import TooDeep, toml_value
from runner_core.run.config import (
    HOOK_NAMES,
    Config,
    ConfigError,
    command_words,
    parse_config,
    render_config,
)
from runner_core.run.config_schema import CONFIG_SCHEMA_FILE
from runner_core.run.trailers import ACTOR, CONFIG, RUN, render_trailers

# The keys whose value is a command (argv): a plain string on the command line is split into
# its words, as `runner init --guard` does.
ARGV_KEYS = frozenset(
    {"guard.command", "agent.command", "sandbox.setup", *(f"hooks.{name}" for name in HOOK_NAMES)}
)


def config_keys() -> tuple[str, ...]:
    """Every dotted key config.toml may hold, sorted: schemas/config.schema.json's top-level
    keys and each table's own."""
    from runner_core.validation.schema import load_schema

    keys = []
    for name, node in load_schema(CONFIG_SCHEMA_FILE)["properties"].items():
        table = node.get("properties")
        if table is None:
            keys.append(name)
        else:
            keys.extend(f"{name}.{key}" for key in table)
    return tuple(sorted(keys))


def _known(key: str) -> tuple[str, ...]:
    if key not in config_keys():
        raise ConfigError(key, "unknown key (see 'runner config show' for every key)")
    return tuple(key.split("."))


def typed_value(key: str, text: str) -> Any:
    """What `text` means as the value of `key`: a TOML value (`5`, `2.5`, `true`, `["a", "b"]`,
    `"x"`), else the text itself as a string; a command key splits a plain string into words."""
    _known(key)
    try:
        value = toml_value(f"value = {text}")["value"]
    except TooDeep:
        raise ConfigError(
            key, "the value nests deeper than TOML is read; give a flatter one"
        ) from None
    except tomllib.TOMLDecodeError:
        value = text
    if key in ARGV_KEYS and not isinstance(value, list):
        # `true`, `5`: a command's words, never a TOML boolean or number (`guard.command true`).
        return list(command_words(key, (value if isinstance(value, str) else text,)))
    return value


def _thawed(data: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: _thawed(value) if isinstance(value, Mapping) else value for key, value in data.items()
    }


def with_setting(data: Mapping[str, Any], key: str, value: Any) -> tuple[dict[str, Any], Config]:
    """`data` with `key` set to `value`, and the config it makes; `ConfigError` naming the key
    when the result is not a valid config."""
    parts = _known(key)
    changed = _thawed(data)
    if len(parts) == 1:
        changed[key] = value
    else:
        table = changed.get(parts[0], {})
        changed[parts[0]] = {**(table if isinstance(table, dict) else {}), parts[1]: value}
    return changed, parse_config(changed)


def without_setting(data: Mapping[str, Any], key: str) -> tuple[dict[str, Any], Config]:
    """`data` with `key` removed (its default applies again), and the config it makes."""
    parts = _known(key)
    changed = _thawed(data)
    if len(parts) == 1:
        changed.pop(key, None)
    elif isinstance(changed.get(parts[0]), dict):
        changed[parts[0]].pop(parts[1], None)
    return changed, parse_config(changed)


def setting(data: Mapping[str, Any], key: str) -> Any | None:
    """The value `data` holds at the dotted `key`, None when it holds none."""
    parts = key.split(".")
    found: Any = data
    for part in parts:
        if not isinstance(found, Mapping) or part not in found:
            return None
        found = found[part]
    return found


def config_commit_message(run_id: str, verb: str, key: str, actor: str) -> str:
    """The commit of `runner config set|unset KEY`: subject, then who changed which key."""
    lines = render_trailers(((RUN, run_id), (CONFIG, key), (ACTOR, actor)))
    return f"chore(runner): config {verb} {key} run {run_id}\n\n{lines}"


def only_key_changed(before: Mapping[str, Any], after: Mapping[str, Any], key: str) -> bool:
    """Whether `after` is `before` with at most `key` changed, as configs (what `runner audit`
    accepts of a config commit); False when either is not a valid config."""
    try:
        value = setting(after, key)
        if value is None:
            _, expected = without_setting(before, key)
        else:
            _, expected = with_setting(before, key, value)
        return expected == parse_config(after)
    except ConfigError:
        return False


def config_document(config: Config) -> dict[str, Any]:
    """`runner config show --json`: the canonical TOML's own document, so both forms say the
    same; an unset budget or hook is absent."""
    return tomllib.loads(render_config(config))
