"""A backend's private HOME: emptied, then refilled with only the files its CLI reads.

codex gets ~/.codex/{config.toml,auth.json,AGENTS.md} (or $CODEX_HOME's); claude gets
~/.claude/{.credentials.json,settings.json,CLAUDE.md} and ~/.claude.json (or
$CLAUDE_CONFIG_DIR's); a `command` agent gets an empty HOME. The environment then names the
private HOME and drops what would point back at the operator's directories.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner_shell.sandbox import home_files, prepare_home


def every_file(root: Path) -> set[str]:
    return {str(path.relative_to(root)) for path in root.rglob("*") if path.is_file()}


@pytest.fixture
def real_home(tmp_path: Path) -> Path:
    home = tmp_path / "real"
    for relative in (
        ".codex/config.toml",
        ".codex/auth.json",
        ".codex/AGENTS.md",
        ".codex/sessions/2025/old.jsonl",
        ".claude/.credentials.json",
        ".claude/settings.json",
        ".claude/projects/x/history.jsonl",
        ".claude.json",
        ".ssh/id_ed25519",
        ".gitconfig",
    ):
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).write_text(f"real {relative}", encoding="utf-8")
    return home


@pytest.fixture
def private(tmp_path: Path) -> Path:
    home = tmp_path / "private"
    home.mkdir()
    return home


@pytest.mark.parametrize(
    ("backend", "expected"),
    [
        ("codex", {".codex/config.toml", ".codex/auth.json", ".codex/AGENTS.md"}),
        ("claude", {".claude/.credentials.json", ".claude/settings.json", ".claude.json"}),
        ("command", set()),
    ],
)
def test_the_private_home_holds_only_what_the_backend_reads(
    real_home: Path, private: Path, backend: str, expected: set[str]
) -> None:
    prepare_home(private, backend, {"HOME": str(real_home)})

    assert every_file(private) == expected
    assert expected <= set(home_files(backend))
    for relative in expected:
        assert (private / relative).read_text(encoding="utf-8") == f"real {relative}"
        assert (private / relative).stat().st_mode & 0o077 == 0


def test_what_an_earlier_session_left_in_the_private_home_is_gone(
    real_home: Path, private: Path
) -> None:
    (private / ".claude").mkdir()
    (private / ".claude" / "settings.json").write_text('{"hooks": "planted"}', encoding="utf-8")
    (private / ".bashrc").write_text("planted", encoding="utf-8")
    (private / ".cache" / "deep").mkdir(parents=True)

    prepare_home(private, "codex", {"HOME": str(real_home)})

    assert every_file(private) == {".codex/config.toml", ".codex/auth.json", ".codex/AGENTS.md"}
    assert not (private / ".cache").exists()


def test_the_environment_names_the_private_home_and_drops_the_operators_directories(
    real_home: Path, private: Path, tmp_path: Path
) -> None:
    moved = tmp_path / "codex-home"
    moved.mkdir()
    (moved / "auth.json").write_text("moved auth", encoding="utf-8")
    environ = {
        "HOME": str(real_home),
        "PATH": "/usr/bin",
        "CODEX_HOME": str(moved),
        "XDG_CONFIG_HOME": str(real_home / ".config"),
        "XDG_RUNTIME_DIR": "/run/user/1000",
        "OPENAI_API_KEY": "sk-test",
    }

    env = prepare_home(private, "codex", environ)

    assert env == {"HOME": str(private), "PATH": "/usr/bin", "OPENAI_API_KEY": "sk-test"}
    assert every_file(private) == {".codex/auth.json"}
    assert (private / ".codex" / "auth.json").read_text(encoding="utf-8") == "moved auth"


def test_claude_config_dir_is_where_claudes_files_come_from(
    real_home: Path, private: Path, tmp_path: Path
) -> None:
    moved = tmp_path / "claude-config"
    moved.mkdir()
    (moved / ".claude.json").write_text("moved state", encoding="utf-8")

    prepare_home(private, "claude", {"HOME": str(real_home), "CLAUDE_CONFIG_DIR": str(moved)})

    assert every_file(private) == {".claude.json"}
    assert (private / ".claude.json").read_text(encoding="utf-8") == "moved state"


def test_the_real_home_is_never_used_as_the_private_one(real_home: Path) -> None:
    with pytest.raises(ValueError, match="must not be the real one"):
        prepare_home(real_home, "codex", {"HOME": str(real_home)})

    assert (real_home / ".ssh" / "id_ed25519").exists()


def test_a_claude_session_is_told_it_runs_in_bubblewrap(real_home: Path, private: Path) -> None:
    # Claude Code run by root refuses bypassPermissions outside a sandbox it is told of.
    env = prepare_home(private, "claude", {"HOME": str(real_home), "ANTHROPIC_API_KEY": "k"})

    assert env == {"HOME": str(private), "ANTHROPIC_API_KEY": "k", "CLAUDE_CODE_BUBBLEWRAP": "1"}
