"""Log every statement of a running PostgreSQL for N seconds, then put everything back.

The PostgreSQL twin of :mod:`logbench.servers.capture` (post 002's full-slow-log), as a library function and a
command line (``logbench-full-statement-log``, or ``python -m logbench.servers.capture_pg``), connecting as psql
does (``-h``, ``-p``, ``-U``, ``-d`` or a connection string, the ``PG*`` variables, ``~/.pgpass``)::

    logbench-full-statement-log -v -s 60 -h /var/run/postgresql -U postgres

It logs every statement with its duration (``ALTER SYSTEM SET log_min_duration_statement = 0``) in a form
pgBadger reads: to csvlog or jsonlog when the server already writes one, else to stderr's file with a
``log_line_prefix`` pgBadger parses (one with a time and the process id is kept; pgBadger is told it by
``--prefix``), else (syslog or eventlog only) it adds csvlog; and with English messages (``lc_messages``,
pgBadger reads the English texts). It reloads, sleeps, and restores exactly what it changed in
``postgresql.auto.conf`` -- the previous entry by ``ALTER SYSTEM SET``, or ``ALTER SYSTEM RESET`` where
there was none -- and reloads again; also when interrupted (SIGINT, SIGTERM, SIGHUP) and when the
connection drops: it reconnects until ``restore_timeout`` and, what it still cannot restore, prints as
the exact statements to run (exit status 2). It names the log files the window wrote to, with the bytes
it added to each.

Its own session keeps ``log_min_duration_statement = -1`` (``SET``): the threshold it turns on for every
other session would otherwise log its own statements too (the restore's ``ALTER SYSTEM RESET``, its
reload, its reads of ``pg_settings``), and a digest of the capture would rank them beside the workload.

It refuses, before changing anything, a server whose ``logging_collector`` is off (turning it on needs a
restart, which is not this helper's to do), a read-only standby (it logs only what it replays and reads;
capture on the primary), and a user who is neither a superuser nor, on PostgreSQL 15 or later, holds the
grants it uses (:func:`missing_grants`; the refusal prints them as the ``GRANT`` statements to run).

Two limits of the method, reported rather than hidden:

- Unlike MariaDB's ``long_query_time``, a reload reaches every open session; but a session, role or
  database that sets ``log_min_duration_statement`` itself (``SET``, ``ALTER ROLE ... SET``) keeps its
  own value. The helper counts the role and database settings and says so.
- ``ALTER SYSTEM`` survives a restart: if the helper is killed with SIGKILL, the capture settings stay
  in ``postgresql.auto.conf`` until the printed statements (``-v`` shows them as they are made) are run.
"""

from __future__ import annotations

import argparse
import contextlib
import posixpath
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import psycopg
import psycopg.sql

# Refused is re-exported: the PostgreSQL capture and the studies on a user's server raise the same refusal.
from .capturing import (EXIT_BAD_USAGE, EXIT_FAILED, EXIT_NOT_RESTORED, EXIT_OK, CaptureInterrupted, Change,  # noqa: F401
                        Outcome, Refused, Session, hold, interrupted_status, shout)
from .postgres import sql_literal

Connect = Callable[[], psycopg.Connection]
PROG = "logbench-full-statement-log"

# pgBadger's documented stderr prefix (its README), with milliseconds; --prefix tells it to pgBadger.
PREFIX = "%m [%p]: user=%u,db=%d,app=%a,client=%h "
# The destination the capture is read from, in this order of preference, and pgBadger's --format for it.
FORMATS = {"csvlog": "csv", "jsonlog": "jsonlog", "stderr": "stderr"}
WATCHED = ["log_destination", "log_line_prefix", "lc_messages", "log_min_duration_statement"]
# The helper's own session: its statements stay out of the log it captures (see the module's docstring). Only the
# threshold the capture turns on is silenced: log_statement or log_duration, where the DBA has them on, are the
# server's own audit of who changed what, and log the helper's ALTER SYSTEM as they log anyone's.
QUIET = "SET log_min_duration_statement = -1"
_DISCOVER = WATCHED + ["logging_collector", "log_directory", "data_directory", "log_statement", "log_duration",
                       "log_min_duration_sample", "log_statement_sample_rate", "log_transaction_sample_rate"]


