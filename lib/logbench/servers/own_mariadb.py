"""A MariaDB (or MySQL) the user names, as the capture tool ``logbench-full-slow-log`` reaches it (host and port,
or a socket; a user; an option file's ``[client]`` group), which the suite did not start and must leave as it
found it.

- :class:`Server`: the connection; a password is never part of it (refused in the string: it would land in the
  study's record and a notebook's parameters). It comes from the option file or ``MYSQL_PWD``, is read when a
  connection opens and handed to sysbench on its command line (not to any file); what is recorded is host, port,
  socket and user.
- :func:`refusals`: what must stop a study before anything changes (a replica or a read-only server, missing
  privileges — printed as the GRANT statements —, busy sessions, a database the study would create that exists).
- :class:`Switcher`: switches logging by ``SET GLOBAL``, timing each switch until ``SHOW GLOBAL VARIABLES``
  reports it, and restores exactly what it changed with the capture tool's restore
  (:func:`logbench.servers.capture.restore_changes`: reverse order, reconnecting after a dropped connection, verified),
  printing what it cannot restore as the statements to run.
- :class:`SlowLog`: where an arm's records are counted: the study's own slow-log and general-log files when the
  server runs on this host, ``mysql.slow_log`` through SQL for the TABLE output; :attr:`SlowLog.how` says which,
  or why not.

``long_query_time`` (and on MariaDB ``slow_query_log``) are copied into a session when it connects: the
study's load opens its connections after each switch (one sysbench process per run), never before.
"""

from __future__ import annotations

import configparser
import contextlib
import datetime as dt
import os
import posixpath
import re
import shlex
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pymysql

from . import capture as cap
from .capturing import Change, Restoring, Session, Switch
from ..base.errors import ParameterError, SettingError
from ..base.logsinks import Count
from .mariadb import make_quiet, same_value, slow_log_entries, sql_literal
from .mariadb_logs import GENERAL_RECORD_MARKER, SLOW_RECORD_MARKER

TOOL = "logbench own-server study (MariaDB)"
KEYS = ("host", "port", "socket", "user", "defaults_file")
# What a switch may change: the arms' settings, and the files the study points the logs at (its own, so that the
# server's usual files never receive the flood and a run's records are the files' growth).
LOG_FILES = ("slow_query_log_file", "general_log_file")
# Set where the server has them, as the capture tool does, so that every statement reaches the slow log.
EVERY_STATEMENT = {"log_slow_rate_limit": "1", "log_slow_min_examined_row_limit": "0", "min_examined_row_limit": "0"}
ER_ACCESS = (1044, 1045, 1142, 1227, 1370)


@dataclass(frozen=True)
class Server:
    """A user's server as ``key=value`` words: host, port, socket, user, defaults_file (an option file whose
    ``[client]`` group the client library reads, password included). No password in the string."""

    spec: str = ""

    def __post_init__(self):
        if not isinstance(self.spec, str):
            raise ParameterError("server", type(self.spec).__name__, "'host=... port=... user=...' or "
                                 "'socket=... user=...' (and defaults_file=...), the password in the option file or "
                                 "MYSQL_PWD")
        parts = self.parts()
        if "password" in parts or "pass" in parts:
            raise ParameterError("server", "(a connection string with a password, not shown)",
                                 "the same words without password=...: give the password in the option file "
                                 "(defaults_file=..., ~/.my.cnf) or MYSQL_PWD, which reach the server but no file "
                                 "the study writes")
        wrong = [k for k in parts if k not in KEYS]
        if wrong:
            raise ParameterError("server", wrong, f"words among {', '.join(KEYS)}")
        if "port" in parts and not parts["port"].isdigit():
            raise ParameterError("server", f"port={parts['port']}", "a port number")
        if "defaults_file" in parts and not Path(parts["defaults_file"]).is_file():
            raise ParameterError("server", f"defaults_file={parts['defaults_file']}", "an option file that exists")

    def parts(self) -> dict[str, str]:
        try:
            words = shlex.split(self.spec)
        except ValueError as e:
            raise ParameterError("server", "(not shown)", f"key=value words ({e})") from None
        out = {}
        for w in words:
            k, eq, v = w.partition("=")
            if not eq:
                raise ParameterError("server", "(not shown)", "key=value words (host, port, socket, user, "
                                     "defaults_file)")
            out[k.strip().lower().replace("-", "_")] = v
        return out

    def _kwargs(self) -> dict[str, object]:
        p = self.parts()
        kw: dict[str, object] = {"autocommit": True, "connect_timeout": 10}
        if "defaults_file" in p:
            kw.update(read_default_file=p["defaults_file"], read_default_group="client")
        if "socket" in p:
            kw["unix_socket"] = p["socket"]
        for k in ("host", "user"):
            if k in p:
                kw[k] = p[k]
        if "port" in p:
            kw["port"] = int(p["port"])
        if os.environ.get("MYSQL_PWD"):
            kw["password"] = os.environ["MYSQL_PWD"]
        return kw

    def connect(self, database: str | None = None) -> pymysql.Connection:
        kw = self._kwargs()
        if database:
            kw["database"] = database
        return pymysql.connect(**kw)

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in self.parts().items() if k != "defaults_file"}

    def __repr__(self) -> str:
        return f"Server({self.as_dict()})"

    def sysbench_args(self, conn: pymysql.Connection, database: str) -> tuple[list[str], str]:
        """sysbench's connection options for the server ``conn`` reached, and the password among them ('' if
        none): the caller keeps it out of what it records."""
        password = os.environ.get("MYSQL_PWD", "")
        p = self.parts()
        if not password and "defaults_file" in p:
            cfg = configparser.RawConfigParser(allow_no_value=True, strict=False)
            cfg.read(p["defaults_file"])
            password = (cfg.get("client", "password", fallback="") or "").strip().strip("'\"")
        user = conn.user.decode() if isinstance(conn.user, bytes) else conn.user
        args = ["--db-driver=mysql", f"--mysql-user={user}", f"--mysql-db={database}"]
        if conn.unix_socket:
            args.append(f"--mysql-socket={conn.unix_socket}")
        else:
            args += [f"--mysql-host={conn.host}", f"--mysql-port={conn.port}"]
        if password:
            args.append(f"--mysql-password={password}")
        return args, password

    def resolved(self, conn: pymysql.Connection) -> dict[str, str]:
        """host, port (or socket) and user as the connection resolved them (what a record may keep)."""
        user = conn.user.decode() if isinstance(conn.user, bytes) else conn.user
        where = {"socket": conn.unix_socket} if conn.unix_socket else {"host": conn.host, "port": str(conn.port)}
        return {**where, "user": user}


