"""Specification of configuration and run identity.

config.toml: missing keys take defaults; unknown keys and bad values are errors naming the
key; `render_config` writes what `parse_config` reads back. Run ids: `[A-Za-z0-9._-]+`, not
`.` or `..`, generated as `run-<HEAD sha 8>[-n]`, kept in GOAL.md's frontmatter.
"""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from runner_core import Config, ConfigError, parse_config
from runner_core.run.config import MAX_VALUES, render_config
from runner_core.run.identity import (
    RunIdentityError,
    branch_for,
    generate_run_id,
    goal_run_id,
    parse_frontmatter,
    run_id_problem,
    with_run_id,
)

# ---------------------------------------------------------------- parse_config


def test_an_empty_config_takes_every_default() -> None:
    assert parse_config({}) == Config(
        max_attempts_default=3,
        max_iterations=100,
        iteration_timeout_secs=1800,
        executor_output_limit_bytes=100_000,
        guard_output_limit_bytes=100_000,
        guard_command=("just", "ci"),
        agent_backend="codex",
        agent_command=(),
    )


def test_empty_tables_take_their_defaults() -> None:
    assert parse_config({"guard": {}, "agent": {}}) == Config()


def test_every_key_may_be_set() -> None:
    data = {
        "max_attempts_default": 5,
        "max_iterations": 7,
        "iteration_timeout_secs": 60,
        "executor_output_limit_bytes": 1_000,
        "guard_output_limit_bytes": 2_000,
        "guard": {"command": ["make", "test"]},
        "agent": {"backend": "command", "command": ["./agent.sh", "--fast"]},
    }

    assert parse_config(data) == Config(
        max_attempts_default=5,
        max_iterations=7,
        iteration_timeout_secs=60,
        executor_output_limit_bytes=1_000,
        guard_output_limit_bytes=2_000,
        guard_command=("make", "test"),
        agent_backend="command",
        agent_command=("./agent.sh", "--fast"),
    )


POSITIVE_INTEGER_KEYS = [
    "max_attempts_default",
    "max_iterations",
    "iteration_timeout_secs",
    "executor_output_limit_bytes",
    "guard_output_limit_bytes",
]