@dataclass(frozen=True)
class LogFile:
    path: str  # on the server
    format: str  # stderr, csvlog or jsonlog (by its name, as PostgreSQL names them)
    start: int  # the window's first byte (0: a file the window created)
    end: int


@dataclass(kw_only=True)
class StatementLogResult(Outcome):
    format: str = ""  # the destination the capture is read from: csvlog, jsonlog or stderr
    prefix: str = ""  # log_line_prefix during the capture (what pgBadger needs for stderr)
    files: list[LogFile] = field(default_factory=list)
    overridden: int = 0  # role/database settings of log_min_duration_statement, which win over the capture's

    def restore_statements(self) -> list[str]:
        """What to run by hand for every setting that could not be restored, then the reload."""
        failed = [c for c in self.changes if c.name in self.not_restored]
        return [restore_statement(c) + ";" for c in failed] + (["SELECT pg_reload_conf();"] if failed else [])

    def capture_files(self) -> list[LogFile]:
        return [f for f in self.files if f.format == self.format]

    def pgbadger_command(self) -> list[str]:
        """The pgBadger command line that digests this capture's files."""
        argv = ["pgbadger", "--format", FORMATS[self.format]]
        if self.format == "stderr":
            argv += ["--prefix", self.prefix]
        return argv + [f.path for f in self.capture_files()]


def set_statement(c: Change) -> str:
    return f"ALTER SYSTEM SET {c.name} = {sql_literal(c.during)}"


def restore_statement(c: Change) -> str:
    return f"ALTER SYSTEM RESET {c.name}" if c.before is None else f"ALTER SYSTEM SET {c.name} = {sql_literal(c.before)}"


def prefix_parsable(prefix: str) -> bool:
    """pgBadger parses any prefix with a time (%t, %m or %n) and the process (%p or %c) -- given as --prefix."""
    return any(e in prefix for e in ("%t", "%m", "%n")) and any(e in prefix for e in ("%p", "%c"))


def _english(lc_messages: str) -> bool:
    # '' is the server's environment at start, which on a server is nearly always C or English; left alone.
    return lc_messages in ("", "C", "POSIX") or lc_messages.startswith(("C.", "en"))


def plan(current: dict[str, str], auto: dict[str, str]) -> tuple[list[Change], str]:
    """The changes, in the order they are made, and the destination the capture is read from.

    ``current``: the server's values (pg_settings); ``auto``: what ``postgresql.auto.conf`` holds, which is
    what each change's restore puts back. Only what differs is changed, so only that is restored; the
    format comes first and ``log_min_duration_statement`` last (all take effect at one reload anyway).
    """
    destinations = [d.strip().lower() for d in current["log_destination"].split(",") if d.strip()]
    fmt = next((f for f in FORMATS if f in destinations), "csvlog")
    wanted: list[tuple[str, str]] = []
    if fmt not in destinations:
        wanted.append(("log_destination", ",".join(destinations + [fmt])))
    if fmt == "stderr" and not prefix_parsable(current["log_line_prefix"]):
        wanted.append(("log_line_prefix", PREFIX))
    if not _english(current["lc_messages"]):
        wanted.append(("lc_messages", "C"))
    wanted.append(("log_min_duration_statement", "0"))
    return [Change(n, auto.get(n), v) for n, v in wanted if current[n] != v], fmt


def _is_lost(e: BaseException) -> bool:
    # OperationalError: the server closed the connection (pg_terminate_backend: AdminShutdown), or connecting
    # failed; InterfaceError: the connection was already closed.
    return isinstance(e, (psycopg.OperationalError, psycopg.InterfaceError))


