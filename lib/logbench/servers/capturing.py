"""What the two full-log capture helpers share: the window that is interrupted but whose restore is not.

:mod:`logbench.servers.capture` (MariaDB/MySQL's slow log) and :mod:`logbench.servers.capture_pg` (PostgreSQL's statement
log) differ in what they change and how; they share how a capture is held and undone: SIGINT, SIGTERM and
SIGHUP cut the window short but never the restore, a dropped connection is reconnected until a deadline to
restore, and what still could not be restored is printed loudly with the statements to run by hand.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..base.errors import SettingError

# Exit statuses of the command lines (an interrupted but restored capture exits 128 + the signal's number).
EXIT_OK, EXIT_FAILED, EXIT_NOT_RESTORED, EXIT_BAD_USAGE = 0, 1, 2, 64

Log = Callable[[str], None]
C = TypeVar("C")


@dataclass(frozen=True)
class Change:
    name: str
    before: str | None  # None: the setting was not set where the helper sets it (restored by unsetting it)
    during: str


@dataclass(kw_only=True)
class Outcome:
    """What a capture did and undid; each helper's result adds what it captured."""

    changes: list[Change] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    not_restored: dict[str, str] = field(default_factory=dict)  # name -> why
    reconnects: int = 0
    seconds: float = 0.0  # how long the full log was on
    interrupted_by: str | None = None  # signal name, if the capture was cut short

    @property
    def ok(self) -> bool:
        return not self.not_restored


class Refused(Exception):
    """The server cannot be captured (or measured) safely as it is; nothing was changed. ``reasons`` says why, one a
    line; ``grants``: the GRANT statements the user lacks (empty otherwise)."""

    def __init__(self, reasons: list[str], grants: list[str] | None = None):
        super().__init__("; ".join(reasons))
        self.reasons = reasons
        self.grants = grants or []


class CaptureInterrupted(KeyboardInterrupt):
    """The capture was cut short by a signal; restoring ran first. ``result`` says what happened."""

    def __init__(self, result: Outcome):
        super().__init__(result.interrupted_by)
        self.result = result


class _Signal(KeyboardInterrupt):
    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def interrupted_status(result: Outcome) -> int:
    return 128 + getattr(signal.Signals, result.interrupted_by or "SIGINT", signal.SIGINT).value


@contextlib.contextmanager
def _signals_raise():
    """SIGTERM and SIGHUP interrupt the capture as SIGINT does (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise _Signal(signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def _signals_deferred(log: Log):
    """While restoring, a further Ctrl-C must not cut the restore short: it is noted, not obeyed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        log(f"{signal.Signals(signum).name} received: still restoring, please wait")

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


class Session(Generic[C]):
    """One connection that reconnects when the server drops it.

    ``is_open(conn)`` says whether a connection is still usable, ``is_lost(error)`` whether an error means
    the connection is gone (anything else is raised at once), ``on_open(conn)`` prepares a new connection.
    """

    def __init__(self, connect: Callable[[], C], result: Outcome, log: Log, *, is_open: Callable[[C], bool],
                 is_lost: Callable[[BaseException], bool], on_open: Callable[[C], None] = lambda conn: None):
        self.connect, self.result, self.log = connect, result, log
        self.is_open, self.is_lost, self.on_open = is_open, is_lost, on_open
        self.conn: C | None = None

    def open(self) -> C:
        if self.conn is None or not self.is_open(self.conn):
            self.conn = self.connect()
            self.on_open(self.conn)
        return self.conn

    def run(self, fn: Callable[[C], Any], *, deadline: float | None = None) -> Any:
        """``fn(connection)``; on a lost connection, reconnect and retry until ``deadline`` (None: no retry)."""
        delay = 0.2
        while True:
            try:
                return fn(self.open())
            except Exception as e:
                if not self.is_lost(e):
                    raise
                self.close()
                if deadline is None or time.monotonic() >= deadline:
                    raise
                self.log(f"Connection lost ({str(e).strip()}); reconnecting")
                time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
                delay = min(delay * 2, 2.0)
                self.result.reconnects += 1

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
            self.conn = None


