"""Reading a file under a cap (runner_shell.store.files): the whole file up to the cap, a
FileTooLarge naming the size beyond it, whether the file is read by path or through its
directory's descriptor, and whatever fstat says its size is (/proc says 0)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner_shell.store.files import FileTooLarge, read_bytes_capped, read_bytes_capped_at


@pytest.fixture
def directory_fd(tmp_path: Path) -> Iterator[int]:
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    yield fd
    os.close(fd)


@pytest.mark.parametrize("size", [0, 1, 99, 100, 4096, 70_000])
def test_a_file_within_the_cap_is_read_whole(tmp_path: Path, directory_fd: int, size: int) -> None:
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    (tmp_path / "f").write_bytes(data)

    assert read_bytes_capped(tmp_path / "f", max(size, 100)) == data
    assert read_bytes_capped_at(directory_fd, "f", max(size, 100)) == data


def test_a_file_over_the_cap_is_refused_with_its_size(tmp_path: Path, directory_fd: int) -> None:
    (tmp_path / "f").write_bytes(b"x" * 101)

    with pytest.raises(FileTooLarge, match=r"f is 101 bytes \(limit 100\)"):
        read_bytes_capped(tmp_path / "f", 100)
    with pytest.raises(FileTooLarge, match=r"^f is 101 bytes \(limit 100\)"):
        read_bytes_capped_at(directory_fd, "f", 100)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_a_file_whose_size_fstat_gives_as_zero_is_read_to_its_end() -> None:
    path = Path("/proc/self/status")
    assert path.stat().st_size == 0

    data = read_bytes_capped(path, 1024 * 1024)
    assert data.startswith(b"Name:") and data.endswith(b"\n") and len(data) > 100
    with pytest.raises(FileTooLarge, match=r"is 11 bytes \(limit 10\)"):
        read_bytes_capped(path, 10)