def current_settings(conn: psycopg.Connection, names: list[str]) -> dict[str, str]:
    # reset_val, not setting: the helper's session has its own log_min_duration_statement (QUIET); reset_val is
    # what the configuration gives every other session, updated by a reload as setting is where nothing SET it.
    return dict(conn.execute("SELECT name, reset_val FROM pg_settings WHERE name = ANY(%s)", [names]).fetchall())


def auto_conf(conn: psycopg.Connection) -> dict[str, str]:
    """What ``postgresql.auto.conf`` holds now (read from the file, reloaded or not)."""
    return dict(conn.execute(
        "SELECT name, setting FROM pg_file_settings WHERE sourcefile = current_setting('data_directory') "
        "|| '/postgresql.auto.conf' ORDER BY seqno").fetchall())


def _log_dir(conn: psycopg.Connection) -> dict[str, tuple[int, float]]:
    return {name: (size, when.timestamp()) for name, size, when in
            conn.execute("SELECT name, size, modification FROM pg_ls_logdir()").fetchall()}


def _file_format(name: str) -> str:
    return "csvlog" if name.endswith(".csv") else "jsonlog" if name.endswith(".json") else "stderr"


def written(before: dict[str, tuple[int, float]], after: dict[str, tuple[int, float]], folder: str) -> list[LogFile]:
    """The files of the log directory the window wrote to: new ones, and those that grew or were rewritten."""
    out = []
    for name, (size, when) in sorted(after.items()):
        old = before.get(name)
        if old is None or old != (size, when):
            start = old[0] if old is not None and old[0] <= size else 0  # smaller: truncated on rotation
            out.append(LogFile(posixpath.join(folder, name), _file_format(name), start, size))
    return out


# What the capture uses beyond what every role may, as (the check, what to grant). A superuser holds all of it; since
# PostgreSQL 15 a role can be granted each piece. It needs no pg_read_server_files (it names the log files, it
# reads none), no pg_write_server_files (ALTER SYSTEM writes postgresql.auto.conf itself) and no pg_signal_backend
# (pg_reload_conf() signals the postmaster).
def _uses(changed: list[str]) -> list[tuple[str, str]]:
    return ([(f"has_parameter_privilege('{p}', 'ALTER SYSTEM')", f"ALTER SYSTEM ON PARAMETER {p}")  # set, restore
             for p in changed]
            + [("has_parameter_privilege('log_min_duration_statement', 'SET')",  # QUIET
                "SET ON PARAMETER log_min_duration_statement"),
               ("has_function_privilege('pg_reload_conf()', 'EXECUTE')", "EXECUTE ON FUNCTION pg_reload_conf()"),
               # which file the collector writes, and what the window added to the log directory
               ("has_function_privilege('pg_current_logfile(text)', 'EXECUTE')",
                "EXECUTE ON FUNCTION pg_current_logfile(text)"),
               ("has_function_privilege('pg_ls_logdir()', 'EXECUTE')", "EXECUTE ON FUNCTION pg_ls_logdir()"),
               # what postgresql.auto.conf held, which the restore puts back: the view and the function behind it
               ("has_table_privilege('pg_file_settings', 'SELECT')", "SELECT ON pg_file_settings"),
               ("has_function_privilege('pg_show_all_file_settings()', 'EXECUTE')",
                "EXECUTE ON FUNCTION pg_show_all_file_settings()"),
               # data_directory and log_directory (where the log files are), hidden from other roles
               ("pg_has_role('pg_read_all_settings', 'USAGE')", "pg_read_all_settings")])


def missing_grants(conn: psycopg.Connection, changed: list[str]) -> list[str]:
    """The GRANT statements (PostgreSQL 15 or later) that would let the connected role capture, changing ``changed``."""
    uses = _uses(changed)
    user, *held = conn.execute(f"SELECT current_user, {', '.join(check for check, _ in uses)}").fetchone()
    role = psycopg.sql.Identifier(user).as_string(conn)
    return [f"GRANT {what} TO {role};" for (_, what), ok in zip(uses, held) if not ok]


