"""A real MariaDB (or MySQL 8) from the machine's binaries, in a private directory.

The same template as :mod:`logbench.servers.postgres`: configure -> launch ->
wait until a real client probe answers; a context manager stops the server and
removes its directory whatever happens. The server runs as an unprivileged user
when we are root, listens on a unix socket in a private (0700) directory and,
only if asked, on 127.0.0.1; it never reads an option file (``--no-defaults``),
so the machine's own MariaDB configuration and data stay untouched.

Settings reach the server in two ways. Startup: the study's base settings (and,
after a restart, the configuration's) are command-line options. Run time:
:meth:`MariaDBServer.apply` sends ``SET GLOBAL`` for each changed variable and
falls back to a restart only when the server refuses one at run time — a
read-only variable (error 1238, e.g. ``innodb_flush_method``) or a log-file
value it will not open while running (error 1231, e.g. a ``slow_query_log_file``
of ``/dev/null``, which the server accepts only at startup).

``SET GLOBAL`` reaches *new* connections only: ``long_query_time``,
``log_slow_rate_limit`` and, on MariaDB, ``slow_query_log`` are copied into each
session when it connects. The studies therefore start their load tool after
:meth:`apply`, so every measured connection sees the configuration.

:class:`MariaDBServer` holds what does not depend on where the server runs (its
command line, sessions, ``apply``); :class:`LocalMariaDB` runs the machine's
binaries, :class:`logbench.servers.container_mariadb.ContainerMariaDB` an image, with the
same command-line options and the same ``SET GLOBAL`` / restart switching.

MariaDB and MySQL 8 differ here, and this module handles each difference:

- binary and data directory: ``mariadbd`` + ``mariadb-install-db`` (or the older
  ``mysql_install_db``) vs ``mysqld --initialize-insecure``;
- root account: ``--auth-root-authentication-method=normal`` gives MariaDB's
  root an empty password instead of unix-socket auth (which would tie it to the
  OS user); MySQL's ``--initialize-insecure`` does that by itself;
- MySQL 8 opens the X protocol on port 33060 on all interfaces and writes a
  binary log by default: ``--mysqlx=OFF`` and ``--skip-log-bin`` switch both off,
  so the server stays loopback-only and the binlog is not part of the measurement;
- variable names: MariaDB 10.11 renamed the slow-log variables
  (``log_slow_query``, ``log_slow_query_time``, ``log_slow_query_file``) and keeps
  the old names as aliases; we use the old names, which both servers know.
  ``log_slow_rate_limit`` and ``log_slow_verbosity`` exist on MariaDB (and Percona
  Server) only; :func:`~logbench.base.settings.validate_mariadb` rejects them for
  MySQL before anything starts;
- a quiet session (one whose own statements are not logged) uses a huge session
  ``long_query_time`` on both, plus session ``slow_query_log = 0`` on MariaDB,
  where that variable has a session value; ``sql_log_off`` keeps the general log
  quiet on both.

Where the records land and how they are counted (the slow and general logs' record shapes, their sinks, the
slow log as a table) is :mod:`logbench.servers.mariadb_logs`, re-exported here.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pymysql

from ..base.errors import ServerStartError, SettingError
from ..base.settings import Settings, mariadb_flavor, validate_mariadb
from . import process
# Re-exported: the benches, the studies and the capture helper count records through this module (mdb.slow_entry).
from .mariadb_logs import (GENERAL_QUERY, GENERAL_RECORD_MARKER, QUIT_LOGGED_BEFORE, SLOW_ENTRY,  # noqa: F401
                           SLOW_RECORD_MARKER, TableSink, general_file_sink, slow_entry, slow_file_sink,
                           slow_log_entries)
from .postgres import Switch
from .process import RunUser

ROOT_USER = "root"
# The longest long_query_time the servers accept (one year): a session that never reaches the slow log.
QUIET_LONG_QUERY_TIME = 31536000
# Errors that mean "not at run time, only at startup".
ER_INCORRECT_GLOBAL_LOCAL_VAR = 1238  # read-only variable
ER_WRONG_VALUE_FOR_VAR = 1231  # e.g. slow_query_log_file = '/dev/null' while running
CONNECTION_LOST = (2006, 2013, 2003, 2002, 0)  # gone away, lost, cannot connect (tcp / socket), closed


def find_mariadbd(binary: str | Path | None = None) -> Path:
    """The server binary: given (file, or directory holding it), on PATH, or Debian's /usr/sbin."""
    names = ("mariadbd", "mysqld")
    if binary:
        b = Path(binary)
        candidates = [b] if not b.is_dir() else [b / n for n in names]
    else:
        candidates = [Path(p) for n in names if (p := shutil.which(n))]
        candidates += [Path("/usr/sbin") / n for n in names]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    raise ServerStartError(
        f"no MariaDB/MySQL server binary found (looked at {', '.join(map(str, candidates))}); "
        "the README's set-up installs Debian's mariadb-server package, or pass the path of a MySQL 8 mysqld"
    )


