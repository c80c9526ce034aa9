"""Scratch slots: the checkout an agent and its guard work in, reset to each iteration's base.

A slot lives in the run's (per-worktree) git directory, `<git-dir>/runner/slots/<n>/`: never
in the work tree (no `git status` or import of the run ever walks it), found and deleted with
the repository, and distinct for each worktree, so two runs in two worktrees never share one.
The sandbox binds only the slot, never the git directory around it.

The slot's `.git` is the agent's to rig (config, hooks, index, refs): the runner trusts none
of it and makes it anew at every reset, then resets the work tree to the base keeping ignored
files (a `.venv`, `node_modules`). Its objects are borrowed read-only (`objects/info/
alternates`) from the slot's own object store beside it, `<n>.objects`, which holds only the
history of the bases the slot was reset to, fetched from the run (`git fetch` of the base
commit alone, the new commits only at each reset): never the user's other branches, stashes,
unreachable objects or another slot's unmerged imports, which the run's own store holds.

A slot whose reset fails is deleted (any depth, any modes, never through a symlink) or, when
even that fails, set aside as `<n>.broken-<stamp>`, and made again; the `[sandbox] setup`
command runs once each time a slot is made.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import attrs

from runner_core.run.config import Config
from runner_core.run.environment import guard_environment
from runner_shell.git.hardened import GitError, run_git
from runner_shell.git.repo import Repo
from runner_shell.sandbox.processes import SpawnError, run_process
from runner_shell.sandbox.status import sandbox_status
from runner_shell.scratch.sandbox import Sandbox
from runner_shell.scratch.setup_outputs import setup_outputs, setup_outputs_file
from runner_shell.store.files import atomic_write_bytes, make_directory
from runner_shell.store.layout import RunnerPaths
from runner_shell.store.removal import remove_entry, remove_tree

SLOTS_DIR = "runner/slots"
# Deadline of each git command of a reset and of the setup command.
SLOT_GIT_TIMEOUT_SECS = 600.0
SETUP_TIMEOUT_SECS = 1800.0
SETUP_LOG_LIMIT_BYTES = 100_000


class SlotError(Exception):
    """A slot could not be made or reset; str() is one line naming the slot and why."""


def slot_path(repo: Repo, number: int = 0) -> Path:
    return repo.git_path(f"{SLOTS_DIR}/{number}")


def _ready_marker(slot: Path) -> Path:
    """Beside the slot, out of the agent's reach: the slot was made and its setup ran."""
    return slot.parent / f"{slot.name}.ready"


def _index(slot: Path) -> Path:
    """Beside the slot, out of the agent's reach: the index of the slot's last reset, whose
    stat data tell which files anyone touched since (a changed file's ctime moves, whatever
    else it keeps)."""
    return slot.parent / f"{slot.name}.index"


def prepare_slot(
    repo: Repo,
    base: str,
    setup: Sequence[str] = (),
    number: int = 0,
    sandbox: Sandbox | None = None,
) -> Path:
    """Slot `number` checked out at commit `base`, made (and set up) first when it is not there."""
    slot = slot_path(repo, number)
    made = not _is_plain_directory(slot) or not _ready_for(slot, setup, sandbox)
    try:
        if made:
            _make(slot)
        _reset(repo, slot, base, made)
    except (GitError, OSError) as error:
        if made and not isinstance(error, OSError):
            raise SlotError(f"scratch checkout {slot} could not be made: {error}") from None
        _replace(slot, error)  # a reset the agent's leftovers defeat: start over
        made = True
        try:
            _reset(repo, slot, base, made)
        except (GitError, OSError) as again:
            raise SlotError(f"scratch checkout {slot} could not be made: {again}") from None
    if made:
        _set_up(slot, setup, sandbox)
    return slot


def _fingerprint(slot: Path) -> bytes:
    """What the setup outputs are now, every entry's name, kind, mode, size and times: an
    unconfined agent or guard that changed any of them changes this."""
    import hashlib

    digest = hashlib.sha256()
    for top in setup_outputs(slot):
        stack = [top]
        while stack:
            directory = stack.pop()
            if not directory.is_dir():
                break
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
            for entry in entries:
                facts = entry.stat(follow_symlinks=False)
                digest.update(os.fsencode(entry.path) + b"\0")
                digest.update(
                    b"%d %d %d %d\n"
                    % (facts.st_mode, facts.st_size, facts.st_mtime_ns, facts.st_ctime_ns)
                )
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
        if top.is_file():
            facts = top.stat()
            digest.update(b"%d %d %d\n" % (facts.st_size, facts.st_mtime_ns, facts.st_ctime_ns))
    return digest.hexdigest().encode()