def check(conn: psycopg.Connection) -> None:
    """Refuse, with every reason at once, a server this helper must not change."""
    user, superuser, standby, collector, version = conn.execute(
        "SELECT current_user, current_setting('is_superuser'), pg_is_in_recovery(), "
        "current_setting('logging_collector'), current_setting('server_version_num')::int").fetchone()
    reasons, grants = [], []
    role = psycopg.sql.Identifier(user).as_string(conn)
    if superuser != "on" and version < 150000:
        reasons.append(f"user {user!r} is not a superuser, and before PostgreSQL 15 only a superuser may ALTER "
                       f"SYSTEM: connect as a superuser (-U postgres) or ALTER ROLE {role} SUPERUSER")
    elif superuser != "on":
        # WATCHED's values are visible to every role: the grants named are those of this server's changes
        grants = missing_grants(conn, [c.name for c in plan(current_settings(conn, WATCHED), {})[0]])
        if grants:
            reasons.append(f"user {user!r} is not a superuser and lacks grants the capture uses (to change and "
                           "restore the logging settings, reload, and find the log files); as a superuser run:\n"
                           + "\n".join(f"      {g}" for g in grants)
                           + f"\n    or connect as a superuser (-U postgres), or ALTER ROLE {role} SUPERUSER")
    if standby:
        reasons.append("the server is a read-only standby (pg_is_in_recovery()): it logs only its own reads; "
                       "capture on the primary")
    if collector != "on":
        reasons.append("logging_collector is off: the statements would go to the server's stderr, which no file "
                       "of the server's own names; turning it on needs a restart (ALTER SYSTEM SET logging_collector "
                       "= on, then restart the server), which this helper does not do")
    if reasons:
        raise Refused(reasons, grants)


def capture(connect: Connect, seconds: float, *, verbose: bool = False, log: Callable[[str], None] | None = None,
            sleep: Callable[[float], None] = time.sleep, restore_timeout: float = 60.0,
            settle_timeout: float = 10.0) -> StatementLogResult:
    """Log every statement with its duration for ``seconds``, then restore every changed setting.

    ``connect`` returns a new autocommit connection of a superuser or a role with the grants :func:`check` names;
    it is called again to reconnect.
    Raises Refused (nothing changed) for a server it must not change; CaptureInterrupted (a
    KeyboardInterrupt) after restoring when a signal cut the capture short. Anything that could not be
    restored is printed to stderr and listed in the result.
    """
    def say(msg: str) -> None:
        if verbose:
            (log or (lambda m: print(m, flush=True)))(msg)

    if seconds <= 0:
        raise ValueError(f"seconds must be > 0, not {seconds}")
    first = _first_connection(connect)
    result = StatementLogResult()
    session: Session[psycopg.Connection] = Session(connect, result, say, is_open=lambda c: not (c.closed or c.broken),
                                                   is_lost=_is_lost, on_open=lambda c: c.execute(QUIET))
    session.conn = first
    current, changes, folder = _discover(first, result, say)
    files_before = _log_dir(first)
    wanted = {c.name: c.during for c in changes}

    def apply() -> None:
        _apply(session, result, changes, say, settle_timeout)

    def restore() -> None:
        try:
            restore_changes(session, result, {n: current[n] for n in wanted}, say, restore_timeout, settle_timeout)
        finally:
            with contextlib.suppress(Exception):
                result.files = written(files_before, session.run(_log_dir), folder)
            session.close()

    hold(result, seconds, apply=apply, restore=restore, sleep=sleep, say=say,
         shout=lambda: shout(PROG, result, result.restore_statements(),
                             "ALTER SYSTEM survives a restart: until these run, postgresql.auto.conf keeps the "
                             "capture's settings"))
    return result


def _first_connection(connect: Connect) -> psycopg.Connection:
    """The capture's first connection, checked (Refused: nothing changed) and made quiet; closed if either fails."""
    first = connect()
    try:
        check(first)
        first.execute(QUIET)
    except BaseException:
        first.close()
        raise
    return first


