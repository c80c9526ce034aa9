"""The sandbox probe's result kept per boot (runner_shell/sandbox/probe_cache.py): computed once
per key, kept only when the caller says so, never read back from a file someone else could
have written, and recomputed whenever the file is unusable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner_shell.sandbox import probe_cache
from runner_shell.sandbox.probe_cache import (
    boot_key,
    cache_directory,
    cached_probe_result,
    program_key,
)


def counting(result: dict[str, Any]) -> tuple[list[int], Callable[[], dict[str, Any]]]:
    calls: list[int] = []

    def compute() -> dict[str, Any]:
        calls.append(1)
        return dict(result)

    return calls, compute


def test_a_result_is_computed_once_per_key_and_read_back_after(tmp_path: Path) -> None:
    calls, compute = counting({"bwrap": "/usr/bin/bwrap", "problem": None})
    first = cached_probe_result("k", compute, directory=tmp_path)
    second = cached_probe_result("k", compute, directory=tmp_path)
    assert first == second == {"bwrap": "/usr/bin/bwrap", "problem": None}
    assert len(calls) == 1
    cached_probe_result("other", compute, directory=tmp_path)
    assert len(calls) == 2
    kept = sorted(tmp_path.iterdir())
    assert len(kept) == 2
    assert all(path.stat().st_mode & 0o777 == 0o600 for path in kept)


def test_a_result_the_caller_does_not_keep_is_computed_every_time(tmp_path: Path) -> None:
    calls, compute = counting({"bwrap": None, "problem": "refused"})
    for _ in range(3):
        cached_probe_result("k", compute, keep=lambda _r: False, directory=tmp_path)
    assert len(calls) == 3
    assert list(tmp_path.iterdir()) == []


def test_a_damaged_foreign_or_open_file_is_not_read(tmp_path: Path) -> None:
    calls, compute = counting({"v": 1})
    cached_probe_result("k", compute, directory=tmp_path)
    (kept,) = tmp_path.iterdir()
    kept.write_text("{not json", encoding="utf-8")
    assert cached_probe_result("k", compute, directory=tmp_path) == {"v": 1}
    assert len(calls) == 2
    # A file naming another key (a hash collision or a copy) is not this key's result.
    document = json.loads(kept.read_text(encoding="utf-8"))
    kept.write_text(json.dumps({"key": "else", "result": {"v": 2}}), encoding="utf-8")
    assert cached_probe_result("k", compute, directory=tmp_path) == {"v": 1}
    assert len(calls) == 3
    # Writable by the group or others: anyone could have forged it.
    kept.write_text(json.dumps({**document, "result": {"v": 3}}), encoding="utf-8")
    kept.chmod(0o666)
    assert cached_probe_result("k", compute, directory=tmp_path) == {"v": 1}
    assert len(calls) == 4


def test_a_new_directory_is_the_users_alone(tmp_path: Path) -> None:
    _calls, compute = counting({"v": 1})
    cached_probe_result("k", compute, directory=tmp_path / "runner")
    assert (tmp_path / "runner").stat().st_mode & 0o777 == 0o700


def test_an_unwritable_directory_computes_each_time_and_never_fails(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    calls, compute = counting({"v": 1})
    for _ in range(2):
        assert cached_probe_result("k", compute, directory=blocker / "runner") == {"v": 1}
    assert len(calls) == 2


@pytest.fixture
def boot(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The boot id file the cache reads, holding `boot-a`; write another id for a reboot."""
    path = tmp_path / "boot_id"
    path.write_text("boot-a\n", encoding="ascii")
    monkeypatch.setattr(probe_cache, "BOOT_ID", path)
    return path


def test_the_key_holds_kernel_boot_and_user(boot: Path, tmp_path: Path) -> None:
    first = boot_key("k")
    assert os.uname().release in first and "boot-a" in first and str(os.getuid()) in first
    calls, compute = counting({"v": 1})
    cached_probe_result("k", compute, directory=tmp_path / "c")
    boot.write_text("boot-b\n", encoding="ascii")  # a reboot: learned again
    cached_probe_result("k", compute, directory=tmp_path / "c")
    assert len(calls) == 2


def test_writing_a_result_forgets_those_of_other_boots(boot: Path, tmp_path: Path) -> None:
    folder = tmp_path / "c"
    _calls, compute = counting({"v": 1})
    cached_probe_result("k", compute, directory=folder)
    cached_probe_result("other", compute, directory=folder)
    damaged = folder / "probe-0000dead.json"
    damaged.write_text("{not json", encoding="utf-8")
    unrelated = folder / "notes.json"
    unrelated.write_text("{}", encoding="utf-8")
    before = sorted(path.name for path in folder.glob("probe-*.json") if path != damaged)
    boot.write_text("boot-b\n", encoding="ascii")  # a reboot
    cached_probe_result("k", compute, directory=folder)
    after = sorted(path.name for path in folder.glob("probe-*.json"))
    # Only this boot's result is left (its name is another: the key holds the boot).
    assert len(after) == 1 and after[0] not in before
    assert unrelated.exists()
    # A result of this boot for another key stays.
    cached_probe_result("other", compute, directory=folder)
    assert len(list(folder.glob("probe-*.json"))) == 2


def test_a_replaced_program_has_another_key(tmp_path: Path) -> None:
    program = tmp_path / "bwrap"
    program.write_text("#!/bin/sh\n", encoding="utf-8")
    before = program_key(str(program))
    replacement = tmp_path / "new"
    replacement.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    replacement.replace(program)
    assert program_key(str(program)) != before


def test_the_cache_directory_is_per_boot_where_there_is_one(tmp_path: Path) -> None:
    assert cache_directory({"XDG_RUNTIME_DIR": "/run/user/7", "HOME": "/h"}) == Path(
        "/run/user/7/runner"
    )
    assert cache_directory({"XDG_CACHE_HOME": "/c", "HOME": "/h"}) == Path("/c/runner")
    assert cache_directory({"HOME": "/h"}) == Path("/h/.cache/runner")


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_a_second_process_starts_no_probe_sandbox(tmp_path: Path) -> None:
    """The first process probes (one bwrap started); the next one of the boot starts none."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    log = tmp_path / "bwrap.log"
    real = shutil.which("bwrap")
    wrapper = fake_bin / "bwrap"
    wrapper.write_text(
        f'#!/bin/sh\necho started >> "{log}"\nexec "{real}" "$@"\n', encoding="utf-8"
    )
    wrapper.chmod(0o755)
    environment = {
        **os.environ,
        "PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}",
        "XDG_RUNTIME_DIR": str(tmp_path / "runtime"),
    }
    code = (
        "from runner_shell.sandbox.status import cached_probe; p = cached_probe(); "
        "print(p.bwrap, p.problem)"
    )
    outputs = [
        subprocess.run(
            [sys.executable, "-c", code],
            env=environment,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for _ in range(2)
    ]
    started = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    if outputs[0].split()[0] == "None":
        pytest.skip(f"bubblewrap does not work here: {outputs[0]}")
    assert outputs == [f"{wrapper} None\n"] * 2
    assert started == ["started"]
