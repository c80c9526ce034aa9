"""Scratch slots: the checkout an agent and its guard work in, reset to each iteration's base.

A slot lives in the run's (per-worktree) git directory, `<git-dir>/runner/slots/<n>/`: never
in the work tree (no `git status` or import of the run ever walks it), found and deleted with
the repository, and distinct for each worktree, so two runs in two worktrees never share one.
The sandbox binds only the slot, never the git directory around it.

The slot's `.git` is the agent's to rig (config, hooks, index, refs): the runner trusts none
of it and makes it anew at every reset, then resets the work tree to the base keeping ignored
files (a `.venv`, `node_modules`). Its objects are borrowed read-only (`objects/info/
alternates`) from the slot's own object store beside it, `<n>.objects`, which holds only the
history of the bases the slot was reset to, taken from the run (the new commits' objects only,
as the run's `git rev-list` of the base lists them: hard-linked when the run holds them loose,
else a `git fetch` of the base commit alone): never the user's other branches, stashes,
unreachable objects or another slot's unmerged imports, which the run's own store holds.

A slot whose reset fails is deleted (any depth, any modes, never through a symlink) or, when
even that fails, set aside as `<n>.broken-<stamp>`, and made again; the `[sandbox] setup`
command runs each time a slot is made, and again when its inputs change
(runner_shell.scratch.setup_runs).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import attrs

from runner_core.run.config import Config
from runner_shell.git.hardened import GitError, run_git
from runner_shell.git.repo import Repo
from runner_shell.sandbox.status import sandbox_status
from runner_shell.scratch.sandbox import Sandbox, refuse_seen_places
from runner_shell.scratch.setup_outputs import setup_outputs, setup_outputs_file
from runner_shell.scratch.setup_runs import (
    SetupFailed,
    inputs_changed,
    ready_for,
    ready_marker,
    set_up,
    set_up_again,
)
from runner_shell.scratch.slot_git import SLOT_GIT_TIMEOUT_SECS, index_file, remove_listed
from runner_shell.scratch.slot_git import SlotError as SlotError
from runner_shell.scratch.slot_git import slot_git as _git
from runner_shell.store.files import atomic_write_bytes, make_directory
from runner_shell.store.layout import Places
from runner_shell.store.removal import remove_tree

SLOTS_DIR = "runner/slots"


def slot_path(repo: Repo, number: int = 0) -> Path:
    return repo.git_path(f"{SLOTS_DIR}/{number}")


def prepare_slot(
    repo: Repo,
    base: str,
    setup: Sequence[str] = (),
    number: int = 0,
    sandbox: Sandbox | None = None,
    inputs: Sequence[str] = (),
    attempt: bool = False,
) -> Path:
    """Slot `number` checked out at commit `base`, made (and set up) first when it is not there,
    set up again when the base's files of `inputs` are not those its setup ran on. An
    `attempt` (`base` holds an earlier attempt's files, its inputs maybe what broke setup) is
    checked out without setup's output when setup fails on it: its agent may fix them, and
    the setup run again before its guard judges whether it did."""
    slot = slot_path(repo, number)
    made = not _is_plain_directory(slot) or not ready_for(slot, setup, sandbox)
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
    try:
        if made:
            set_up(slot, setup, inputs, sandbox)
        elif setup and inputs_changed(slot, inputs):
            set_up_again(slot, setup, inputs, sandbox)
    except SetupFailed as error:
        if not attempt:
            raise
        print(
            f"runner: warning: {error} (on the previous attempt's files); the agent starts "
            "without what setup makes",
            file=sys.stderr,
        )
    return slot


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
    if fetched != base and not _linked(repo, store, fetched, base):
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


def _linked(repo: Repo, store: Path, fetched: str, base: str) -> bool:
    """Whether the objects of `base` the store lacks since `fetched` were hard-linked into it
    from the run's store, and the store now names `base`: the objects a fetch would have sent
    (those reachable from `base` and not from `fetched`, listed by the run's git), when every
    one is a loose object file there. A large tree's new blob then costs a link, not a pack
    made, sent and unpacked at every reset. False when one is not (packed, or anything odd):
    the caller fetches."""
    if not fetched:
        return False
    listed = run_git(
        ("rev-list", "--objects", base, "--not", fetched, "--"),
        repo.root,
        timeout=SLOT_GIT_TIMEOUT_SECS,
    )
    if listed.returncode != 0:
        return False
    source = repo.common_path("objects")
    names = [
        line.split(b" ", 1)[0].decode("ascii", "replace")
        for line in listed.stdout.split(b"\n")
        if line
    ]
    for name in names:
        found, target = source / name[:2] / name[2:], store / "objects" / name[:2] / name[2:]
        try:
            if not stat.S_ISREG(os.lstat(found).st_mode):
                return False
            make_directory(target.parent)
            os.link(found, target, follow_symlinks=False)
        except FileExistsError:
            continue  # the store has it already: same name, same bytes
        except OSError:
            return False
    atomic_write_bytes(store / _BASE_REF, base.encode("ascii") + b"\n", durable=False)
    return True


def _new_git_dir(slot: Path) -> Path:
    """Beside the slot, out of the agent's reach: an empty `.git` git itself made (it probes
    the file system), copied into the slot at every reset instead of running `git init`."""
    return slot.parent / f"{slot.name}.empty-git"


def _make(slot: Path) -> None:
    ready_marker(slot).unlink(missing_ok=True)
    setup_outputs_file(slot).unlink(missing_ok=True)
    remove_tree(_store(slot))  # a new slot starts from the run's history alone
    index_file(slot).unlink(missing_ok=True)
    remove_tree(_new_git_dir(slot))
    remove_tree(slot)
    make_directory(slot)


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
    if not made and not index_file(slot).is_file():
        _git(slot, "read-tree", base)
        _git(slot, "update-index", "-q", "--refresh", ok_codes=(0, 1))
    _git(slot, "reset", "--quiet", "--hard", base)
    # Every untracked file goes, ignored ones too, but what `[sandbox] setup` made.
    listed = _git(slot, "ls-files", "-z", "--others", "--directory")
    remove_listed(slot, listed, {path.name for path in setup_outputs(slot)})
    shutil.copyfile(index_file(slot), slot / ".git/index", follow_symlinks=False)


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


def step_sandbox(paths: Places, repo: Repo, config: Config) -> Sandbox:
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
    if status.bwrap is not None:
        refuse_seen_places(
            (
                *(("the repository", path) for path in hide),
                *(("[sandbox] read_only entry", path) for path in shared[1:]),
                *(("[sandbox] writable entry", path) for path in extra),
            )
        )
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