def query(conn: pymysql.Connection, sql: str, args=None) -> list[tuple]:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())


def flavor(conn: pymysql.Connection) -> tuple[str, str]:
    version = query(conn, "SELECT VERSION()")[0][0]
    return ("mariadb" if "mariadb" in version.lower() else "mysql"), version


# -- checks before anything changes -----------------------------------------------------------------------

def _account(conn: pymysql.Connection) -> str:
    user, host = query(conn, "SELECT CURRENT_USER()")[0][0].rsplit("@", 1)
    return f"'{user}'@'{host}'"


def refusals(conn: pymysql.Connection, *, max_active: int, create_database: str | None,
             database: str | None, table_output: bool) -> tuple[list[str], list[str]]:
    """Every reason the study must not run on this server, and the GRANT statements the user lacks, all at once;
    nothing is changed by asking. Privileges are read from the account's own grants (information_schema):
    granted through a role they are not seen, and asked for."""
    kind, version = flavor(conn)
    reasons: list[str] = []
    grants: list[str] = []
    account = _account(conn)
    read_only = query(conn, "SELECT @@global.read_only")[0][0]
    if str(read_only).upper() not in ("0", "OFF"):
        reasons.append("the server is read-only (read_only = ON), as a replica is: the load cannot write, and a "
                       "replica's log is not the primary's; measure on the primary (or a staging copy of it)")
    try:
        replica = query(conn, "SHOW SLAVE STATUS")
        if replica:
            reasons.append("the server is a replica (SHOW SLAVE STATUS names its primary): measure on the primary, "
                           "or a staging copy")
    except pymysql.MySQLError as e:
        if e.args and e.args[0] in ER_ACCESS:
            # MariaDB 10.5 split the privilege SHOW SLAVE STATUS needs out of REPLICATION CLIENT
            split = kind == "mariadb" and tuple(int(x) for x in re.findall(r"\d+", version)[:2]) >= (10, 5)
            grants.append(f"GRANT {'SLAVE MONITOR' if split else 'REPLICATION CLIENT'} ON *.* TO {account};")
        else:
            raise
    held = {r[0].upper() for r in query(conn, "SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES "
                                              "WHERE GRANTEE = %s", [account])}
    set_global = "SUPER" if kind == "mariadb" else "SYSTEM_VARIABLES_ADMIN"
    if not ({set_global, "SUPER"} & held):
        grants.append(f"GRANT {set_global} ON *.* TO {account};")
    if "PROCESS" not in held:
        # without it the process list shows only the user's own sessions: busy ones of others would go unseen
        grants.append(f"GRANT PROCESS ON *.* TO {account};")
    if table_output and "SELECT" not in held and not query(
            conn, "SELECT 1 FROM information_schema.TABLE_PRIVILEGES WHERE GRANTEE = %s AND TABLE_SCHEMA = 'mysql' "
                  "AND TABLE_NAME = 'slow_log' AND PRIVILEGE_TYPE = 'SELECT' UNION SELECT 1 FROM "
                  "information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = %s AND TABLE_SCHEMA = 'mysql' AND "
                  "PRIVILEGE_TYPE = 'SELECT'", [account, account]):
        grants.append(f"GRANT SELECT ON mysql.slow_log TO {account};")
    if create_database is not None:
        if query(conn, "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", [create_database]):
            reasons.append(f"database {create_database!r} exists already: the built-in load runs only in a database "
                           "the study creates (and drops); drop it if it is a study's leftover, or name your own "
                           "database and script")
        needed = {"CREATE", "DROP", "INSERT", "SELECT", "INDEX"}
        on_db = {r[0].upper() for r in query(conn, "SELECT PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES "
                                                   "WHERE GRANTEE = %s AND TABLE_SCHEMA = %s",
                                             [account, create_database])}
        if needed - held - on_db:
            grants.append(f"GRANT ALL ON `{create_database}`.* TO {account};")
    elif database is not None and not query(conn, "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s",
                                            [database]):
        reasons.append(f"database {database!r} does not exist on this server (or this user cannot see it)")
    if grants:
        # SHOW GRANTS carries the password's hash: not a password, yet no business of a message that may be kept
        has = [re.sub(r"\s+IDENTIFIED\s+(BY|VIA|WITH)\b.*$", "", r[0], flags=re.I | re.S)
               for r in query(conn, "SHOW GRANTS")]
        reasons.append(f"user {account} lacks privileges the study uses (to switch and restore the logging settings, "
                       "see every session, read mysql.slow_log, create its database); it holds:\n"
                       + "\n".join(f"      {g};" for g in has) + "\n    as an administrator run:\n"
                       + "\n".join(f"      {g}" for g in grants))
    active = query(conn, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND "
                         "COMMAND NOT IN ('Sleep', 'Daemon', 'Binlog Dump', 'Binlog Dump GTID') AND "
                         "USER NOT IN ('system user', 'event_scheduler')")[0][0]
    if active > max_active:
        reasons.append(f"{active} other session(s) are active (information_schema.PROCESSLIST), more than "
                       f"max_active = {max_active}: the study's load and its logging would land on their work, and "
                       "theirs in its measurements; run when the server is quiet, or raise max_active")
    return reasons, grants


