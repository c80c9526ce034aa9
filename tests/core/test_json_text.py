"""runner_core/json_text.py: JSON and TOML text someone else wrote is a value or a ValueError,
nesting past the decoder's depth included."""

from __future__ import annotations

import tomllib

import pytest

from runner_core.json_text import TOML_TOO_DEEP, TOO_DEEP, TooDeep, json_value, toml_value
from runner_core.run.state import RunStateError, run_state_from_text

DEEP = ["[" * 5_000 + "]" * 5_000, '{"a": ' * 5_000 + "1" + "}" * 5_000]
DEEP_TOML = ["a = " + "[" * 5_000 + "]" * 5_000, "a = " + "{b = " * 5_000 + "1" + "}" * 5_000]


def test_json_text_is_its_value_with_the_options_given() -> None:
    assert json_value(b'{"a": [1, 2.5]}') == {"a": [1, 2.5]}
    assert json_value('{"a": 1}', object_pairs_hook=tuple) == (("a", 1),)


@pytest.mark.parametrize("text", DEEP)
def test_text_nested_past_the_decoders_depth_is_a_value_error_saying_so(text: str) -> None:
    with pytest.raises(TooDeep, match=f"^{TOO_DEEP}$"):
        json_value(text)
    assert issubclass(TooDeep, ValueError)


@pytest.mark.parametrize("text", ["", "{", "[1]", '{"run_id": 3}', *DEEP])
def test_run_state_text_that_is_not_one_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        run_state_from_text(text)
    with pytest.raises(RunStateError):
        run_state_from_text('{"run_id": 3}')


def test_toml_text_is_its_table_and_bad_toml_is_tomllibs_error() -> None:
    assert toml_value('[guard]\ncommand = ["true"]\n') == {"guard": {"command": ["true"]}}
    with pytest.raises(tomllib.TOMLDecodeError):
        toml_value("a = ")


@pytest.mark.parametrize("text", DEEP_TOML)
def test_toml_nested_past_the_decoders_depth_is_a_value_error_saying_so(text: str) -> None:
    with pytest.raises(RecursionError):
        tomllib.loads(text)  # what every reader of TOML would otherwise die of
    with pytest.raises(TooDeep, match=f"^{TOML_TOO_DEEP}$"):
        toml_value(text)