def find_install_db(mariadbd: Path) -> Path:
    """MariaDB's data-directory initialiser that belongs to this server binary."""
    roots = [mariadbd.parent, mariadbd.parent.parent / "bin", mariadbd.parent.parent / "scripts"]
    for name in ("mariadb-install-db", "mysql_install_db"):
        for r in roots:
            if (r / name).is_file():
                return r / name
        if (p := shutil.which(name)) and mariadbd.parent in (Path("/usr/sbin"), Path("/usr/bin")):
            return Path(p)
    raise ServerStartError(f"no mariadb-install-db next to {mariadbd}; install Debian's mariadb-server package")


def norm_name(name: str) -> str:
    return name.strip().replace("-", "_").lower()


_SIZE = re.compile(r"^(-?\d+(?:\.\d+)?)([kKmMgGtT]?)$")
_BOOL = {"on": True, "1": True, "true": True, "yes": True, "off": False, "0": False, "false": False, "no": False}


def sql_literal(value: str, escape=pymysql.converters.escape_string) -> str:
    """A value as SET GLOBAL takes it: numbers bare (size suffixes expanded), everything else quoted."""
    m = _SIZE.match(value)
    if m:
        num, suffix = m.groups()
        if suffix:
            return str(int(float(num) * 1024 ** ("kmgt".index(suffix.lower()) + 1)))
        return num
    return "'" + escape(value) + "'"


def same_value(asked: str, reported: str) -> bool:
    """Whether the server's SHOW VARIABLES value is the one asked for (ON == 1, 0 == 0.000000, 1G == 1073741824)."""
    a, r = asked.strip(), reported.strip()
    if a.lower() in _BOOL and r.lower() in _BOOL:
        return _BOOL[a.lower()] == _BOOL[r.lower()]
    ma, mr = _SIZE.match(a), _SIZE.match(r)
    if ma and mr:
        return float(sql_literal(a)) == float(sql_literal(r))
    if a.startswith("/"):
        return a == r
    return a.lower() == r.lower()