@pytest.mark.parametrize("key", POSITIVE_INTEGER_KEYS)
@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (0, "must be > 0, got 0"),
        (-1, "must be > 0, got -1"),
        (True, "must be an integer, got True"),
        ("3", "must be an integer, got '3'"),
        (1.5, "must be an integer, got 1.5"),
        # TOML tells 3.0 from 3, though JSON Schema's "integer" does not.
        (3.0, "must be an integer, got 3.0"),
    ],
)
def test_a_count_must_be_a_positive_integer(key: str, value: Any, problem: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({key: value})

    assert (raised.value.key, raised.value.problem) == (key, problem)
    assert str(raised.value) == f"{key}: {problem}"


@pytest.mark.parametrize("key", POSITIVE_INTEGER_KEYS)
def test_a_count_has_a_sane_upper_bound(key: str) -> None:
    highest = MAX_VALUES[key]
    assert getattr(parse_config({key: highest}), key) == highest

    with pytest.raises(ConfigError, match=f"must be at most {highest}, got {highest + 1}$"):
        parse_config({key: highest + 1})
    with pytest.raises(ConfigError, match=r"got a number of more than 20 digits$"):
        parse_config({key: 10**400})


@pytest.mark.parametrize(
    ("data", "key", "problem"),
    [
        (
            {"guard": {"command": "just ci"}},
            "guard.command",
            "must be an array of strings (argv, no shell), got 'just ci'",
        ),
        (
            {"guard": {"command": ["just", 1]}},
            "guard.command",
            "must be an array of strings (argv, no shell), got ['just', 1]",
        ),
        ({"guard": {"command": []}}, "guard.command", "must not be empty"),
        (
            {"guard": {"command": ["", "ci"]}},
            "guard.command",
            "the program (first element) must not be empty",
        ),
        (
            {"agent": {"backend": "gpt"}},
            "agent.backend",
            "must be one of claude, codex, command, copilot, gemini, opencode, qwen, got 'gpt'",
        ),
        (
            {"agent": {"backend": "command"}},
            "agent.command",
            'must name the agent program when backend = "command"',
        ),
        (
            {"agent": {"command": "agent --fast"}},
            "agent.command",
            "must be an array of strings (argv, no shell), got 'agent --fast'",
        ),
        (
            {"agent": {"backend": "command", "command": [""]}},
            "agent.command",
            "the program (first element) must not be empty",
        ),
        ({"guard": ["just", "ci"]}, "guard", "must be a table"),
        ({"agent": "codex"}, "agent", "must be a table"),
    ],
)
def test_a_bad_command_or_backend_is_an_error_naming_its_key(
    data: dict[str, Any], key: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(data)

    assert (raised.value.key, raised.value.problem) == (key, problem)


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"max_attempt": 3}, "max_attempt"),
        ({"command": ["just", "ci"]}, "command"),
        ({"guard": {"cmd": ["just"]}}, "guard.cmd"),
        ({"agent": {"model": "o3"}}, "agent.model"),
        ({"zzz": 1, "aaa": 2}, "aaa"),
    ],
)
def test_an_unknown_key_is_an_error_naming_it(data: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(data)

    assert str(raised.value) == f"{key}: unknown key"


def test_the_codex_backend_needs_no_command() -> None:
    assert parse_config({"agent": {"backend": "codex"}}).agent_command == ()


# ---------------------------------------------------------------- render_config


def test_the_default_config_file_reads_back_as_the_defaults() -> None:
    assert parse_config(tomllib.loads(render_config(Config()))) == Config()


def test_the_default_config_file_says_every_key() -> None:
    text = render_config(Config())

    for line in [
        "max_attempts_default = 3",
        "max_iterations = 100",
        "iteration_timeout_secs = 1800",
        "executor_output_limit_bytes = 100000",
        "guard_output_limit_bytes = 100000",
        "[guard]",
        'command = ["just", "ci"]',
        "[agent]",
        'backend = "codex"',
        "command = []",
    ]:
        assert any(written.startswith(line) for written in text.splitlines()), line


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(
            Config(
                max_attempts_default=1,
                max_iterations=2,
                iteration_timeout_secs=3,
                executor_output_limit_bytes=4,
                guard_output_limit_bytes=5,
                guard_command=("make", "check"),
                agent_backend="command",
                agent_command=("./agent", "--role", "any"),
            ),
            id="every field set",
        ),
        pytest.param(
            Config(guard_command=("sh", "-c", 'echo "hi" \\ \t done\n'), agent_backend="claude"),
            id="quotes backslashes and control characters",
        ),
        pytest.param(Config(guard_command=("prüfen", "✓", "😀")), id="non-ascii"),
        # NUL itself is refused by parse_config: no program can receive it in its argv.
        pytest.param(Config(guard_command=("odd\x7fname", "\x01", "\x1f")), id="DEL and C0"),
    ],
)
def test_a_rendered_config_reads_back_unchanged(config: Config) -> None:
    assert parse_config(tomllib.loads(render_config(config))) == config


# ---------------------------------------------------------------- run ids


@pytest.mark.parametrize(
    ("run_id", "problem"),
    [
        ("", "run id is empty"),
        (".", "run id must not be '.'"),
        ("..", "run id must not be '..'"),
        ("a/b", "run id 'a/b' may contain only letters, digits, '.', '_' and '-'"),
        ("run 1", "run id 'run 1' may contain only letters, digits, '.', '_' and '-'"),
        ("lauf-ü", "run id 'lauf-ü' may contain only letters, digits, '.', '_' and '-'"),
        ("x" * 300, "run id is 300 characters long (at most 100)"),
        ("run.lock", "run id 'run.lock' is not a valid git branch name component"),
        ("a..b", "run id 'a..b' is not a valid git branch name component"),
        ("-run", "run id '-run' is not a valid git branch name component"),
        (".hidden", "run id '.hidden' is not a valid git branch name component"),
        ("run.", "run id 'run.' is not a valid git branch name component"),
    ],
)
def test_an_unusable_run_id_is_explained(run_id: str, problem: str) -> None:
    assert run_id_problem(run_id) == problem


@pytest.mark.parametrize(
    "run_id", ["run-1a2b3c4d", "run-1a2b3c4d-2", "A.b_c-9", "x", "a.lock.b", "x" * 100]
)
def test_a_usable_run_id_has_no_problem(run_id: str) -> None:
    assert run_id_problem(run_id) is None


def test_the_run_branch_is_runner_slash_run_id() -> None:
    assert branch_for("run-1a2b3c4d") == "runner/run-1a2b3c4d"


SHA = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"


@pytest.mark.parametrize(
    ("taken", "run_id"),
    [
        ((), "run-1a2b3c4d"),
        (("run-other",), "run-1a2b3c4d"),
        (("run-1a2b3c4d",), "run-1a2b3c4d-2"),
        (("run-1a2b3c4d", "run-1a2b3c4d-2"), "run-1a2b3c4d-3"),
        (("run-1a2b3c4d-2",), "run-1a2b3c4d"),
        (("run-1a2b3c4d", "run-1a2b3c4d-3"), "run-1a2b3c4d-2"),
    ],
)
def test_a_new_run_id_is_run_head_sha_8_with_the_lowest_free_suffix(
    taken: tuple[str, ...], run_id: str
) -> None:
    assert generate_run_id(SHA, taken) == run_id