# -- switching and restoring ----------------------------------------------------------------------------

@dataclass
class Switcher(Restoring):
    """Switches the server's logging by SET GLOBAL; restores every variable it changed on exit (in reverse
    order)."""

    tool = TOOL
    restart_note = "SET GLOBAL does not survive a restart: a restarted server has its option files' values."

    server: Server
    say: Callable[[str], None] = lambda m: None
    restore_timeout: float = 60.0
    result: cap.CaptureResult = field(default_factory=lambda: cap.CaptureResult(file="", flavor=""))
    session: Session | None = None

    def __enter__(self) -> "Switcher":
        first = self.server.connect()
        self.result.flavor = flavor(first)[0]
        self.session = Session(self.server.connect, self.result, self.say, is_open=lambda c: c.open,
                               is_lost=cap.is_lost, on_open=lambda c: make_quiet(c, self.result.flavor))
        self.session.conn = first
        make_quiet(first, self.result.flavor)
        return self

    def now(self, names: list[str]) -> dict[str, str]:
        return self.run(lambda c: cap.variables(c, names))

    def apply(self, settings: Mapping[str, str]) -> Switch:
        """Each differing variable by SET GLOBAL (recorded before it is sent: a failure in flight is still
        restored), timed until the server reports every value."""
        names = list(settings)
        current = self.now(names)
        missing = [n for n in names if n not in current]
        if missing:
            raise SettingError(f"the server has no variable(s) {', '.join(missing)}")
        differ = {n: str(v) for n, v in settings.items() if not same_value(str(v), current[n])}
        if not differ:
            return Switch("none", 0.0)
        known = {c.name for c in self.result.changes}
        t0 = time.perf_counter()
        for name, value in differ.items():
            if name not in known:
                change = Change(name, current[name], value)
                self.result.changes.append(change)
                # said before the change is sent: after a SIGKILL, this line is how to put it back by hand
                self.say(f"changing {name} (now {current[name]!r}); to restore it by hand: SET GLOBAL {name} = "
                         f"{sql_literal(current[name])};")
            self.run(cap.execute(f"SET GLOBAL {name} = {sql_literal(value)}"))
        while not all(same_value(v, self.now(list(differ))[n]) for n, v in differ.items()):
            if time.perf_counter() - t0 > 10:
                raise SettingError(f"SET GLOBAL did not take effect: the server reports {self.now(list(differ))}")
            time.sleep(0.005)
        return Switch("set_global", time.perf_counter() - t0)

    def _restore_changes(self) -> None:
        cap.restore_changes(self.session, self.result, self.say, self.restore_timeout)