def _discover(first: psycopg.Connection, result: StatementLogResult,
              say: Callable[[str], None]) -> tuple[dict[str, str], list[Change], str]:
    """The server's logging settings now (by name), the changes the capture makes, and the server's log folder;
    sets the result's format, prefix and count of overriding role/database settings, and says what it found."""
    current = current_settings(first, _DISCOVER)
    auto = auto_conf(first)
    for n in WATCHED:
        say(f"Discovering {n}={current[n]!r}" + ("" if n not in auto else " (set by ALTER SYSTEM)"))
    folder = current["log_directory"]
    if not posixpath.isabs(folder):
        folder = posixpath.join(current["data_directory"], folder)
    changes, result.format = plan(current, auto)
    result.prefix = current["log_line_prefix"] if "log_line_prefix" not in {c.name for c in changes} else PREFIX
    result.overridden = first.execute(
        "SELECT count(*) FROM pg_db_role_setting, unnest(setconfig) AS c "
        "WHERE c LIKE 'log\\_min\\_duration\\_statement=%'").fetchone()[0]
    if result.overridden:
        say(f"Note: {result.overridden} role or database setting(s) of log_min_duration_statement (ALTER ROLE/DATABASE "
            "... SET) win over the capture's: their sessions are logged at their own threshold")
    if current["log_statement"] != "none" or current["log_duration"] == "on":
        say(f"Note: log_statement={current['log_statement']}, log_duration={current['log_duration']} also log "
            "statements; pgBadger counts each statement once")
    return current, changes, folder


def _apply(session: Session[psycopg.Connection], result: StatementLogResult, changes: list[Change],
           say: Callable[[str], None], settle_timeout: float) -> None:
    """Make each change (recorded in the result as it is made, so a failure restores what was made), reload, and
    wait until the reload has taken effect."""
    for c in changes:
        result.changes.append(c)
        say(f"Setting {c.name}={c.during!r}")
        session.run(lambda conn, c=c: conn.execute(set_statement(c)))
    say("Reloading the configuration")
    session.run(lambda conn: conn.execute("SELECT pg_reload_conf()"))
    _settle(session, {c.name: c.during for c in changes}, result.format, settle_timeout)


def _settle(session: Session[psycopg.Connection], wanted: dict[str, str], fmt: str, timeout: float) -> None:
    """Until the reload has reached this session, and the collector writes the capture's format."""
    deadline = time.monotonic() + timeout
    while True:
        now = session.run(lambda conn: current_settings(conn, list(wanted)))
        opened = session.run(lambda conn: conn.execute("SELECT pg_current_logfile(%s)", [fmt]).fetchone()[0])
        if now == wanted and opened is not None:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the reload did not take effect within {timeout} s: the server reports {now}, "
                               f"its {fmt} file {opened!r}")
        time.sleep(0.02)


