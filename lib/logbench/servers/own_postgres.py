"""A PostgreSQL the user names (a connection string or the PG* variables, as psql takes them), which the suite
did not start and must leave as it found it.

- :class:`Dsn`: the connection; a password is never part of it (refused in the string: it would land in the
  study's record and a notebook's parameters), libpq finds it in ``PGPASSWORD`` or ``~/.pgpass``; what is
  recorded is host, port, database and user.
- :func:`refusals`: what must stop a study before anything changes (a standby, missing grants, busy sessions,
  a setting that needs a restart, a destination the collector cannot write, a database the study would create
  that exists already).
- :class:`Switcher`: switches logging settings by ``ALTER SYSTEM`` + ``pg_reload_conf()`` (the included
  switch file of the suite's own servers is out of reach), timing each switch, and restores exactly what it
  changed with the statement-log capture's restore (:func:`logbench.servers.capture_pg.restore_changes`: the previous
  ``postgresql.auto.conf`` entry or ``RESET``, verified in ``pg_file_settings`` and ``pg_settings``), also
  after a dropped connection; what it cannot restore it prints as the statements to run.
- :class:`ServerLog`: the log file the server writes now (``pg_current_logfile``), read on the server's host
  from the file, elsewhere through ``pg_read_binary_file`` where granted; :attr:`ServerLog.how` says which,
  or why neither.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import psycopg.conninfo
import psycopg.sql

from . import capture_pg
from .capturing import Change, Restoring, Session, Switch
from ..base.errors import ParameterError, SettingError
from ..base.logsinks import Count, count_records
from ..base.settings import RecordShape

# The load's sessions name themselves so that their records are told from everyone else's on a shared server.
APP = "logbench-own-server"
# The study's own control session logs nothing of its own (its switches are not the workload's records). By SET
# once connected, not by the startup packet's options: those would become the session's reset_val, where the
# switch reads what a reload gave every new session.
QUIET_SETTINGS = ("log_statement", "log_duration", "log_min_duration_statement", "log_min_duration_sample")
QUIET = "; ".join(f"SET {n} = {v}" for n, v in zip(QUIET_SETTINGS, ("none", "off", "-1", "-1")))
# A session that only creates or drops the built-in database may fix its logging from the start.
QUIET_OPTIONS = " ".join(f"-c {n}={v}" for n, v in zip(QUIET_SETTINGS, ("none", "off", "-1", "-1")))
# What a collector writes to a file of its own (syslog and eventlog leave the server).
FILE_DESTINATIONS = ("stderr", "csvlog", "jsonlog")
# libpq's variables the load tool needs to reach the same server the way psql would (passed to its process only)
LIBPQ_ENV = ("PGPASSWORD", "PGPASSFILE", "PGSERVICE", "PGSERVICEFILE", "PGSSLMODE", "PGSSLROOTCERT", "PGSSLCERT",
             "PGSSLKEY", "PGCONNECT_TIMEOUT", "PGTARGETSESSIONATTRS", "HOME")
TOOL = "logbench own-server study"


@dataclass(frozen=True)
class Dsn:
    """A user's server as psql reaches it: ``conninfo`` (key=value or a URI, possibly empty: the PG* variables
    and libpq's defaults), without a password."""

    conninfo: str = ""

    def __post_init__(self):
        if not isinstance(self.conninfo, str):
            raise ParameterError("server", type(self.conninfo).__name__, "a libpq connection string "
                                 "('host=... port=... user=... dbname=...' or postgresql://...), or '' for the PG* "
                                 "variables")
        try:
            parts = psycopg.conninfo.conninfo_to_dict(self.conninfo)
        except psycopg.ProgrammingError as e:
            raise ParameterError("server", "(not shown)", f"a libpq connection string ({e})") from None
        if "password" in parts:
            raise ParameterError("server", "(a connection string with a password, not shown)",
                                 "the same string without password=...: give the password in PGPASSWORD or "
                                 "~/.pgpass, which reach the server but no file the study writes")

    def connect(self, *, dbname: str | None = None, options: str | None = None,
                application_name: str = TOOL) -> psycopg.Connection:
        kw = {"dbname": dbname} if dbname else {}
        if options:
            kw["options"] = options
        return psycopg.connect(self.conninfo, autocommit=True, connect_timeout=10, application_name=application_name,
                               **kw)

    def parameters(self, conn: psycopg.Connection) -> dict[str, str]:
        """host, port, user, dbname as the connection resolved them (what a record may keep)."""
        i = conn.info
        return {"host": i.host, "port": str(i.port), "user": i.user, "dbname": i.dbname}

    def as_dict(self) -> dict[str, str]:
        parts = psycopg.conninfo.conninfo_to_dict(self.conninfo)
        return {k: str(v) for k, v in parts.items() if k in ("host", "hostaddr", "port", "user", "dbname")}

    def __repr__(self) -> str:
        return f"Dsn({self.as_dict()})"

    @staticmethod
    def child_env() -> dict[str, str]:
        """The libpq variables of our environment a load tool needs to reach the server as we do."""
        return {k: os.environ[k] for k in LIBPQ_ENV if k in os.environ}


