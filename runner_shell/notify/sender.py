"""Send `[notify]` messages through Apprise without ever holding the loop up.

The loop hands each message to a bounded queue and goes on; one worker thread sends them, each
bounded by `timeout_secs`. A message that cannot go (the queue is full, a receiver refuses,
hangs or answers an error) is dropped with one line on stderr per URL, never an exception in
the loop.
URLs can hold secrets (tokens, passwords): only Apprise's masked form of one is ever printed.
`flush_pending` gives what is still queued when the command ends at most one timeout to go.
Apprise is imported only when a message is sent, so no other command pays for it.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import queue
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import attrs

from runner_core.loop.events import Event
from runner_core.run.notify_config import NotifyConfig
from runner_core.views.notify import Notice, notice_for

# Messages waiting to be sent; past this the newest is dropped (a stuck receiver's backlog).
QUEUE_MESSAGES = 64


def masked(url: str) -> str:
    """A URL as it may be printed: Apprise's privacy form (secrets replaced), else its scheme."""
    scheme = url.partition("://")[0]
    with contextlib.suppress(Exception):
        import apprise

        plugin: Any = apprise.Apprise.instantiate(url)
        if plugin:
            return str(plugin.url(privacy=True))
    return f"{scheme}://…"


def bounded(url: str, timeout_secs: float) -> str:
    """`url` with Apprise's socket timeouts (`cto`, `rto`) at most `timeout_secs`, unless it
    sets its own: a receiver that hangs holds a send (and the process's end) no longer."""
    query = url.partition("?")[2]
    given = {pair.partition("=")[0] for pair in query.split("&") if pair}
    extra = [f"{key}={timeout_secs:g}" for key in ("cto", "rto") if key not in given]
    if not extra:
        return url
    return url + ("&" if "?" in url else "?") + "&".join(extra)


def deliver(urls: Sequence[str], notice: Notice, timeout_secs: float) -> list[str]:
    """Send `notice` to every URL at once, within `timeout_secs`; the masked URLs it failed."""
    import apprise

    _quiet_apprise()
    failed = []
    sender = apprise.Apprise()
    for url in urls:
        if not sender.add(bounded(url, timeout_secs)):
            failed.append(f"{masked(url)} (not a URL Apprise knows)")
    if len(sender) == 0:
        return failed
    bound: dict[str, Any] = {}
    if "timeout" in inspect.signature(sender.notify).parameters:  # Apprise 2.3 on
        bound["timeout"] = timeout_secs  # else the URLs' cto/rto bound the call
    result: Any = sender.notify(body=notice.body, title=notice.title, **bound)
    services = list(result) if hasattr(result, "__iter__") else []
    for index, service in enumerate(services):
        if not service:
            plugin: Any = sender[index] if index < len(sender) else None
            shown = str(plugin.url(privacy=True)) if plugin is not None else "a URL"
            failed.append(f"{shown} ({_status(service)})")
    if not result and not services:
        failed.append("every URL (not sent)")
    return failed


def _status(service: Any) -> str:
    status = getattr(service, "status", None)
    return str(getattr(status, "name", status or "failed")).lower()


def _quiet_apprise() -> None:
    """Apprise logs through `logging`; unhandled, Python would print its warnings on stderr.
    What failed is said here, once, masked."""
    logger = logging.getLogger("apprise")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    logger.propagate = False


@attrs.define(eq=False)
class Notifier:
    """The process's sender of one `[notify]` config: a bounded queue and its worker."""

    config: NotifyConfig
    messages: queue.Queue[Notice] = attrs.field(factory=lambda: queue.Queue(QUEUE_MESSAGES))
    told: set[str] = attrs.field(factory=set)
    pending: int = 0
    last_queued: float = 0.0
    lock: threading.Condition = attrs.field(factory=threading.Condition)
    thread: threading.Thread | None = None

    def send(self, notice: Notice) -> None:
        """Queue `notice` and return at once; a full queue drops it (said once)."""
        with self.lock:
            try:
                self.messages.put_nowait(notice)
            except queue.Full:
                self._tell_once(
                    "queue", f"{QUEUE_MESSAGES} messages waiting; {notice.kind} dropped"
                )
                return
            self.pending += 1
            self.last_queued = time.monotonic()
            if self.thread is None:
                self.thread = threading.Thread(target=self._work, name="runner-notify", daemon=True)
                self.thread.start()

    def _work(self) -> None:
        while True:
            notice = self.messages.get()
            try:
                failed = deliver(self.config.urls, notice, self.config.timeout_secs)
            except Exception as error:  # a broken plugin is a line, never a stopped loop
                failed = [f"every URL ({type(error).__name__})"]
            for what in failed:
                self._tell_once(what.partition(" (")[0], f"could not send to {what}")
            with self.lock:
                self.pending -= 1
                self.lock.notify_all()

    def flush(self, timeout_secs: float) -> bool:
        """Wait until what is queued was sent, at most `timeout_secs` past the last message's
        queuing (so at most `timeout_secs` from now); whether it was."""
        deadline = min(time.monotonic(), self.last_queued) + timeout_secs
        with self.lock:
            while self.pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    shown = ", ".join(masked(url) for url in self.config.urls)
                    self._tell_once(
                        "timeout",
                        f"{self.pending} message(s) not sent within {timeout_secs:g}s to "
                        f"{shown}; given up",
                    )
                    return False
                self.lock.wait(left)
        return True

    def _tell_once(self, key: str, line: str) -> None:
        if key in self.told:
            return
        self.told.add(key)
        print(
            f"runner: notify: {line} (the run goes on; later failures are not printed)",
            file=sys.stderr,
            flush=True,
        )


_NOTIFIERS: dict[NotifyConfig, Notifier] = {}
_NOTIFIERS_LOCK = threading.Lock()


def notifier_for(config: NotifyConfig) -> Notifier:
    """The one notifier of `config` in this process."""
    with _NOTIFIERS_LOCK:
        found = _NOTIFIERS.get(config)
        if found is None:
            found = _NOTIFIERS[config] = Notifier(config)
        return found


def flush_pending() -> bool:
    """Before the process ends (the CLI's main calls this once its command returned): what is
    still queued gets at most one timeout to go, so a loop's last messages (complete, stuck)
    are sent. Not at exit: the interpreter then refuses the threads a send needs. False when
    a send is still under way: the caller then ends the process without waiting for it."""
    return all(
        [notifier.flush(notifier.config.timeout_secs) for notifier in list(_NOTIFIERS.values())]
    )


def notify_event(config: NotifyConfig, event: Event) -> None:
    """Queue the message `event` sends under `config`, if any; never raises, never waits."""
    notice = notice_for(event, config)
    if notice is not None:
        notifier_for(config).send(notice)