class MariaDBServer(process.Managed):
    """What every MariaDB/MySQL backend shares: its command line, sessions, and settings by SET GLOBAL or restart.

    A backend provides ``binary`` (the host's server binary: its catalog validates
    settings), ``flavor``, ``socket_path`` (on this host), ``datadir`` (on this host),
    ``program`` and ``_private_options()`` / ``_listen_options()`` (its part of the
    command line), and the start template's hooks (:class:`~logbench.servers.process.Managed`):
    ``_configure()`` (the data directory), ``_launch(settings)``, ``_stop_proc()``, ``close()``,
    ``pid`` and ``running()``.
    """

    engine = "mariadb"
    backend: str
    binary: Path
    flavor: str
    base: Settings
    applied: Settings
    log_dir: Path
    # Every global variable right after the first start with the base settings: what a
    # configuration's variable goes back to when the next configuration does not set it.
    initial: dict[str, str]
    # One quiet session for our own statements: each new connection's SET NAMES could be logged.
    _admin: pymysql.Connection | None = None

    # -- paths -------------------------------------------------------------
    @property
    def slow_log(self) -> Path:
        """Where the slow log goes unless a configuration says otherwise."""
        return self.log_dir / "slow.log"

    @property
    def general_log(self) -> Path:
        return self.log_dir / "general.log"

    @property
    def conninfo(self) -> dict[str, object]:
        """Keyword arguments for ``pymysql.connect`` (the socket; TCP only when asked for)."""
        return {"unix_socket": str(self.socket_path), "user": ROOT_USER, "password": ""}

    # -- lifecycle ---------------------------------------------------------
    @property
    def program(self) -> str:
        return str(self.binary)

    def command(self, settings: Settings) -> list[str]:
        """The server's command line: what logbench manages, then the given settings as options."""
        argv = [self.program, "--no-defaults", *self._private_options(),
                f"--slow-query-log-file={self.slow_log}", f"--general-log-file={self.general_log}"]
        argv += self._listen_options()
        if self.flavor == "mysql":
            argv += ["--mysqlx=OFF", "--skip-log-bin"]
        argv += [f"--{k.replace('_', '-')}={v}" for k, v in settings.items()]
        return argv

    @property
    def what(self) -> str:
        return self.flavor

    def _started(self) -> None:
        self.initial = self.global_variables()

    def _probe(self) -> bool:
        try:
            c = pymysql.connect(**self.conninfo, connect_timeout=2)
        except pymysql.MySQLError:
            return False
        try:
            with c.cursor() as cur:
                cur.execute("SELECT 1")
            return True
        except pymysql.MySQLError:
            return False
        finally:
            c.close()

    def stop(self) -> None:
        self._stop_proc()

    def restart(self, base: Settings | None = None) -> None:
        """Stop and start again with the base (a new one if given) and the applied settings on the command line."""
        if base is not None:
            validate_mariadb(base, self.binary)
        self._stop_proc()
        if base is not None:
            self.base = base
            self.applied = Settings.of("mariadb")
        self._launch_ready(self.base.merged(self.applied))
        if base is not None:
            self._started()

    # -- sessions ----------------------------------------------------------
    def connect(self, *, quiet: bool = True, **kw) -> pymysql.Connection:
        """An autocommit connection; quiet (the default) keeps its own statements out of the logs.

        The connect itself (PyMySQL's ``SET NAMES``) happens before the session can be
        made quiet and may be logged; callers that count records connect before marking.
        """
        c = pymysql.connect(**self.conninfo, autocommit=True, **kw)
        if quiet:
            make_quiet(c, self.flavor)
        return c

    def query(self, sql: str, args=None) -> list[tuple]:
        """Run one statement on the long-lived quiet admin session (reconnected once if the server restarted)."""
        for attempt in (0, 1):
            try:
                if self._admin is None or not self._admin.open:
                    self._admin = self.connect(quiet=True)
                with self._admin.cursor() as cur:
                    cur.execute(sql, args)
                    return list(cur.fetchall())
            except pymysql.MySQLError as e:
                if attempt or not e.args or e.args[0] not in CONNECTION_LOST:
                    raise
                self._drop_admin()
        return []

    def _drop_admin(self) -> None:
        close_quietly(self._admin)
        self._admin = None

    def version(self) -> str:
        return self.query("SELECT VERSION()")[0][0]

    def global_variables(self, names: list[str] | None = None) -> dict[str, str]:
        if names is None:
            rows = self.query("SHOW GLOBAL VARIABLES")
        else:
            names = sorted({norm_name(n) for n in names})
            rows = self.query("SHOW GLOBAL VARIABLES WHERE Variable_name IN (" + ",".join(["%s"] * len(names)) + ")",
                              names) if names else []
        return {k.lower(): v for k, v in rows}

    def show(self, names: list[str]) -> dict[str, str]:
        return self.global_variables(names)

    # -- settings ------------------------------------------------------------
    def apply(self, settings: Settings) -> Switch:
        """Make ``settings`` the configuration's settings: SET GLOBAL, or restart where the server refuses that.

        Variables the previous configuration set and this one does not go back to
        their value at the first start (the base settings or the binary's default).
        """
        validate_mariadb(settings, self.binary)
        if settings == self.applied:
            return Switch("none", 0.0)
        t0 = time.perf_counter()
        desired = {norm_name(k): v for k, v in settings.items()}
        for k in self.applied:
            n = norm_name(k)
            if n not in desired:
                if n not in self.initial:
                    raise SettingError(f"cannot put {n} back: the server did not report it at start")
                desired[n] = self.initial[n]
        current = self.global_variables(list(desired))
        startup_only: list[str] = []
        for n, v in desired.items():
            if n in current and same_value(v, current[n]):
                continue
            try:
                self.query(f"SET GLOBAL {n} = {sql_literal(v)}")
            except pymysql.MySQLError as e:
                code = e.args[0] if e.args else None
                if code == ER_INCORRECT_GLOBAL_LOCAL_VAR or (code == ER_WRONG_VALUE_FOR_VAR and n.endswith("_file")):
                    startup_only.append(n)
                else:
                    raise SettingError(f"the server refused SET GLOBAL {n} = {sql_literal(v)}: {e}") from e
        kind = "reload"  # the runner's word for "reached the running server"; here: SET GLOBAL
        self.applied = settings
        if startup_only:
            self._stop_proc()
            self._launch_ready(self.base.merged(settings))
            kind = "restart"
        mismatch = self.mismatches(desired)
        if mismatch:
            raise SettingError(f"after {kind}, the server reports other values than asked for: {mismatch}")
        return Switch(kind, time.perf_counter() - t0, tuple(startup_only))

    def mismatches(self, desired: dict[str, str]) -> dict[str, tuple[str, str | None]]:
        """``name -> (asked, reported)`` for every variable whose global value is not what was asked."""
        now = self.global_variables(list(desired))
        return {n: (v, now.get(n)) for n, v in desired.items() if n not in now or not same_value(v, now[n])}

    def effective(self, settings: Settings) -> dict[str, str | None]:
        now = self.global_variables(list(settings))
        return {k: now.get(norm_name(k)) for k in settings}