def study_files(current: Mapping[str, str], when: dt.datetime) -> dict[str, str]:
    """The study's own slow and general log files, next to the server's (``<file>-logbench-<UTC time>``)."""
    stamp = when.strftime("%Y%m%d%H%M%S")
    out = {}
    for name in LOG_FILES:
        base = current[name]
        out[name] = f"{base}-logbench-{stamp}"
    return out


def on_this_host(conn: pymysql.Connection) -> int | None:
    """The server's pid when it runs on this machine (its pid file here names a live process), else None."""
    datadir, pid_file = query(conn, "SELECT @@global.datadir, @@global.pid_file")[0]
    path = pid_file if posixpath.isabs(pid_file) else posixpath.join(datadir, pid_file)
    try:
        pid = int(Path(path).read_text().split()[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return None
    return pid


# -- where the records are counted ----------------------------------------------------------------------------

class SlowLog:
    """The study's log files (on this host: read directly) and ``mysql.slow_log`` (through SQL, on any host).

    ``how``: "file" (the files are read here) or "" with ``why_not``; the table is always counted."""

    def __init__(self, switcher: Switcher, files: Mapping[str, str], local: bool):
        self.switcher = switcher
        datadir = switcher.run(lambda c: query(c, "SELECT @@global.datadir")[0][0])
        self.paths = {n: Path(f if posixpath.isabs(f) else posixpath.join(datadir, f)) for n, f in files.items()}
        self.how, self.why_not = "", ""
        if not local:
            self.why_not = ("the server runs elsewhere: its log files are not read over SQL (the TABLE output, "
                            "mysql.slow_log, is counted)")
        elif not all(os.access(p, os.R_OK) for p in self.paths.values() if p.exists()):
            self.why_not = "the server's log files are not readable by this user here"
        else:
            self.how = "file"

    def size(self, name: str) -> int:
        try:
            return self.paths[name].stat().st_size
        except FileNotFoundError:
            return 0

    def read(self, name: str, start: int) -> bytes:
        try:
            with open(self.paths[name], "rb") as f:
                f.seek(start)
                return f.read()
        except FileNotFoundError:
            return b""

    def rows(self) -> int:
        return int(self.switcher.run(lambda c: query(c, "SELECT COUNT(*) FROM mysql.slow_log")[0][0]))


@dataclass(frozen=True)
class SlowFileSink:
    """A runner sink over the study's slow-log file: entries (one ``# Query_time:`` each) since a mark."""

    log: SlowLog
    name: str = "slow_file"
    records: tuple = ()

    def counting(self, records):
        return SlowFileSink(self.log, self.name, tuple(records))

    def mark(self) -> int:
        return self.log.size("slow_query_log_file")

    def count_since(self, offset: int) -> Count:
        data = self.log.read("slow_query_log_file", offset)
        return Count(sum(1 for e in slow_log_entries(data) if SLOW_RECORD_MARKER in e), data.count(b"\n"), len(data))


@dataclass(frozen=True)
class GeneralFileSink:
    """A runner sink over the study's general-log file: its statement lines (`` Query\\t``) since a mark."""

    log: SlowLog
    name: str = "general_file"
    records: tuple = ()

    def counting(self, records):
        return GeneralFileSink(self.log, self.name, tuple(records))

    def mark(self) -> int:
        return self.log.size("general_log_file")

    def count_since(self, offset: int) -> Count:
        data = self.log.read("general_log_file", offset)
        lines = data.splitlines()
        return Count(sum(1 for x in lines if GENERAL_RECORD_MARKER in x), len(lines), len(data))


@dataclass(frozen=True)
class SlowTableSink:
    """A runner sink over ``mysql.slow_log``: its rows since a mark, counted through the quiet control session
    (a new connection's own statements would be logged). Bytes are not known through SQL: 0."""

    log: SlowLog
    name: str = "slow_table"
    records: tuple = ()

    def counting(self, records):
        return SlowTableSink(self.log, self.name, tuple(records))

    def mark(self) -> int:
        return self.log.rows()

    def count_since(self, mark: int) -> Count:
        n = self.log.rows() - mark
        return Count(n, n, 0)


@contextlib.contextmanager
def own_database(switcher: Switcher, name: str, say: Callable[[str], None] = lambda m: None):
    """A database the study creates for its built-in load, dropped on the way out whatever happened."""
    switcher.run(cap.execute(f"CREATE DATABASE `{name}`"))
    say(f"created database {name}")
    try:
        yield name
    finally:
        switcher.run(cap.execute(f"DROP DATABASE IF EXISTS `{name}`"))
        say(f"dropped database {name}")