# -- checks before anything changes -----------------------------------------------------------------------

def _role(conn: psycopg.Connection) -> str:
    return psycopg.sql.Identifier(conn.info.user).as_string(conn)


def refusals(conn: psycopg.Connection, *, settings: Mapping[str, str], destination: str, max_active: int,
             create_database: str | None) -> tuple[list[str], list[str]]:
    """Every reason the study must not run on this server (and the GRANT statements a non-superuser lacks), all
    at once; nothing is changed by asking."""
    user, superuser, standby, collector, version = conn.execute(
        "SELECT current_user, current_setting('is_superuser'), pg_is_in_recovery(), "
        "current_setting('logging_collector'), current_setting('server_version_num')::int").fetchone()
    reasons: list[str] = []
    grants: list[str] = []
    role = _role(conn)
    if standby:
        reasons.append("the server is a read-only standby (pg_is_in_recovery()): it cannot run a writing load and "
                       "logs only its own reads; measure on the primary (or a staging copy of it)")
    if collector != "on":
        reasons.append("logging_collector is off: statement records would go to the server's stderr, which no file "
                       "of the server's own names; turning it on needs a restart, which this study does not do")
    if destination == "jsonlog" and version < 150000:
        reasons.append(f"destination 'jsonlog' needs PostgreSQL 15 or later (this is {version}): 'stderr' or 'csvlog'")
    known = dict(conn.execute("SELECT name, context FROM pg_settings WHERE name = ANY(%s)", [list(settings)])
                 .fetchall())
    for name in settings:
        if name not in known:
            reasons.append(f"setting {name!r} does not exist on this server (PostgreSQL {version})")
        elif known[name] in ("postmaster", "internal"):
            reasons.append(f"setting {name!r} needs a restart ({known[name]}): a study on your server only switches "
                           "what a reload applies")
    if superuser != "on":
        if version < 150000:
            reasons.append(f"user {user!r} is not a superuser, and before PostgreSQL 15 only a superuser may ALTER "
                           f"SYSTEM: connect as a superuser or ALTER ROLE {role} SUPERUSER")
        else:
            grants = missing_grants(conn, list(settings), create_database is not None)
            if grants:
                reasons.append(f"user {user!r} is not a superuser and lacks grants the study uses (to switch and "
                               "restore the logging settings, reload, read the log, keep its own session quiet); as "
                               "a superuser run:\n" + "\n".join(f"      {g}" for g in grants)
                               + f"\n    or connect as a superuser, or ALTER ROLE {role} SUPERUSER")
    # pg_stat_activity hides other roles' state without pg_read_all_stats: a hidden state counts as active
    active = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                          "AND pid <> pg_backend_pid() AND state IS DISTINCT FROM 'idle'").fetchone()[0]
    if active > max_active:
        reasons.append(f"{active} other client session(s) are active (pg_stat_activity), more than max_active = "
                       f"{max_active}: the study's load and its logging would land on their work, and theirs in its "
                       "measurements; run when the server is quiet, or raise max_active")
    if create_database is not None:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [create_database]).fetchone():
            reasons.append(f"database {create_database!r} exists already: the built-in load runs only in a database "
                           "the study creates (and drops); drop it if it is a study's leftover, or name your own "
                           "database and scripts")
    return reasons, grants