def restore_changes(session: Session[psycopg.Connection], result: StatementLogResult, effective: dict[str, str],
             say: Callable[[str], None], timeout: float, settle_timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for c in reversed(result.changes):
        say(f"Restoring {c.name}" + (" (ALTER SYSTEM RESET)" if c.before is None else f"={c.before!r}"))
        try:
            session.run(lambda conn, c=c: conn.execute(restore_statement(c)), deadline=deadline)
            result.restored.append(c.name)
        except Exception as e:  # noqa: BLE001 - every failure is reported below, none may stop the others
            result.not_restored[c.name] = str(e).strip()
    if not result.changes:
        return
    say("Reloading the configuration")
    try:
        session.run(lambda conn: conn.execute("SELECT pg_reload_conf()"), deadline=deadline)
    except Exception as e:  # noqa: BLE001
        for name in result.restored:
            result.not_restored[name] = f"restored in postgresql.auto.conf but not reloaded: {e}"
        result.restored.clear()
        return
    # Trust, but verify: the file holds what it held, and the server uses what it used before.
    try:
        auto = session.run(auto_conf, deadline=deadline)
        settle = time.monotonic() + settle_timeout
        names = [c.name for c in result.changes if c.name in result.restored]
        now = session.run(lambda conn: current_settings(conn, names), deadline=deadline)
        while any(now[n] != effective[n] for n in names) and time.monotonic() < settle:
            time.sleep(0.02)
            now = session.run(lambda conn: current_settings(conn, names), deadline=deadline)
        for c in result.changes:
            if c.name not in result.restored:
                continue
            if auto.get(c.name) != c.before:
                why = f"postgresql.auto.conf holds {auto.get(c.name)!r} after the restore"
            elif now[c.name] != effective[c.name]:
                why = f"the server reports {now[c.name]!r} after the reload, {effective[c.name]!r} before"
            else:
                continue
            result.restored.remove(c.name)
            result.not_restored[c.name] = why
    except Exception as e:  # noqa: BLE001
        for name in list(result.restored):
            result.restored.remove(name)
            result.not_restored[name] = f"could not read it back: {e}"


# -- command line --------------------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, add_help=False,
        description="Log every statement with its duration for a while, in a form pgBadger reads, then restore "
                    "the server's logging settings (also on Ctrl-C, SIGTERM, or a dropped connection). Connection "
                    "options as psql's; the PG* environment variables and ~/.pgpass apply.")
    p.add_argument("-s", "--seconds", type=float, default=5.0,
                   help="how long to capture (default 5: short on purpose, in case you forget to set it)")
    p.add_argument("-v", "--verbose", action="store_true", help="say what is discovered, set and restored")
    p.add_argument("-h", "--host", help="server host or socket directory")
    p.add_argument("-p", "--port", help="server port")
    p.add_argument("-U", "--username", help="a superuser, or a role with the grants a refusal names (default: "
                   "libpq's, as psql)")
    p.add_argument("-d", "--dbname", help="database name or connection string")
    p.add_argument("conninfo", nargs="?", help="database name or connection string (as psql's first argument)")
    p.add_argument("--restore-timeout", type=float, default=60.0,
                   help="seconds to keep reconnecting to restore after a dropped connection (default 60)")
    p.add_argument("-?", "--help", action="help", help="show this help and exit")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.seconds <= 0:
        print(f"{PROG}: --seconds must be > 0", file=sys.stderr)
        return EXIT_BAD_USAGE
    kwargs = {k: v for k, v in (("host", args.host), ("port", args.port), ("user", args.username)) if v is not None}
    conninfo = args.dbname or args.conninfo or ""
    if "=" not in conninfo and "://" not in conninfo and conninfo:
        kwargs["dbname"], conninfo = conninfo, ""

    def connect() -> psycopg.Connection:
        return psycopg.connect(conninfo, autocommit=True, connect_timeout=10, application_name=PROG, **kwargs)

    try:
        result = capture(connect, args.seconds, verbose=args.verbose, restore_timeout=args.restore_timeout)
        status = EXIT_OK
    except Refused as e:
        print(f"{PROG}: refusing to capture, nothing was changed:", file=sys.stderr)
        for reason in e.reasons:
            print(f"  - {reason}", file=sys.stderr)
        return EXIT_FAILED
    except CaptureInterrupted as e:
        result = e.result
        status = interrupted_status(result)
    except (psycopg.Error, TimeoutError) as e:
        partial = getattr(e, "capture_result", None)
        unreachable = partial is None and isinstance(e, psycopg.OperationalError)
        print(f"{PROG}: {'cannot connect: ' if unreachable else ''}{str(e).strip()}", file=sys.stderr)
        return EXIT_NOT_RESTORED if partial is not None and not partial.ok else EXIT_FAILED
    print(f"Captured {result.seconds:.1f} s of statements ({result.format}) into:", flush=True)
    for f in result.files:
        print(f"  {f.path} ({f.format}, bytes {f.start}-{f.end})", flush=True)
    if not result.capture_files():
        print(f"  (no {result.format} file was written during the window)", flush=True)
    print("Digest it: " + shlex.join(result.pgbadger_command()), flush=True)
    return EXIT_NOT_RESTORED if not result.ok else status


if __name__ == "__main__":
    sys.exit(main())