def _ready_for(slot: Path, setup: Sequence[str], sandbox: Sandbox | None) -> bool:
    """Whether the slot was made with this setup command and what it made is as it left it
    (checked where no sandbox holds it read-only): else it is made again."""
    try:
        marker = _ready_marker(slot).read_bytes()
    except OSError:
        return False
    argv, _, fingerprint = marker.partition(b"\n")
    if argv != _argv_bytes(setup):
        return False
    confined = sandbox is not None and sandbox.status.bwrap is not None
    return confined or not fingerprint or fingerprint == _fingerprint(slot)


def _argv_bytes(setup: Sequence[str]) -> bytes:
    return b"\0".join(os.fsencode(part) for part in setup)


def _is_plain_directory(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def set_aside(slot: Path) -> Path | None:
    """Move a slot that cannot be reset or removed out of the way (`<n>.broken-<stamp>`,
    beside it), for the operator to look at; None when it could not be moved either."""
    for _ in range(3):
        aside = slot.with_name(
            f"{slot.name}.broken-{time.strftime('%Y%m%dT%H%M%S')}-{os.urandom(3).hex()}"
        )
        try:
            os.rename(slot, aside)
        except FileNotFoundError:
            return None
        except OSError:
            continue
        return aside
    return None


def _replace(slot: Path, error: Exception) -> None:
    """A new, empty slot in place of one that could not be reset: removed, or, when even that
    fails, set aside with one warning line naming where."""
    try:
        _make(slot)
        return
    except OSError:
        pass
    aside = set_aside(slot)
    where = f"set aside as {aside}" if aside is not None else "left in place"
    print(
        f"runner: warning: scratch checkout {slot} could not be reset ({error}); {where}, "
        "and a new one made",
        file=sys.stderr,
    )
    _make(slot)


def slot_objects(slots_dir: Path, number: int) -> Path:
    """The object directory of slot `number`'s own store: what its processes may read."""
    return slots_dir / f"{number}.objects" / "objects"


def _store(slot: Path) -> Path:
    return slot.parent / f"{slot.name}.objects"


# The ref of the store that names the last base fetched, so the next fetch sends only what is new.
_BASE_REF = "refs/base"


def _feed_store(repo: Repo, slot: Path, base: str) -> Path:
    """The slot's own object store holding `base` and its history: made when missing (a bare
    repository of the runner's, out of the agent's reach), then fetched into from the run
    unless it is already at `base`. Its objects directory."""
    store = _store(slot)
    if not _is_plain_directory(store / "objects"):
        remove_tree(store)
        _copy_plain(_empty_git(slot), store)  # an empty git directory, as git init made it
    try:
        fetched = (store / _BASE_REF).read_bytes().strip().decode("ascii", "replace")
    except OSError:
        fetched = ""
    if fetched != base:
        env = dict(os.environ, GIT_DIR=str(store))
        for name in ("GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"):
            env.pop(name, None)
        # The base by its id, which need not be a branch's tip (a parallel job's start): the
        # run's upload-pack (a local process, the same user) is told to serve it.
        count = int(env.get("GIT_CONFIG_COUNT", "0") or "0")
        env.update(
            {
                f"GIT_CONFIG_KEY_{count}": "uploadpack.allowAnySHA1InWant",
                f"GIT_CONFIG_VALUE_{count}": "true",
                "GIT_CONFIG_COUNT": str(count + 1),
            }
        )
        args = (
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            "--no-auto-gc",
            str(repo.common_path("")),
            f"+{base}:{_BASE_REF}",
        )
        result = run_git(args, store, env=env, timeout=SLOT_GIT_TIMEOUT_SECS)
        if result.returncode != 0:
            raise GitError.failed(args, result.stderr.decode("utf-8", "replace"))
    return store / "objects"


def _new_git_dir(slot: Path) -> Path:
    """Beside the slot, out of the agent's reach: an empty `.git` git itself made (it probes
    the file system), copied into the slot at every reset instead of running `git init`."""
    return slot.parent / f"{slot.name}.empty-git"


def _make(slot: Path) -> None:
    _ready_marker(slot).unlink(missing_ok=True)
    setup_outputs_file(slot).unlink(missing_ok=True)
    remove_tree(_store(slot))  # a new slot starts from the run's history alone
    _index(slot).unlink(missing_ok=True)
    remove_tree(_new_git_dir(slot))
    remove_tree(slot)
    make_directory(slot)


def _git(slot: Path, *args: str, ok_codes: tuple[int, ...] = (0,)) -> bytes:
    env = dict(os.environ, GIT_DIR=str(slot / ".git"), GIT_WORK_TREE=str(slot))
    env["GIT_INDEX_FILE"] = str(_index(slot))
    # The reset's own move of the branch is logged nowhere: three directories fewer to make
    # now and to delete at the next reset (the agent's git keeps its reflog as configured).
    env.update(
        GIT_CONFIG_COUNT="1",
        GIT_CONFIG_KEY_0="core.logAllRefUpdates",
        GIT_CONFIG_VALUE_0="false",
    )
    for name in ("GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"):
        env.pop(name, None)
    result = run_git(args, slot, env=env, timeout=SLOT_GIT_TIMEOUT_SECS)
    if result.returncode not in ok_codes:
        raise GitError.failed(args, result.stderr.decode("utf-8", "replace"))
    return result.stdout


def _reset(repo: Repo, slot: Path, base: str, made: bool) -> None:
    """A new `.git` borrowing the run's objects, then the work tree made the base's: tracked
    files rewritten where they differ, untracked files removed, ignored ones kept.

    git works from the runner's own index beside the slot, never the slot's: its stat data
    (from the last reset) send every file touched since to be rewritten, and a copy of it is
    the agent's. A slot just `made` is empty; any other without one gets one read from the
    base and refreshed, so the reset rewrites only what differs from the base."""
    objects = _feed_store(repo, slot, base)
    remove_tree(slot / ".git")
    _copy_plain(_empty_git(slot), slot / ".git")
    # The highest of git's attribute sources: the reset writes every file's bytes as the
    # commit holds them, whatever `.gitattributes` the agent left (an encoding, eol, filter).
    neutral = slot / ".git/info/attributes"
    make_directory(neutral.parent)
    atomic_write_bytes(neutral, _NO_CONVERSION, durable=False)
    # Remade at every reset: a crash loses nothing the next reset does not write again.
    alternates = slot / ".git/objects/info/alternates"
    atomic_write_bytes(alternates, os.fsencode(objects) + b"\n", durable=False)
    if not made and not _index(slot).is_file():
        _git(slot, "read-tree", base)
        _git(slot, "update-index", "-q", "--refresh", ok_codes=(0, 1))
    _git(slot, "reset", "--quiet", "--hard", base)
    _remove_untracked(slot)
    shutil.copyfile(_index(slot), slot / ".git/index", follow_symlinks=False)


def _remove_untracked(slot: Path) -> None:
    """Every untracked file goes, ignored ones too, but what `[sandbox] setup` made: git names
    them (a wholly untracked directory once, unentered), the runner removes them, any depth,
    never through a symlink (`git clean` walks a deep tree for long, and fails on one past
    PATH_MAX)."""
    listed = _git(slot, "ls-files", "-z", "--others", "--directory")
    kept = {path.name for path in setup_outputs(slot)}
    for name in listed.split(b"\0"):
        relative = os.fsdecode(name).rstrip("/")
        if not relative or relative.split("/")[0] in kept:
            continue
        parent_part, _, entry = relative.rpartition("/")
        try:
            parent = _open_below(slot, parent_part)
        except OSError:
            continue  # its directory is gone or was swapped for a symlink: nothing to follow
        try:
            remove_entry(parent, entry)
        finally:
            os.close(parent)


def _open_below(slot: Path, relative: str) -> int:
    """A descriptor of the slot's directory `relative`, no component followed as a symlink."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(slot, flags)
    for part in relative.split("/") if relative else ():
        try:
            child = os.open(part, flags, dir_fd=fd)
        finally:
            os.close(fd)
        fd = child
    return fd


def _copy_plain(source: Path, target: Path) -> None:
    """A copy of the runner's own directory `source` (directories and regular files only, as
    `git init` makes them), with the modes any new file gets: one syscall or three an entry."""
    os.mkdir(target)
    with os.scandir(source) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                _copy_plain(Path(entry.path), target / entry.name)
            else:
                with open(entry.path, "rb") as found:
                    data = found.read()
                fd = os.open(target / entry.name, _NEW_FILE_FLAGS, 0o666)
                with os.fdopen(fd, "wb") as made:
                    made.write(data)


_NO_CONVERSION = b"* -text -eol -crlf -ident -filter -working-tree-encoding\n"
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# Directories `git init` makes that git makes again when it needs them: each costs a
# directory made and deleted at every reset.
_MADE_WHEN_NEEDED = ("objects/pack", "refs/heads", "refs/tags")


def _empty_git(slot: Path) -> Path:
    """The empty `.git` to copy, made by `git init` (into a new directory renamed into place,
    so a half-made one is never used) when it is not there."""
    made = _new_git_dir(slot)
    if not _is_plain_directory(made):
        remove_tree(made)
        partial = made.with_name(made.name + ".new")
        remove_tree(partial)
        env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
        args = ("init", "--quiet", "--template=", str(partial))
        result = run_git(args, slot.parent, env=env, timeout=SLOT_GIT_TIMEOUT_SECS)
        if result.returncode != 0:
            raise GitError.failed(args, result.stderr.decode("utf-8", "replace"))
        for name in _MADE_WHEN_NEEDED:
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(partial / ".git" / name)
        os.rename(partial, made)
    return made / ".git"


def _set_up(slot: Path, setup: Sequence[str], sandbox: Sandbox | None) -> None:
    """Run the `[sandbox] setup` command in the new slot; the slot counts as made only once it
    succeeded, so a failed or interrupted setup runs again at the next iteration."""
    if setup:
        log = slot.parent / f"{slot.name}.setup.log"
        env = (
            guard_environment(os.environ, ()) if sandbox is None else sandbox.setup_env(os.environ)
        )
        confinement = None
        if sandbox is not None:
            confinement = sandbox.confine(setup, slot, (), network=True, home_name="setup")
        try:
            result = run_process(
                setup,
                confinement=confinement,
                cwd=slot,
                env=env,
                stdin_path=None,
                timeout_secs=SETUP_TIMEOUT_SECS,
                log_path=log,
                limit_bytes=SETUP_LOG_LIMIT_BYTES,
            )
        except SpawnError as error:
            raise SlotError(f"[sandbox] setup could not start: {error.reason}") from None
        if result.exit_code != 0 or result.limit is not None:
            ended = "timed out" if result.timed_out else f"exited {result.exit_code}"
            if result.limit is not None:
                ended = f"reached the sandbox's {result.limit} (raise [sandbox] {result.limit})"
            raise SlotError(f"[sandbox] setup {ended} in {slot}; see {log}")
    with contextlib.suppress(FileNotFoundError):
        _ready_marker(slot).unlink()
    # What setup left that the base ignores (a slot without setup holds none).
    listing = ("ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
    made = _git(slot, *listing) if setup else b""
    tops = sorted({name.rstrip(b"/").split(b"/")[0] for name in made.split(b"\0") if name})
    atomic_write_bytes(setup_outputs_file(slot), b"".join(top + b"\0" for top in tops))
    marker = _argv_bytes(setup) + b"\n" + (_fingerprint(slot) if setup else b"")
    atomic_write_bytes(_ready_marker(slot), marker)


def step_sandbox(paths: RunnerPaths, repo: Repo, config: Config) -> Sandbox:
    """The step's sandbox: SandboxRefused when `[sandbox] mode = "bwrap"` finds none; its
    processes never see the run's repository or its git directory."""
    status = sandbox_status(config).require()
    common = repo.common_path("").resolve()
    root = paths.root.resolve()
    hide = (root,) if common.is_relative_to(root) else (root, common)
    # The slot's .git borrows its own store's objects (read-only) through its alternates:
    # the base's history alone, never the run's whole object store.
    slots = slot_path(repo, 0).parent
    shared = (slot_objects(slots, 0), *map(Path, config.sandbox.read_only))
    extra = tuple(map(Path, config.sandbox.writable))
    return Sandbox(
        status,
        hide,
        slots / "homes",
        shared,
        extra,
        agent_variables=config.sandbox.env,
        guard_variables=config.guard_env,
    )


def slot_sandbox(sandbox: Sandbox | None, slot: int) -> Sandbox | None:
    """Each slot's processes get private HOMEs of their own: two agents never share one, and
    see their own slot's object store, never another's."""
    if sandbox is None:
        return None
    slots = sandbox.homes.parent
    stores = {slot_objects(slots, number) for number in range(_slot_of(sandbox) + 1)}
    shared = tuple(slot_objects(slots, slot) if path in stores else path for path in sandbox.shared)
    return attrs.evolve(sandbox, homes=slots / f"homes-{slot}", shared=shared)


def _slot_of(sandbox: Sandbox) -> int:
    """The slot a sandbox was made for (0 before `slot_sandbox` gave it one): the number of
    its HOMEs directory, `homes-<n>`."""
    _, _, number = sandbox.homes.name.partition("-")
    return int(number) if number.isdigit() else 0