class LocalMariaDB(MariaDBServer, process.OwnDirectories, process.LocalDaemon):
    """MariaDB (or MySQL 8) started from local binaries; use as a context manager."""

    backend = "local"
    pids = process.HOST_PIDS  # its processes, as a study polls and signals them (a counted container has its own)

    def __init__(
        self,
        base: Settings,
        *,
        log_dir: Path,
        binary: str | Path | None = None,
        listen_tcp: bool = False,
        user: RunUser | None = None,
        start_timeout: float = 120.0,
        stop_timeout: float = 120.0,
        launch_prefix: tuple[str, ...] = (),
        datadir_from: Path | None = None,
    ):
        self.binary = find_mariadbd(binary)
        # A counting tool the server runs under (valgrind, strace: logbench.counting), as the server's user
        self.launch_prefix = tuple(launch_prefix)
        # A data directory copied instead of mariadb-install-db: every start of a counted server begins from the
        # same files
        self.datadir_from = Path(datadir_from) if datadir_from is not None else None
        self.flavor, self.binary_version = mariadb_flavor(self.binary)
        validate_mariadb(base, self.binary)
        self.install_db = find_install_db(self.binary) if self.flavor == "mariadb" else None
        self.base = base
        self.log_dir = Path(log_dir)
        self.listen_tcp = listen_tcp
        self.user = user or process.server_user()
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.workdir: Path | None = None
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.applied: Settings = Settings.of("mariadb")
        self.initial: dict[str, str] = {}
        self._admin: pymysql.Connection | None = None

    # -- paths (the data and socket directories: process.OwnDirectories) ----
    @property
    def socket_path(self) -> Path:
        return self.socket_dir / "mysqld.sock"

    @property
    def error_log(self) -> Path:
        return self._wd / "error.log"

    @property
    def tcp_conninfo(self) -> dict[str, object]:
        if not self.listen_tcp:
            raise RuntimeError("server started without listen_tcp")
        return {"host": "127.0.0.1", "port": self.port, "user": ROOT_USER, "password": ""}

    # -- lifecycle (the hooks of process.Managed's start template) -----------
    workdir_prefix = "logbench-mariadb-"
    private_dirs = ("sock", "tmp")

    def _configure(self) -> None:
        self._init_datadir()
        if self.listen_tcp:
            self.port = process.free_loopback_port()

    def _run_as_server_user(self) -> dict:
        if process.is_root() and self.user.uid != 0:
            return dict(user=self.user.uid, group=self.user.gid, extra_groups=[])
        return {}

    def _init_datadir(self) -> None:
        if self.datadir_from is not None:
            process.copy_datadir(self.datadir_from, self.datadir, self.user)
            return
        if self.flavor == "mariadb":
            argv = [str(self.install_db), "--no-defaults", f"--datadir={self.datadir}",
                    "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve",
                    f"--tmpdir={self._wd / 'tmp'}"]
            if self.binary.parent not in (Path("/usr/sbin"), Path("/usr/bin")):
                argv.append(f"--basedir={self.binary.parent.parent}")
        else:
            argv = [str(self.binary), "--no-defaults", "--initialize-insecure", f"--datadir={self.datadir}",
                    f"--tmpdir={self._wd / 'tmp'}", f"--log-error={self._wd / 'initialize.log'}"]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=self._wd,
                           **self._run_as_server_user())
        if r.returncode != 0:
            init_log = process.tail(self._wd / "initialize.log") if self.flavor == "mysql" else ""
            raise ServerStartError(f"`{' '.join(argv)}` failed ({r.returncode}):\n{r.stdout[-2000:]}\n"
                                   f"{r.stderr[-2000:]}\n{init_log}")

    def _private_options(self) -> list[str]:
        return [f"--datadir={self.datadir}", f"--socket={self.socket_path}", f"--pid-file={self._wd / 'mysqld.pid'}",
                f"--log-error={self.error_log}", f"--tmpdir={self._wd / 'tmp'}"]

    def _listen_options(self) -> list[str]:
        if self.listen_tcp:
            return ["--bind-address=127.0.0.1", f"--port={self.port}"]
        return ["--skip-networking"]

    def _launch(self, settings: Settings | None = None) -> None:
        argv = [*self.launch_prefix, *self.command(self.base if settings is None else settings)]
        self.proc = process.spawn(argv, self._wd / "mariadbd.out", user=self.user, cwd=self._wd)

    def server_pid(self) -> int:
        """mariadbd's own pid (its pid file): under strace it is strace's child, not ``proc``."""
        return int((self._wd / "mysqld.pid").read_text().strip())

    def _log_tail(self) -> str:
        return (f"--- error log {self.error_log}\n{process.tail(self.error_log)}\n"
                f"--- {self._wd / 'mariadbd.out'}\n{process.tail(self._wd / 'mariadbd.out', 5)}")

    def _stop_proc(self) -> None:
        self._drop_admin()
        # SIGTERM is a clean shutdown for both servers; process.stop escalates to SIGKILL.
        process.stop(self.proc, [(signal.SIGTERM, self.stop_timeout)])
        self.proc = None



def close_quietly(conn: pymysql.Connection | None) -> None:
    """Close a session that may be gone already (its server stopped, restarted or dropped it): closing raises
    then, and there is nothing left to close."""
    if conn is not None:
        try:
            conn.close()
        except pymysql.MySQLError:
            pass


def make_quiet(conn: pymysql.Connection, flavor: str) -> None:
    """Keep this session's own statements out of the slow and general logs (see the module notes)."""
    with conn.cursor() as cur:
        cur.execute(f"SET SESSION long_query_time = {QUIET_LONG_QUERY_TIME}")
        if flavor == "mariadb":
            cur.execute("SET SESSION slow_query_log = 0")
        try:
            cur.execute("SET SESSION sql_log_off = 1")
        except pymysql.MySQLError:
            # Needs SUPER / SYSTEM_VARIABLES_ADMIN; without it our statements may show in the general log.
            pass
