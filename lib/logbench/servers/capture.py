"""Capture every statement of a running MySQL/MariaDB server for N seconds, then put everything back.

The ebook's ``full-slow-log`` (Bill Karwin, post 002), as a library function and a
command line (``python -m logbench.servers.capture``)::

    python -m logbench.servers.capture -v -s 60 --socket /run/mysqld/mysqld.sock

It discovers the slow-log settings, points the slow log at a new timestamped file
(``<current file>-full-<UTC time>``), logs every statement (``long_query_time = 0``,
and on MariaDB no sampling or row-count filter), sleeps, and restores every
setting it changed to its previous value, in reverse order — also when
interrupted (SIGINT, SIGTERM, SIGHUP) and when the connection drops mid-way: it
reconnects until ``restore_timeout`` and, if a setting still cannot be restored,
prints the exact statements to run and exits with status 2.

Two limits of the method, reported rather than hidden:

- ``long_query_time`` (and on MariaDB ``slow_query_log``) are copied into a session
  when it connects, so sessions that were already open keep their own values; the
  helper counts them and says so. Their statements reach the capture file only if
  they reconnect (a pool that recycles connections will).
- ``SET GLOBAL`` does not survive a restart: if the server restarts during the
  capture, its option files apply again, which is also a restore.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import posixpath
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pymysql

from .capturing import (EXIT_BAD_USAGE, EXIT_FAILED, EXIT_NOT_RESTORED, EXIT_OK, CaptureInterrupted, Change,
                        Outcome, Session, hold, interrupted_status, shout)
from .mariadb import CONNECTION_LOST, make_quiet, same_value, slow_file_sink, sql_literal

Connect = Callable[[], pymysql.Connection]

__all__ = ["EXIT_BAD_USAGE", "EXIT_FAILED", "EXIT_NOT_RESTORED", "EXIT_OK", "CaptureInterrupted", "CaptureResult",
           "Change", "capture", "capture_file_name", "count_records", "execute", "is_lost", "main", "plan",
           "restore_changes", "variables"]


@dataclass(kw_only=True)
class CaptureResult(Outcome):
    file: str  # the capture file, as the server names it (relative paths are under its datadir)
    flavor: str
    sessions_before: int = 0  # sessions that were open before the capture (they keep their session values)

    def restore_statements(self) -> list[str]:
        """What to run by hand for every setting that could not be restored."""
        before = {c.name: c.before for c in self.changes}
        return [f"SET GLOBAL {n} = {sql_literal(before[n])};" for n in self.not_restored] + (
            ["FLUSH SLOW LOGS;"] if self.not_restored else [])


def _flavor(conn: pymysql.Connection) -> str:
    with conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        return "mariadb" if "mariadb" in cur.fetchone()[0].lower() else "mysql"


def variables(conn: pymysql.Connection, names: list[str]) -> dict[str, str]:
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN (" + ",".join(["%s"] * len(names)) + ")", names)
        return {k.lower(): v for k, v in cur.fetchall()}


def capture_file_name(current: str, when: dt.datetime, directory: str | None = None) -> str:
    """``<current slow log>-full-<YYYYmmddHHMMSS>``, in ``directory`` if given (a path on the server)."""
    stamp = when.strftime("%Y%m%d%H%M%S")
    base = posixpath.basename(current) or "slow.log"
    folder = directory if directory is not None else posixpath.dirname(current)
    return posixpath.join(folder, f"{base}-full-{stamp}") if folder else f"{base}-full-{stamp}"


def plan(current: dict[str, str], file: str) -> list[Change]:
    """The changes, in the order they are made (restored in reverse).

    The new file comes first, so the old file never receives the flood;
    ``slow_query_log`` comes last, so nothing is logged before everything is set.
    """
    wanted: list[tuple[str, str]] = [("slow_query_log_file", file)]
    outputs = [o.strip().upper() for o in current.get("log_output", "FILE").split(",")]
    if "FILE" not in outputs:
        wanted.append(("log_output", "FILE" if outputs == ["NONE"] else ",".join(outputs + ["FILE"])))
    for name, value in (("log_slow_rate_limit", "1"), ("log_slow_min_examined_row_limit", "0"),
                        ("min_examined_row_limit", "0")):
        if name in current and current[name] != value:
            wanted.append((name, value))
    wanted += [("long_query_time", "0"), ("slow_query_log", "ON")]
    # Only what differs is changed, so only what was changed is restored.
    return [Change(n, current[n], v) for n, v in wanted if n in current and not same_value(v, current[n])]


def is_lost(e: BaseException) -> bool:
    if isinstance(e, pymysql.err.OperationalError):
        return (e.args[0] if e.args and isinstance(e.args[0], int) else 0) in CONNECTION_LOST
    return isinstance(e, (pymysql.err.InterfaceError, OSError))


def _session(connect: Connect, result: CaptureResult, say: Callable[[str], None]) -> Session[pymysql.Connection]:
    """One quiet connection that reconnects when the server drops it."""
    return Session(connect, result, say, is_open=lambda c: c.open, is_lost=is_lost,
                   on_open=lambda c: make_quiet(c, result.flavor))


def execute(sql: str) -> Callable[[pymysql.Connection], None]:
    def run(conn: pymysql.Connection) -> None:
        with conn.cursor() as cur:
            cur.execute(sql)
    return run


def capture(connect: Connect, seconds: float, *, directory: str | None = None, verbose: bool = False,
            log: Callable[[str], None] | None = None, sleep: Callable[[float], None] = time.sleep,
            restore_timeout: float = 60.0, now: Callable[[], dt.datetime] | None = None) -> CaptureResult:
    """Log every statement into a new file for ``seconds``, then restore every changed setting.

    ``connect`` returns a new connection with the privilege to SET GLOBAL; it is
    called again to reconnect. Returns what was done; raises CaptureInterrupted
    (a KeyboardInterrupt) after restoring when a signal cut the capture short.
    Anything that could not be restored is printed to stderr and listed in the result.
    """
    def say(msg: str) -> None:
        if verbose:
            (log or (lambda m: print(m, flush=True)))(msg)

    first = connect()
    flavor = _flavor(first)
    result = CaptureResult(file="", flavor=flavor)
    session = _session(connect, result, say)
    session.conn = first
    make_quiet(first, flavor)
    names = ["slow_query_log", "slow_query_log_file", "long_query_time", "log_output", "log_slow_rate_limit",
             "log_slow_min_examined_row_limit", "min_examined_row_limit"]
    current = variables(first, names)
    for n in ("slow_query_log", "slow_query_log_file", "long_query_time"):
        say(f"Discovering {n}={current.get(n)}")
    when = (now or (lambda: dt.datetime.now(dt.timezone.utc)))()
    result.file = capture_file_name(current["slow_query_log_file"], when, directory)
    changes = plan(current, result.file)
    with first.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() "
                    "AND COMMAND NOT IN ('Daemon', 'Binlog Dump') AND USER NOT IN ('system user', 'event_scheduler')")
        result.sessions_before = int(cur.fetchone()[0])
    if result.sessions_before:
        say(f"Note: {result.sessions_before} session(s) opened before the capture keep their own long_query_time"
            + (" and slow_query_log" if flavor == "mariadb" else "") + "; their statements are captured only if "
            "they reconnect")

    def apply() -> None:
        for c in changes:
            result.changes.append(c)
            say(f"Setting {c.name}={c.during}")
            session.run(execute(f"SET GLOBAL {c.name} = {sql_literal(c.during)}"))
        say("Flushing slow query log")
        session.run(execute("FLUSH SLOW LOGS"))

    def restore() -> None:
        try:
            restore_changes(session, result, say, restore_timeout)
        finally:
            session.close()

    hold(result, seconds, apply=apply, restore=restore, sleep=sleep, say=say,
         shout=lambda: shout("full-slow-log", result, result.restore_statements(),
                             "SET GLOBAL does not survive a restart: a restarted server has its option files' values."))
    return result


def restore_changes(session: Session[pymysql.Connection], result: CaptureResult, say: Callable[[str], None],
                    timeout: float) -> None:
    """Every change back in reverse order (reconnecting until ``timeout``), then read back; what failed is in
    ``result.not_restored``. The capture and the study on a user's MariaDB restore with it."""
    deadline = time.monotonic() + timeout
    for c in reversed(result.changes):
        say(f"Restoring {c.name}={c.before}")
        try:
            session.run(execute(f"SET GLOBAL {c.name} = {sql_literal(c.before)}"), deadline=deadline)
            result.restored.append(c.name)
        except Exception as e:  # noqa: BLE001 - every failure is reported below, none may stop the others
            result.not_restored[c.name] = str(e)
    if result.changes:
        say("Flushing logs during restore")
        with contextlib.suppress(Exception):
            session.run(execute("FLUSH SLOW LOGS"), deadline=deadline)
    # Trust, but verify: read back what the server now has.
    if result.restored:
        try:
            now = variables(session.open(), [c.name for c in result.changes])
            for c in result.changes:
                if c.name in result.restored and not same_value(c.before, now.get(c.name, "")):
                    result.restored.remove(c.name)
                    result.not_restored[c.name] = f"the server reports {now.get(c.name)!r} after the restore"
        except Exception as e:  # noqa: BLE001
            for name in list(result.restored):
                result.restored.remove(name)
                result.not_restored[name] = f"could not read it back: {e}"


