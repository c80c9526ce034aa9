"""One runner at a time, and the journal of the iteration in progress.

The lock is an `flock` on a file in the git directory: the kernel drops it when its holder
dies, so a lock left by a killed runner is taken over safely and never needs cleaning. The
journal lives in the git directory too, never in the work tree, so it is never committed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import signal
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from runner_shell.errors import UserFacingError
from runner_shell.git.repo import Repo
from runner_shell.store.files import atomic_write_text, read_bytes_capped, read_text_head

# A parallel job's changes file is read and written by the jobs and `recover` alone: the views
# and `validate`, which read journals, spare its rules' import. The journal's model is imported
# once there is a journal to read or write: `validate` between iterations reads none.
if TYPE_CHECKING:
    from runner_core.iteration.recovery import Journal
    from runner_core.parallel.job_changes import JobChanges

# A journal is a few hundred bytes.
JOURNAL_MAX_BYTES = 1024 * 1024
# A job's changes: a line per path its agent changed.
JOB_CHANGES_MAX_BYTES = 64 * 1024 * 1024


def run_place(repo: Repo, name: str) -> Path:
    """`name` in the common git directory, or in the run's own directory there when `repo` is
    the run's own checkout (`.git/runner/runs/<id>/checkout`): one lock and journal per run,
    so two runs loop at once, while two worktrees on one run branch still share one."""
    common = repo.common_path("")
    root = repo.root.resolve()
    if root.name == "checkout" and root.parent.parent == (common / "runner" / "runs").resolve():
        return common / "runner" / "runs" / root.parent.name / name
    return common / name


def journal_path(repo: Repo) -> Path:
    """In the common git directory: every worktree of a run shares one journal."""
    return run_place(repo, "runner-journal.json")


def lock_path(repo: Repo) -> Path:
    """In the common git directory: two worktrees on one run branch never run at once."""
    return run_place(repo, "runner.lock")


def current_command() -> str:
    words = [os.path.basename(sys.argv[0]) or "runner", *sys.argv[1:]]
    if words[0] in ("__main__.py", "-m", "cli.py"):
        words[0] = "runner"
    return " ".join(words)


@contextlib.contextmanager
def exclusive_lock(repo: Repo) -> Iterator[None]:
    """Hold the repository's runner lock, or fail at once naming who holds it."""
    path = lock_path(repo)
    try:  # never a symlink's target: an agent's `ln -s` must not make us truncate a file
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        raise UserFacingError(
            f"{path} is a symlink; the runner never opens its lock through one (remove it)"
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, LOCK_HOLDER_MAX_BYTES, 0).decode("utf-8", errors="replace")
            holder = holder.strip()
            raise UserFacingError(
                f"another runner holds the lock on this repository ({holder or 'unknown holder'}); "
                "wait for it to finish or stop it"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder_line(os.getpid(), current_command()).encode(), 0)
        yield
    finally:
        os.close(fd)


PROC_LOCKS = Path("/proc/locks")


def lock_held(repo: Repo) -> bool:
    """Whether a runner holds the repository's lock now, between its iterations too, found
    without taking it: Linux lists every flock in /proc/locks; elsewhere the process the lock
    file names must be alive. Never opens a FIFO or follows a symlink planted there."""
    try:
        facts = os.stat(lock_path(repo), follow_symlinks=False)
    except OSError:
        return False
    if not stat.S_ISREG(facts.st_mode):
        return False
    try:
        table = PROC_LOCKS.read_text(encoding="ascii", errors="replace")
    except OSError:
        return _named_holder_alive(repo)
    device = f"{os.major(facts.st_dev):02x}:{os.minor(facts.st_dev):02x}"
    holders = flock_holders(table, facts.st_ino)
    if any(on_device == device for on_device, _ in holders):
        return True
    # On btrfs stat names the subvolume's anonymous device, /proc/locks the filesystem's: a lock
    # on the same inode elsewhere is ours when its process is the one the lock file names. No
    # line for the inode at all is no lock: the file still names the last holder once it ended.
    named = _named_holder(repo)
    return named is not None and any(pid == named for _, pid in holders)


def flock_holders(table: str, inode: int) -> tuple[tuple[str, int], ...]:
    """The (device `maj:min`, pid) of every flock /proc/locks lists on `inode`; waiters
    (`N: -> ...`) are not holders."""
    found = []
    for line in table.splitlines():
        # `N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE START END`
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK" or not fields[4].isdigit():
            continue
        device, _, number = fields[5].rpartition(":")
        if number == str(inode):
            found.append((device, int(fields[4])))
    return tuple(found)


# The lock file names its holder in its first line: `pid N: command`; it is read this far.
LOCK_HOLDER_MAX_BYTES = 4096
# Above Linux's PID_MAX_LIMIT (2**22): a larger number in the lock file is not a process.
PID_LIMIT = 2**22


def holder_line(pid: int, command: str) -> str:
    """The lock file's content while `pid` runs `command` holding the lock."""
    return f"pid {pid}: {command}\n"


def holder_pid(text: str) -> int | None:
    """The pid a lock file's `holder_line` names; None for anything else (damage, a plant)."""
    words = text.split(maxsplit=2)
    if len(words) < 2 or words[0] != "pid" or not words[1].endswith(":"):
        return None
    number = words[1].removesuffix(":")
    if not (number.isascii() and number.isdigit()) or not 0 < int(number) <= PID_LIMIT:
        return None
    return int(number)


def _named_holder(repo: Repo) -> int | None:
    try:
        return holder_pid(read_text_head(lock_path(repo), LOCK_HOLDER_MAX_BYTES))
    except OSError:
        return None