def test_a_generated_run_id_is_usable() -> None:
    assert run_id_problem(generate_run_id(SHA, {"run-1a2b3c4d"})) is None


# ---------------------------------------------------------------- GOAL.md frontmatter

GOAL_BODY = "# Goal\n\nShip the parser.\n\n---\n\nA horizontal rule is not frontmatter.\n"


def test_a_goal_without_frontmatter_is_all_body() -> None:
    matter = parse_frontmatter(GOAL_BODY)

    assert (matter.present, matter.entries, matter.body) == (False, (), GOAL_BODY)
    assert matter.get("id") is None


def test_frontmatter_keys_are_read_in_order_with_quotes_comments_and_blanks_skipped() -> None:
    text = "---\nid: run-1\n\n# who\nowner: 'me'\ntitle: \"A: B\"\n---\n" + GOAL_BODY

    matter = parse_frontmatter(text)

    assert matter.present
    assert matter.entries == (("id", "run-1"), ("owner", "me"), ("title", "A: B"))
    assert matter.body == GOAL_BODY
    assert matter.get("owner") == "me"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "---\nid: run-1\n# Goal\n",
            "frontmatter opened with '---' on line 1 is never closed",
            id="never closed",
        ),
        pytest.param(
            "---\nid: run-1\nnot a pair\n---\n",
            "frontmatter line 3 is not 'key: value': 'not a pair'",
            id="not key value",
        ),
        pytest.param(
            "---\nid: run-1\nid: run-2\n---\n",
            "frontmatter key 'id' appears twice (line 3)",
            id="duplicated key",
        ),
        pytest.param(
            "---\nid: run-1\n---\n\n---\nid: run-2\n---\n# Goal\n",
            "GOAL.md has a second frontmatter block; keep only one",
            id="second block",
        ),
    ],
)
def test_broken_frontmatter_is_refused_with_its_reason(text: str, message: str) -> None:
    with pytest.raises(RunIdentityError) as raised:
        parse_frontmatter(text)

    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("text", "run_id"),
    [
        (GOAL_BODY, None),
        ("---\nowner: me\n---\n" + GOAL_BODY, None),
        ("---\nid: run-1a2b3c4d\n---\n" + GOAL_BODY, "run-1a2b3c4d"),
        ("---\nid: 'run-1a2b3c4d-2'\n---\n", "run-1a2b3c4d-2"),
    ],
)
def test_the_goal_run_id_is_the_frontmatter_id(text: str, run_id: str | None) -> None:
    assert goal_run_id(text) == run_id


def test_an_unusable_frontmatter_id_is_refused() -> None:
    with pytest.raises(RunIdentityError) as raised:
        goal_run_id("---\nid: ..\n---\n")

    assert str(raised.value) == "frontmatter id: run id must not be '..'"


def test_with_run_id_adds_frontmatter_to_a_goal_without_one() -> None:
    assert with_run_id(GOAL_BODY, "run-1") == "---\nid: run-1\n---\n" + GOAL_BODY


def test_with_run_id_replaces_the_id_and_keeps_other_keys_and_the_body() -> None:
    text = "---\ntitle: Parser\nid: run-old\nowner: me\n---\n" + GOAL_BODY

    rewritten = with_run_id(text, "run-new")

    assert rewritten == "---\nid: run-new\ntitle: Parser\nowner: me\n---\n" + GOAL_BODY
    assert goal_run_id(rewritten) == "run-new"


def test_with_run_id_adds_the_id_to_frontmatter_that_had_none() -> None:
    text = "---\nowner: me\n---\n" + GOAL_BODY

    assert with_run_id(text, "run-1") == "---\nid: run-1\nowner: me\n---\n" + GOAL_BODY


@pytest.mark.parametrize("brk", ["\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029", "\r"])
@pytest.mark.parametrize(
    "text",
    ["---{b}id: abc{b}---{b}Goal text\n", "---\nkey: v\n---{b}\nGoal\n", "Build{b}the thing\n"],
)
def test_start_writes_a_goal_md_step_reads_back_whatever_its_line_breaks(
    text: str, brk: str
) -> None:
    written = with_run_id(text.format(b=brk), "run-1a2b3c4d")

    assert goal_run_id(written) == "run-1a2b3c4d"
    assert parse_frontmatter(written).body.strip()
