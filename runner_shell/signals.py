"""Signals while `runner step` or `runner loop` runs: SIGINT, SIGTERM and SIGHUP become an
`Interrupted` raised inside an agent's or guard's run (whose process group is then killed) or a
wait; a second signal during the cleanup exits at once, leaving the journal for `runner
recover`. What an interrupted loop prints and exits with is decided by its caller.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(BaseException):
    """A signal arrived while an agent, a guard or a wait was running."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class Interrupts:
    """The process's one signal state while `runner step` or `runner loop` runs."""

    pending: int | None = None
    raising: bool = False
    # Set when the loop itself fails with jobs running: they stop as if signalled.
    jobs_stopped: int | None = None

    @classmethod
    def handle(cls, signum: int, _frame: FrameType | None) -> None:
        if cls.pending is not None:
            # A second signal during the cleanup: leave the journal for `runner recover`.
            os._exit(128 + signum)
        cls.pending = signum
        if cls.raising:
            cls.raising = False
            raise Interrupted(signum)

    @classmethod
    def exit_code(cls) -> int | None:
        return None if cls.pending is None else 128 + cls.pending


@contextlib.contextmanager
def signals_handled() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP are the runner's while the block runs."""
    previous = {signum: signal.getsignal(signum) for signum in HANDLED_SIGNALS}
    Interrupts.pending, Interrupts.raising, Interrupts.jobs_stopped = None, False, None
    for signum in HANDLED_SIGNALS:
        signal.signal(signum, Interrupts.handle)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        Interrupts.raising = False


def in_a_job() -> bool:
    """Whether this thread is one of a parallel loop's jobs: only the main thread hears a
    signal, so a job's processes stop by `raise_if_interrupted` instead."""
    return threading.current_thread() is not threading.main_thread()


def raise_if_interrupted() -> None:
    """In a job's thread, a signal the main thread heard (or `stop_jobs`) raises `Interrupted`
    here."""
    signum = Interrupts.pending or Interrupts.jobs_stopped
    if signum is not None and in_a_job():
        raise Interrupted(signum)


def stop_jobs() -> None:
    """Stop every parallel job's processes as SIGTERM would, without the loop hearing one."""
    Interrupts.jobs_stopped = signal.SIGTERM


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """A signal inside the block raises `Interrupted` there; one already pending, at once.
    In a job's thread the process runner asks `raise_if_interrupted` as it waits instead."""
    if Interrupts.pending is not None:
        raise Interrupted(Interrupts.pending)
    if in_a_job():
        yield
        return
    Interrupts.raising = True
    try:
        yield
    finally:
        Interrupts.raising = False


def sleep_interruptibly(secs: float) -> None:
    with interruptible():
        time.sleep(secs)