def _named_holder_alive(repo: Repo) -> bool:
    named = _named_holder(repo)
    return named is not None and runner_alive(named)


def runner_alive(pid: int) -> bool:
    """Whether `pid` is a running process (not a zombie): the journal's runner still at work."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        proc_stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True  # no /proc: signal 0 is all we can ask
    return proc_stat.rsplit(")", 1)[-1].split()[:1] not in (["Z"], ["X"])


def crash_point(name: str) -> None:
    """Test-only: die by SIGKILL here when RUNNER_TEST_CRASH_AT names this point.

    The crash-safety tests use it to kill the runner at an exact phase of an iteration
    (tests/test_lock_and_recovery.py); with the variable unset it does nothing.
    """
    if os.environ.get("RUNNER_TEST_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


class DamagedJournal(UserFacingError):
    """A journal file that is not a journal (hand-edited, or a broken disk)."""


def read_journal(repo: Repo, path: Path | None = None) -> Journal | None:
    """The run's journal, or a parallel job's at `path`; None when there is none."""
    path = journal_path(repo) if path is None else path
    try:
        data = read_bytes_capped(path, JOURNAL_MAX_BYTES)
    except FileNotFoundError:
        return None
    except OSError as error:  # a symlink, FIFO or huge file planted there is damage
        raise _damaged(path, error.strerror or str(error)) from None
    from runner_core.iteration.recovery import JournalError, journal_from_json

    try:
        return journal_from_json(json.loads(data.decode("utf-8")))
    except (ValueError, JournalError) as error:  # UnicodeDecodeError is a ValueError
        raise _damaged(path, str(error)) from None


def _damaged(path: Path, why: str) -> DamagedJournal:
    return DamagedJournal(
        f"{path} is damaged ({why}); run 'runner recover' to record the iteration it "
        "describes as interrupted, or delete it if no iteration was running"
    )


def job_journal_path(repo: Repo, iteration: int) -> Path:
    """Where a parallel job's journal is kept while it runs in its slot (docs/parallel.md);
    its merge writes the run's journal as any iteration's commit does."""
    return run_place(repo, f"{JOB_JOURNALS}/{iteration}.json")


JOB_JOURNALS = "runner-jobs"


def job_place_path(repo: Repo, iteration: int) -> Path:
    """Beside a job's journal: its slot's number and the commit it started at, for recovery."""
    return run_place(repo, f"{JOB_JOURNALS}/{iteration}.place")


def job_request_path(repo: Repo, iteration: int) -> Path:
    """Beside a remote job's journal: the request its worker was sent (docs/temporal.md)."""
    return run_place(repo, f"{JOB_JOURNALS}/{iteration}.request")


def job_worker_path(repo: Repo, iteration: int) -> Path:
    """Beside a remote job's journal: the identity of the worker running it, once the loop has
    heard it (docs/temporal.md)."""
    return run_place(repo, f"{JOB_JOURNALS}/{iteration}.worker")


def job_changes_path(repo: Repo, iteration: int) -> Path:
    """Beside a finished job's journal: what its agent left, once its slot is another job's."""
    return run_place(repo, f"{JOB_JOURNALS}/{iteration}.changes")


def write_job_changes(repo: Repo, changes: JobChanges) -> None:
    from runner_core.parallel.job_changes import job_changes_json

    text = json.dumps(job_changes_json(changes), sort_keys=True, separators=(",", ":")) + "\n"
    atomic_write_text(job_changes_path(repo, changes.iteration), text)


def read_job_changes(repo: Repo, iteration: int) -> JobChanges | None:
    """Job `iteration`'s changes as its loop wrote them; None when it wrote none. A file that
    is not one it wrote is a `UserFacingError` naming it and the way on."""
    from runner_core.parallel.job_changes import JobChangesError, job_changes_from_json

    path = job_changes_path(repo, iteration)
    try:
        data = read_bytes_capped(path, JOB_CHANGES_MAX_BYTES)
        found = job_changes_from_json(json.loads(data.decode("utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, JobChangesError) as error:  # JobChangesError: a ValueError
        why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise UserFacingError(
            f"{path} is damaged ({why}); delete it to recover iteration {iteration} "
            "without its agent's work"
        ) from None
    if found.iteration != iteration:
        raise UserFacingError(
            f"{path} is about iteration {found.iteration}, not {iteration}; delete it to "
            f"recover iteration {iteration} without its agent's work"
        )
    return found


def job_journals_dir(repo: Repo) -> Path:
    """Where parallel jobs keep their journals: it changes as each is written or removed."""
    return run_place(repo, JOB_JOURNALS)


def job_journals(repo: Repo) -> tuple[tuple[int, Path], ...]:
    """The journals parallel jobs left, by iteration: none once every job has merged."""
    directory = job_journals_dir(repo)
    if not directory.is_dir() or directory.is_symlink():
        return ()
    found = []
    for path in directory.glob("*.json"):
        if path.stem.isdigit():
            found.append((int(path.stem), path))
    return tuple(sorted(found))


def write_journal(repo: Repo, journal: Journal, path: Path | None = None) -> None:
    """The run's journal, or a parallel job's at `path`."""
    from runner_core.iteration.recovery import JournalPhase, journal_to_json

    text = json.dumps(journal_to_json(journal), indent=2) + "\n"
    atomic_write_text(journal_path(repo) if path is None else path, text)
    # `running`, `writing`, `committing`; `running+1` once the agent runs, `running+2` the guard.
    groups = len(journal.process_groups) if journal.phase is JournalPhase.RUNNING else 0
    crash_point(journal.phase.value + (f"+{groups}" if groups else ""))


def clear_journal(repo: Repo) -> None:
    crash_point("committed")
    journal_path(repo).unlink(missing_ok=True)