def missing_grants(conn: psycopg.Connection, changed: list[str], create_database: bool) -> list[str]:
    """The capture tool's grants for ``changed`` (switch, restore, reload, find the log) and the study's own: SET on
    the settings its quiet session fixes, creating its database. Reading the log through SQL
    (pg_read_server_files) is not among them: without it a remote server's records go uncounted, and the study
    says so rather than refusing."""
    grants = capture_pg.missing_grants(conn, changed)
    role = _role(conn)
    own = [(f"has_parameter_privilege('{p}', 'SET')", f"SET ON PARAMETER {p}") for p in QUIET_SETTINGS]
    checks = ", ".join(c for c, _ in own)
    held = conn.execute(f"SELECT {checks}").fetchone()
    grants += [f"GRANT {what} TO {role};" for (_, what), ok in zip(own, held) if not ok]
    if create_database and not conn.execute("SELECT rolcreatedb FROM pg_roles WHERE rolname = current_user"
                                            ).fetchone()[0]:
        grants.append(f"ALTER ROLE {role} CREATEDB;")
    return list(dict.fromkeys(grants))


# -- switching and restoring ----------------------------------------------------------------------------

@dataclass
class Switcher(Restoring):
    """Switches the server's settings by ALTER SYSTEM + reload; restores every setting it changed on exit."""

    tool = TOOL
    restart_note = ("ALTER SYSTEM survives a restart: until these run, postgresql.auto.conf keeps the study's "
                    "settings")

    dsn: Dsn
    say: Callable[[str], None] = lambda m: None
    restore_timeout: float = 60.0
    settle_timeout: float = 30.0
    result: capture_pg.StatementLogResult = field(default_factory=capture_pg.StatementLogResult)
    original: dict[str, str] = field(default_factory=dict)  # reset_val before the first change, by name
    session: Session | None = None

    def __enter__(self) -> "Switcher":
        self.session = Session(self.dsn.connect, self.result, self.say, is_open=lambda c: not (c.closed or c.broken),
                               is_lost=capture_pg._is_lost, on_open=lambda c: c.execute(QUIET))
        self.session.open()
        return self

    def now(self, names: list[str]) -> dict[str, str]:
        return self.run(lambda c: capture_pg.current_settings(c, names))

    def apply(self, settings: Mapping[str, str]) -> Switch:
        """Each differing setting by ALTER SYSTEM (recorded before it is sent: a failure in flight is still
        restored), then one reload, timed until the server reports every value."""
        names = list(settings)
        current = self.now(names)
        differ = {n: str(v) for n, v in settings.items() if current[n] != str(v)}
        if not differ:
            return Switch("none", 0.0)
        auto = self.run(capture_pg.auto_conf)
        known = {c.name for c in self.result.changes}
        for name, value in differ.items():
            if name not in known:
                self.original[name] = current[name]
                change = Change(name, auto.get(name), value)
                self.result.changes.append(change)
                # said before the change is sent: after a SIGKILL, this line is how to put it back by hand
                self.say(f"changing {name} (now {current[name]!r}); to restore it by hand: "
                         f"{capture_pg.restore_statement(change)}; SELECT pg_reload_conf();")
            stmt = capture_pg.set_statement(Change(name, None, value))
            self.run(lambda c, stmt=stmt: c.execute(stmt))
        t0 = time.perf_counter()
        self.run(lambda c: c.execute("SELECT pg_reload_conf()"))
        deadline = time.monotonic() + self.settle_timeout
        while (seen := self.now(list(differ))) != differ:
            if time.monotonic() > deadline:
                raise SettingError(f"the reload did not take effect within {self.settle_timeout} s: the server "
                                   f"reports {seen}, asked for {differ}")
            time.sleep(0.005)
        return Switch("reload", time.perf_counter() - t0)

    def _restore_changes(self) -> None:
        # each ALTER SYSTEM entry back (or RESET), one reload, verified
        capture_pg.restore_changes(self.session, self.result, dict(self.original), self.say, self.restore_timeout,
                                   self.settle_timeout)


# -- the log the server writes ---------------------------------------------------------------------------

