"""Specification of the sandbox keys of config.toml.

`[sandbox] mode` is "auto" (the default), "bwrap" or "off"; `[sandbox] setup` is an optional
argv; `[guard] network` is false unless set to true. Unknown keys and bad values are errors
naming the key; `render_config` writes every key so `parse_config` reads it back.
"""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from runner_core import Config, ConfigError, parse_config
from runner_core.run.config import SandboxConfig, render_config


def test_by_default_the_sandbox_is_auto_without_setup_and_the_guard_has_no_network() -> None:
    config = parse_config({})

    assert config.sandbox == SandboxConfig(mode="auto", setup=())
    assert config.guard_network is False


@pytest.mark.parametrize("mode", ["auto", "bwrap", "off"])
def test_each_sandbox_mode_is_accepted(mode: str) -> None:
    assert parse_config({"sandbox": {"mode": mode}}).sandbox.mode == mode


def test_the_setup_command_is_kept_as_its_argv() -> None:
    config = parse_config({"sandbox": {"setup": ["uv", "sync", "--frozen"]}})

    assert config.sandbox.setup == ("uv", "sync", "--frozen")


def test_setup_inputs_are_paths_in_the_checkout_sorted_without_repeats() -> None:
    sandbox = {
        "setup": ["npm", "ci"],
        "setup_inputs": ["package.json", "app/x.lock", "package.json"],
    }

    config = parse_config({"sandbox": sandbox})

    assert config.sandbox.setup_inputs == ("app/x.lock", "package.json")


def test_the_default_config_file_says_setup_inputs_as_a_comment() -> None:
    lines = render_config(Config()).splitlines()

    assert any(line.startswith('# setup_inputs = ["pyproject.toml", "uv.lock"]') for line in lines)


def test_guard_network_true_lets_the_guard_reach_the_network() -> None:
    assert parse_config({"guard": {"network": True}}).guard_network is True


@pytest.mark.parametrize(
    ("data", "key", "problem"),
    [
        ({"sandbox": {"mode": "docker"}}, "sandbox.mode", 'must be "auto" | "bwrap" | "off"'),
        ({"sandbox": {"mode": True}}, "sandbox.mode", 'must be "auto"'),
        ({"sandbox": {"colour": 1}}, "sandbox.colour", "unknown key"),
        ({"sandbox": "off"}, "sandbox", "must be a table"),
        ({"sandbox": {"setup": "uv sync"}}, "sandbox.setup", "must be an array of strings"),
        ({"sandbox": {"setup": ["", "x"]}}, "sandbox.setup", "the program (first element)"),
        ({"sandbox": {"setup": ["a\0b"]}}, "sandbox.setup", "must not contain NUL"),
        ({"guard": {"network": "yes"}}, "guard.network", "must be true or false, got 'yes'"),
        ({"guard": {"network": 1}}, "guard.network", "must be true or false, got 1"),
        ({"guard": {"networks": True}}, "guard.networks", "unknown key"),
        ({"sandbox": {"setup_inputs": ["x"]}}, "sandbox.setup_inputs", "names what [sandbox]"),
        *(
            ({"sandbox": {"setup": ["npm", "ci"], "setup_inputs": [path]}}, key, problem)
            for key, problem in [("sandbox.setup_inputs", "must hold paths of files in the")]
            for path in ["/etc/passwd", "../package.json", "./a", "app/", "a//b", "", "a\\b"]
        ),
        ({"sandbox": {"setup_inputs": "uv.lock"}}, "sandbox.setup_inputs", "must be an array"),
    ],
)
def test_a_bad_sandbox_value_is_an_error_naming_its_key(
    data: dict[str, Any], key: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(data)

    assert raised.value.key == key
    assert raised.value.problem.startswith(problem), raised.value.problem


def test_the_default_config_file_says_the_sandbox_keys() -> None:
    lines = render_config(Config()).splitlines()

    for line in ["network = false", "[sandbox]", 'mode = "auto"', "# setup = "]:
        assert any(written.startswith(line) for written in lines), line


@pytest.mark.parametrize(
    "config",
    [
        Config(),
        Config(guard_network=True, sandbox=SandboxConfig("bwrap", ("make", "deps"))),
        Config(sandbox=SandboxConfig("off", ("sh", "-c", 'echo "ü" \\ done\n'))),
        Config(sandbox=SandboxConfig(allow_hosts=("*.example.com:443", "[::1]:8080"))),
        Config(sandbox=SandboxConfig(setup=("npm", "ci"), setup_inputs=("package-lock.json",))),
    ],
    ids=["defaults", "every key set", "quoted setup", "allow_hosts", "setup_inputs"],
)
def test_a_rendered_sandbox_table_reads_back_unchanged(config: Config) -> None:
    assert parse_config(tomllib.loads(render_config(config))) == config
