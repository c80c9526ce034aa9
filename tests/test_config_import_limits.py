"""`import_limit_bytes` and `import_limit_files`: defaults, bounds, rendering."""

from __future__ import annotations

import tomllib

import pytest

from runner_core.run.config import Config, ConfigError, parse_config, render_config


def test_the_defaults_are_200_mb_and_20000_files_and_render_back() -> None:
    config = Config()
    assert (config.import_limit_bytes, config.import_limit_files) == (200_000_000, 20_000)
    text = render_config(config)
    assert "import_limit_bytes = 200000000" in text and "import_limit_files = 20000" in text
    assert parse_config(tomllib.loads(text)) == config


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("import_limit_bytes", 0),
        ("import_limit_bytes", 64 * 1024**3 + 1),
        ("import_limit_files", -1),
        ("import_limit_files", 10_000_001),
        ("import_limit_files", "many"),
    ],
)
def test_a_bad_limit_is_refused_naming_the_key(key: str, value: object) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({key: value})
    assert str(raised.value).startswith(f"{key}:") and "unknown key" not in str(raised.value)