def on_this_host(conn: psycopg.Connection) -> int | None:
    """The postmaster's pid when the server runs on this machine (its postmaster.pid here names its data
    directory and port), else None."""
    datadir, port = conn.execute("SELECT current_setting('data_directory'), current_setting('port')").fetchone()
    try:
        lines = (Path(datadir) / "postmaster.pid").read_text().splitlines()
    except OSError:
        return None
    if len(lines) >= 4 and lines[1] == datadir and lines[3].strip() == port:
        return int(lines[0])
    return None


class ServerLog:
    """The server's current log file of one destination: its size, and what it gained since a mark.

    ``how``: "file" (read here: the server runs on this machine), "sql" (``pg_read_binary_file`` over the
    connection), or "" with ``why_not``. Rotations between mark and count are followed: the marked file's rest,
    every file of the destination that appeared in the log directory since (oldest first), the current one. A run
    that logs every statement fills PostgreSQL's default log_rotation_size (10 MB) several times in seconds; with a
    time in log_filename each rotation opens a new file, which one file far would not count. Where the directory
    cannot be listed (``pg_ls_logdir`` needs pg_monitor), one file far, as before."""

    CHUNK = 8 << 20

    def __init__(self, switcher: Switcher, destination: str, local: bool):
        self.switcher, self.destination = switcher, destination
        self.datadir = switcher.run(lambda c: c.execute("SELECT current_setting('data_directory')")
                                            .fetchone()[0])
        self.local = local
        self.how, self.why_not = "", ""
        self._marked: dict[int, tuple[str, dict[str, float] | None]] = {}
        path = self._named(switcher.settle_timeout)
        if path is None:
            self.why_not = f"the server writes no {destination} file (log_destination does not name it)"
        elif local and os.access(path, os.R_OK):
            self.how = "file"
        else:
            # Probed on the file itself, with both functions the reading uses: a NULL path would not do, the
            # planner folds a strict function of NULL away before its EXECUTE privilege is checked
            try:
                switcher.run(lambda c: c.execute("SELECT (pg_stat_file(%s, true)).size, "
                                                 "length(pg_read_binary_file(%s, 0, 1, true))", [path, path])
                                     .fetchone())
                self.how = "sql"
            except psycopg.Error as e:
                self.why_not = (f"the server runs elsewhere and pg_read_binary_file is not granted (nor, maybe, "
                                f"pg_stat_file; the server said: {str(e).strip().splitlines()[0]})")

    def _named(self, timeout: float) -> str | None:
        """The destination's current file, waiting up to ``timeout`` while log_destination names it: after a
        reload the backends see the new setting before the collector has opened the file and rewritten
        current_logfiles (seen under load: pg_current_logfile('csvlog') was still NULL)."""
        deadline = time.monotonic() + timeout
        while (path := self.current()) is None:
            named = self.switcher.run(lambda c: c.execute("SHOW log_destination").fetchone()[0])
            if self.destination not in [d.strip() for d in named.split(",")] or time.monotonic() > deadline:
                return None
            time.sleep(0.01)
        return path

    def current(self) -> str | None:
        rel = self.switcher.run(lambda c: c.execute("SELECT pg_current_logfile(%s)", [self.destination])
                                        .fetchone()[0])
        if rel is None:
            return None
        return rel if os.path.isabs(rel) else os.path.join(self.datadir, rel)

    def size(self, path: str) -> int:
        if self.how == "file":
            try:
                return os.stat(path).st_size
            except FileNotFoundError:
                return 0
        return int(self.switcher.run(lambda c: c.execute("SELECT (pg_stat_file(%s, true)).size", [path])
                                             .fetchone()[0] or 0))

    def read(self, path: str, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        if self.how == "file":
            with open(path, "rb") as f:
                f.seek(start)
                return f.read(end - start)
        out = []
        for at in range(start, end, self.CHUNK):
            n = min(self.CHUNK, end - at)
            out.append(self.switcher.run(
                lambda c, at=at, n=n: c.execute("SELECT pg_read_binary_file(%s, %s, %s, true)", [path, at, n])
                .fetchone()[0]) or b"")
        return b"".join(bytes(b) for b in out)

    def mark(self) -> int:
        """The current file's size; the file and the log directory's files then are remembered by that offset (a
        runner's sink is asked for marks more than once, e.g. to see the log quiet, and counts since the one it
        kept)."""
        path = self.current()
        if path is None:
            return 0
        size = self.size(path)
        self._marked[size] = (path, self.listing(os.path.dirname(path)))
        return size

    def since(self, offset: int) -> bytes:
        now = self.current()
        marked = self._marked.get(offset)
        if marked is None:
            return self.read(now, 0, self.size(now)) if now else b""
        path, before = marked
        if now == path:
            return self.read(path, offset, self.size(path))
        after = self.listing(os.path.dirname(path)) if before is not None else None
        between = [] if after is None else [
            f for f, _ in sorted(after.items(), key=lambda kv: (kv[1], kv[0]))
            if f not in before and f not in (path, now) and self._of_destination(f, path)]
        return (self.read(path, offset, self.size(path)) + b"".join(self.read(f, 0, self.size(f)) for f in between)
                + (self.read(now, 0, self.size(now)) if now else b""))

    def listing(self, directory: str) -> dict[str, float] | None:
        """{path: modification time} of the log directory's files, or None where it cannot be listed."""
        if self.how == "file":
            try:
                return {e.path: e.stat().st_mtime for e in os.scandir(directory) if e.is_file()}
            except OSError:
                return None
        try:
            rows = self.switcher.run(lambda c: c.execute(
                "SELECT name, extract(epoch FROM modification)::float8 FROM pg_ls_logdir()").fetchall())
        except psycopg.Error:
            return None
        return {os.path.join(directory, name): float(when) for name, when in rows}

    @staticmethod
    def _of_destination(path: str, like: str) -> bool:
        """A file of the same destination as ``like``: csvlog's end .csv, jsonlog's .json, stderr's the rest."""
        ext = os.path.splitext(like)[1]
        if ext in (".csv", ".json"):
            return path.endswith(ext)
        return not path.endswith((".csv", ".json"))


@dataclass(frozen=True)
class ServerLogSink:
    """A runner sink (``name``, ``records``, ``counting``, ``mark``, ``count_since``) over a :class:`ServerLog`."""

    name: str
    log: ServerLog
    records: tuple[RecordShape, ...] = ()

    def counting(self, records: tuple[RecordShape, ...]) -> "ServerLogSink":
        return ServerLogSink(self.name, self.log, tuple(records))

    def mark(self) -> int:
        return self.log.mark()

    def count_since(self, offset: int) -> Count:
        data = self.log.since(offset)
        lines = data.splitlines()
        return Count(count_records(entries(lines), self.records), len(lines), len(data))


# A log entry starts with its time (csvlog's first column; the study's stderr prefix starts with %m) or is one JSON
# object (jsonlog); a statement with line breaks continues on lines of its own, where a csvlog entry's application
# name or a stderr entry's "duration:" would otherwise be on another line than the statement's marker.
_ENTRY = re.compile(rb"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|\{)")


def entries(lines: list[bytes]) -> list[bytes]:
    """Physical lines joined into the server's log entries (a continuation joins the entry before it)."""
    out: list[bytes] = []
    for line in lines:
        if out and not _ENTRY.match(line):
            out[-1] += b"\n" + line
        else:
            out.append(line)
    return out


@contextlib.contextmanager
def own_database(dsn: Dsn, name: str, say: Callable[[str], None] = lambda m: None):
    """A database the study creates for its built-in load, dropped on the way out whatever happened (its
    sessions ended first: WITH (FORCE), PostgreSQL 13 or later, else pg_terminate_backend)."""
    ident = psycopg.sql.Identifier(name)
    with dsn.connect(options=QUIET_OPTIONS) as c:
        c.execute(psycopg.sql.SQL("CREATE DATABASE {}").format(ident))
    say(f"created database {name}")
    try:
        yield name
    finally:
        with dsn.connect(options=QUIET_OPTIONS) as c:
            if c.info.server_version >= 130000:
                c.execute(psycopg.sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))
            else:
                c.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name])
                c.execute(psycopg.sql.SQL("DROP DATABASE IF EXISTS {}").format(ident))
        say(f"dropped database {name}")