def count_records(path: str | Path) -> int:
    """Statements in a slow-log file on this machine (``# Query_time:`` headers)."""
    return slow_file_sink(Path(path)).count_since(0).records


# -- command line --------------------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="full-slow-log",
        description="Log every statement to a new timestamped slow-log file for a while, then restore the "
                    "server's slow-log settings (also on Ctrl-C, SIGTERM, or a dropped connection).")
    p.add_argument("-s", "--seconds", type=float, default=5.0,
                   help="how long to capture (default 5: short on purpose, in case you forget to set it)")
    p.add_argument("-v", "--verbose", action="store_true", help="say what is discovered, set and restored")
    default_cnf = Path.home() / ".my.cnf"
    p.add_argument("-c", "--defaults-file", default=str(default_cnf) if default_cnf.is_file() else None,
                   help="option file with host, user and password in its [client] group (default ~/.my.cnf)")
    p.add_argument("--socket", help="server unix socket")
    p.add_argument("--host", help="server host (TCP)")
    p.add_argument("--port", type=int, help="server port (TCP)")
    p.add_argument("--user", help="account with the privilege to SET GLOBAL")
    p.add_argument("--directory", help="directory for the capture file, on the server (default: the slow log's own)")
    p.add_argument("--restore-timeout", type=float, default=60.0,
                   help="seconds to keep reconnecting to restore after a dropped connection (default 60)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.seconds <= 0:
        print("full-slow-log: --seconds must be > 0", file=sys.stderr)
        return EXIT_BAD_USAGE
    kwargs: dict = {"autocommit": True, "connect_timeout": 10}
    if args.defaults_file:
        kwargs.update(read_default_file=args.defaults_file, read_default_group="client")
    for key in ("socket", "host", "port", "user"):
        value = getattr(args, key)
        if value is not None:
            kwargs["unix_socket" if key == "socket" else key] = value

    def connect() -> pymysql.Connection:
        return pymysql.connect(**kwargs)

    try:
        result = capture(connect, args.seconds, directory=args.directory, verbose=args.verbose,
                         restore_timeout=args.restore_timeout)
        status = EXIT_OK
    except CaptureInterrupted as e:
        result = e.result
        status = interrupted_status(result)
    except pymysql.MySQLError as e:
        print(f"full-slow-log: {e}", file=sys.stderr)
        partial = getattr(e, "capture_result", None)
        return EXIT_NOT_RESTORED if partial is not None and not partial.ok else EXIT_FAILED
    where = result.file
    if os.path.isfile(where):
        where += f" ({count_records(where)} statements, {os.path.getsize(where)} bytes)"
    print(f"Captured {result.seconds:.1f} s of statements into {where}", flush=True)
    return EXIT_NOT_RESTORED if not result.ok else status


if __name__ == "__main__":
    sys.exit(main())