def hold(result: Outcome, seconds: float, *, apply: Callable[[], None], restore: Callable[[], None],
         shout: Callable[[], None], say: Log, sleep: Callable[[float], None] = time.sleep) -> None:
    """``apply()``, sleep ``seconds``, then ``restore()`` whatever happened; ``shout()`` if anything stayed changed.

    A signal during apply or sleep ends the window: restoring runs first, then CaptureInterrupted (a
    KeyboardInterrupt) is raised. Any other error is re-raised after restoring, with ``capture_result`` set.
    ``apply`` must append each change to ``result.changes`` before sending it: if the connection drops with
    the change in flight, restoring it is still right.
    """
    interrupted: BaseException | None = None
    started = time.monotonic()
    try:
        with _signals_raise():
            apply()
            started = time.monotonic()
            say(f"Sleeping {seconds:g} seconds...")
            sleep(seconds)
            say("done.")
    except KeyboardInterrupt as e:
        interrupted = e
        result.interrupted_by = e.args[0] if isinstance(e, _Signal) else "SIGINT"
        say(f"Interrupted by {result.interrupted_by}")
    except BaseException as e:
        interrupted = e
    finally:
        result.seconds = time.monotonic() - started
        with _signals_deferred(say):
            restore()
    if not result.ok:
        shout()
    if isinstance(interrupted, KeyboardInterrupt):
        raise CaptureInterrupted(result) from interrupted
    if interrupted is not None:
        interrupted.capture_result = result  # the caller can still see what was restored
        raise interrupted


def shout(tool: str, result: Outcome, statements: list[str], note: str) -> None:
    """The loud report of every setting ``tool`` could not restore, with the statements that restore them."""
    lines = ["", "!" * 78, f"!!! {tool} could NOT restore these server settings:"]
    before = {c.name: c.before for c in result.changes}
    for name, why in result.not_restored.items():
        should = "unset" if before[name] is None else repr(before[name])
        lines.append(f"!!!   {name} should be {should} ({why})")
    lines.append("!!! Run these statements on the server yourself:")
    lines += [f"!!!   {s}" for s in statements]
    lines.append(f"!!! ({note})")
    lines.append("!" * 78)
    print("\n".join(lines), file=sys.stderr, flush=True)


# -- a server the study did not start: switched by a study, every change put back ----------------------------

@dataclass(frozen=True)
class Switch:
    kind: str  # how the settings reached the server: the engine's switch ("reload", "set_global"), or "none"
    seconds: float  # from the switch (a reload; the first SET GLOBAL) until the server reported every value


class Restoring:
    """What the own-server studies' switchers share whatever the engine: a control :class:`Session` that
    reconnects, and on exit every changed setting put back (``_restore_changes``, the engine's) or shouted with its
    statements. A subclass has ``session``, ``result``, ``say``, ``restore_timeout``, ``tool`` and
    ``restart_note`` (what a restart does to a setting left changed)."""

    tool: str
    restart_note: str

    def _restore_changes(self) -> None:
        raise NotImplementedError

    def __exit__(self, kind, value, tb) -> None:
        self.restore()
        if kind is None and not self.result.ok:
            # a run that otherwise finished must not look finished while the server keeps the study's settings
            raise SettingError("settings not restored (the statements that restore them are printed above): "
                               + ", ".join(self.result.not_restored))

    def run(self, fn: Callable[[Any], object]) -> object:
        """``fn(connection)`` on the control session, reconnecting while the server can be reached again (a
        killed session, a restarted pooler) within ``restore_timeout``."""
        return self.session.run(fn, deadline=time.monotonic() + self.restore_timeout)

    def restore(self) -> None:
        """Every changed setting back, verified; the rest shouted with its statements."""
        if self.session is None:
            return
        try:
            if self.result.changes:
                self.say("restoring " + ", ".join(c.name for c in self.result.changes))
                self._restore_changes()
            if not self.result.ok:
                shout(self.tool, self.result, self.result.restore_statements(), self.restart_note)
        finally:
            self.session.close()
            self.session = None
