"""A real PostgreSQL from the machine's own binaries, in a private directory.

The server listens on a private unix-socket directory (mode 0700) and, only if
asked, on 127.0.0.1; it runs as an unprivileged user when we are root, inside a
mount namespace whose ``/dev/log`` is the study's private syslog socket. The
base settings go to ``postgresql.conf``; each configuration's settings go in by
``ALTER SYSTEM`` and a reload, and the server's own ``pending_restart`` decides
whether a restart is needed. ``postgresql.conf`` ends by including ``SWITCH_FILE``
(empty but for a switchback load, which switches through it: see
:mod:`logbench.measure.benches.pg_switchback`).
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from ..base.errors import ServerStartError, SettingError
from ..base.settings import Settings, validate_postgres
from . import process
from .process import RunUser

SUPERUSER = "postgres"
# Beside postgresql.conf and included at its end: the switchback design's settings, written without an fsync
# (ALTER SYSTEM fsyncs postgresql.auto.conf twice, which stalled switches for 0.1-4 s on this VM and 20 s in a
# container on a bind-mounted disk). postgresql.auto.conf is read after it and wins, so a switchback load
# empties postgresql.auto.conf first.
SWITCH_FILE = "logbench_switch.conf"
DBNAME = "postgres"
PRIVATE_DEV_SCRIPT = Path(__file__).with_name("private_dev.sh")


def find_bindir(bindir: str | Path | None = None) -> Path:
    """The directory with ``postgres``, ``initdb`` and ``pgbench``: given, on PATH, or Debian's newest."""
    if bindir:
        candidates = [Path(bindir)]
    else:
        on_path = shutil.which("postgres")
        candidates = [Path(os.path.realpath(on_path)).parent] if on_path else []
        candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)]
    for c in candidates:
        if (c / "postgres").is_file() and (c / "initdb").is_file():
            return c
    raise ServerStartError(
        f"no PostgreSQL server binaries found (looked in {', '.join(map(str, candidates)) or 'PATH'}); "
        "the README's set-up installs Debian's postgresql package"
    )


def _version_key(path: str) -> int:
    try:
        return int(Path(path).parent.name)
    except ValueError:
        return 0


@dataclass(frozen=True)
class Switch:
    """How a configuration reached the server: 'none', 'reload' or 'restart', and how long it took."""

    kind: str
    seconds: float
    pending_restart: tuple[str, ...] = ()


# postmaster.pid's line with the postmaster's status (LOCK_FILE_LINE_PM_STATUS, PostgreSQL 10 and later)
PIDFILE_STATUS_LINE = 8


class PostgresServer:
    """What every PostgreSQL backend shares: connecting, and applying settings by reload or restart.

    A backend provides ``conninfo``, ``auto_conf`` (the server's own path of
    ``postgresql.auto.conf``), ``pid``, ``restart()`` and ``bindir`` (client tools on this host).
    """

    engine = "postgresql"
    applied: Settings

    def binary(self, name: str) -> Path:
        return self.bindir / name

    def postmaster(self) -> int:
        """The postmaster's pid as its own pid space names it (its postmaster.pid's first line), for a server
        whose data directory is on this host (the local one, a counted container's bind mount); not ``pid``,
        which under a counting tool is the tool's."""
        return int((self.datadir / "postmaster.pid").read_text().split()[0])

    def _probe(self) -> bool:
        if getattr(self, "launch_prefix", ()):
            return self._pidfile_ready()
        try:
            with psycopg.connect(**self.conninfo, connect_timeout=2) as c:
                c.execute("SELECT 1")
            return True
        except psycopg.OperationalError:
            return False

    def _pidfile_ready(self) -> bool:
        """The postmaster's own word that it accepts connections: "ready" on postmaster.pid's status line, as
        ``pg_ctl start -w`` reads it. A server under a counting tool is probed so because a client's connection
        there is a backend that valgrind translates afresh (~0.7 s of every counted start); the study's first
        query follows at once, so a server that says ready and does not answer still fails the start."""
        try:
            lines = (self.datadir / "postmaster.pid").read_text().splitlines()
        except FileNotFoundError:
            return False
        return len(lines) >= PIDFILE_STATUS_LINE and lines[PIDFILE_STATUS_LINE - 1].strip() == "ready"

    # -- settings ------------------------------------------------------------
    def connect(self, **kw) -> psycopg.Connection:
        return psycopg.connect(**self.conninfo, autocommit=True, **kw)

    def version(self) -> str:
        with self.connect() as c:
            return c.execute("SHOW server_version").fetchone()[0]

    def apply(self, settings: Settings, timeout: float = 15.0) -> Switch:
        """Make ``settings`` the configuration's settings: reload, or restart if the server says so."""
        validate_postgres(settings, self.binary("postgres"))
        if settings == self.applied:
            return Switch("none", 0.0)
        t0 = time.perf_counter()
        names = set(settings) | set(self.applied)
        with self.connect() as c:
            alter_system(c, settings)
            c.execute("SELECT pg_reload_conf()")
        auto_conf = self.auto_conf
        wanted = set(settings)

        def settled() -> tuple[bool, list[str]]:
            with self.connect() as c:
                rows = c.execute(
                    "SELECT name, sourcefile, pending_restart, context FROM pg_settings WHERE name = ANY(%s)",
                    [sorted(names)]).fetchall()
            # A reload never moves a postmaster setting to another source, and flags no pending restart when
            # its value stays the same (max_connections = 100 set at its default): only a restart settles it.
            pending = [n for n, src, p, ctx in rows
                       if p or (ctx == "postmaster" and (src == auto_conf) != (n in wanted))]
            done = all(n in pending or ((src == auto_conf) == (n in wanted)) for n, src, _, _ in rows)
            return done, pending

        deadline = time.monotonic() + timeout
        done, pending = settled()
        while not done and time.monotonic() < deadline:
            time.sleep(0.05)
            done, pending = settled()
        if not done:
            raise SettingError(f"PostgreSQL did not take the settings {settings.as_dict()} within {timeout} s of a reload")
        kind = "reload"
        if pending:
            self.restart()
            kind = "restart"
        self.applied = settings
        mismatch = {k: v for k, v in self.effective(settings).items() if v is not None and k not in _UNCHECKED}
        if mismatch:
            raise SettingError(f"after {kind}, PostgreSQL reports other values than asked for: {mismatch}")
        return Switch(kind, time.perf_counter() - t0, tuple(pending))

    def effective(self, settings: Settings) -> dict[str, str | None]:
        """For each setting, None when the server took it from our file; else what it is using instead."""
        auto_conf = self.auto_conf
        with self.connect() as c:
            rows = dict(
                (n, (src, s)) for n, src, s in c.execute(
                    "SELECT name, sourcefile, setting FROM pg_settings WHERE name = ANY(%s)", [list(settings)]
                ).fetchall()
            )
        return {k: (None if rows.get(k, (None,))[0] == auto_conf else f"{rows.get(k)}") for k in settings}

    def show(self, names: list[str]) -> dict[str, str]:
        with self.connect() as c:
            return {n: c.execute(sql.SQL("SHOW {}").format(sql.Identifier(n))).fetchone()[0] for n in names}



class LocalPostgres(PostgresServer, process.OwnDirectories, process.LocalDaemon):
    """PostgreSQL started from local binaries; use as a context manager."""

    backend = "local"
    pids = process.HOST_PIDS  # its processes, as a study polls and signals them (a counted container has its own)

    def __init__(
        self,
        base: Settings,
        *,
        log_dir: Path,
        bindir: str | Path | None = None,
        syslog_socket: Path | None = None,
        listen_tcp: bool = False,
        user: RunUser | None = None,
        start_timeout: float = 60.0,
        stderr_file: Path | None = None,
        launch_prefix: tuple[str, ...] = (),
        datadir_from: Path | None = None,
    ):
        self.bindir = find_bindir(bindir)
        # A counting tool the server runs under (valgrind, strace: logbench.counting), as the server's user
        self.launch_prefix = tuple(launch_prefix)
        # A data directory copied instead of an initdb: every start of a counted server begins from the same files
        self.datadir_from = Path(datadir_from) if datadir_from is not None else None
        validate_postgres(base, self.bindir / "postgres")
        self.base = base
        self.log_dir = Path(log_dir)
        self.syslog_socket = syslog_socket
        self.listen_tcp = listen_tcp
        self.user = user or process.server_user()
        self.start_timeout = start_timeout
        # Where the server's stderr goes: its work directory's postmaster.log unless the study names a file
        # (with logging_collector = off the backends write their log lines there themselves).
        self.stderr_file = Path(stderr_file) if stderr_file is not None else None
        self.workdir: Path | None = None
        self.proc: subprocess.Popen | None = None
        self.port = 5432
        self.applied: Settings = Settings.of("postgresql")
        if syslog_socket is not None and not process.is_root():
            raise SettingError(
                "syslog destinations need root: the server gets a private /dev/log in a mount namespace "
                "so that it never writes to the host's syslog; run as root or drop the syslog destinations"
            )

    # -- paths (the data and socket directories: process.OwnDirectories) ----
    @property
    def server_log(self) -> Path:
        return self.stderr_file if self.stderr_file is not None else self._wd / "postmaster.log"

    @property
    def conninfo(self) -> dict[str, object]:
        return {"host": str(self.socket_dir), "port": self.port, "user": SUPERUSER, "dbname": DBNAME}

    @property
    def auto_conf(self) -> str:
        return str(self.datadir / "postgresql.auto.conf")

    @property
    def switch_file(self) -> Path:
        """The host's path of the file postgresql.conf includes last (:data:`SWITCH_FILE`)."""
        return self.datadir / SWITCH_FILE

    # -- lifecycle (the hooks of process.Managed's start template) -----------
    workdir_prefix = "logbench-pg-"
    private_dirs = ("sock", "dev")
    what = "PostgreSQL"

    def _configure(self) -> None:
        self._initdb()
        if self.listen_tcp:
            self.port = process.free_loopback_port()
        self._write_conf()

    def _initdb(self) -> None:
        if self.datadir_from is not None:
            process.copy_datadir(self.datadir_from, self.datadir, self.user)
            return
        kwargs = {}
        if process.is_root():
            kwargs = dict(user=self.user.uid, group=self.user.gid, extra_groups=[])
        r = subprocess.run(
            [str(self.binary("initdb")), "-D", str(self.datadir), "-U", SUPERUSER, "--auth=trust",
             "--no-sync", "-E", "UTF8", "--locale=C"],
            capture_output=True, text=True, timeout=300, **kwargs,
        )
        if r.returncode != 0:
            raise ServerStartError(f"initdb failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")

    def _write_conf(self) -> None:
        fixed = {
            "listen_addresses": "127.0.0.1" if self.listen_tcp else "",
            "port": str(self.port),
            "unix_socket_directories": str(self.socket_dir),
            "unix_socket_permissions": "0700",
            "log_directory": str(self.log_dir),
        }
        conf = self.datadir / "postgresql.conf"
        conf.write_text(conf_text({**self.base.as_dict(), **fixed}))
        if process.is_root():
            os.chown(conf, self.user.uid, self.user.gid)

    def _launch(self) -> None:
        argv = [*self.launch_prefix, str(self.binary("postgres")), "-D", str(self.datadir)]
        if process.is_root():
            sock = str(self.syslog_socket) if self.syslog_socket else "/nonexistent/logbench-no-syslog"
            argv = ["unshare", "--mount", "--propagation", "private", "--", "sh", str(PRIVATE_DEV_SCRIPT),
                    str(self._wd / "dev"), sock, str(self.user.uid), str(self.user.gid), "--", *argv]
            self.proc = process.spawn(argv, self.server_log)
        else:
            self.proc = process.spawn(argv, self.server_log, user=self.user)

    def _log_tail(self) -> str:
        parts = [process.tail(self.server_log)]
        collector = sorted(self.log_dir.glob("*.log"))
        if collector:
            parts.append(f"--- {collector[-1]}\n" + process.tail(collector[-1]))
        return "\n".join(parts)

    def _stop_proc(self) -> None:
        # SIGINT is PostgreSQL's fast shutdown; SIGQUIT the immediate one.
        process.stop(self.proc, [(signal.SIGINT, 30.0), (signal.SIGQUIT, 10.0)])
        self.proc = None

    def stop(self) -> None:
        self._stop_proc()

    def restart(self) -> None:
        self._stop_proc()
        self._launch_ready()


# Settings the server may legitimately report from elsewhere (none so far); kept explicit.
_UNCHECKED: frozenset[str] = frozenset()


def sql_literal(v: str) -> str:
    """A string constant, in postgresql.conf as in SQL (standard_conforming_strings, on since 9.1)."""
    return "'" + v.replace("'", "''") + "'"


def alter_system(conn: psycopg.Connection, settings: Settings) -> None:
    """Make ``settings`` the whole of postgresql.auto.conf (in effect at the next reload or restart)."""
    conn.execute("ALTER SYSTEM RESET ALL")
    for k, v in settings.items():
        conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(k), sql.Literal(v)))


def _conf_lines(values: dict[str, str]) -> str:
    return "".join(f"{k} = {sql_literal(v)}\n" for k, v in values.items())


def conf_text(values: dict[str, str]) -> str:
    """A postgresql.conf holding ``values``: the study's base settings plus where to listen and log."""
    return ("# written by logbench: the study's base settings\n" + _conf_lines(values)
            + f"# a switchback load's settings (empty otherwise)\ninclude_if_exists {sql_literal(SWITCH_FILE)}\n")


def write_switch_file(path: Path, values: dict[str, str]) -> None:
    """Replace the switch file at once (a reload never reads half of it), without an fsync: the server reads
    it from the page cache, and a crash loses nothing a study keeps."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(_conf_lines(values))
    tmp.chmod(0o644)
    os.replace(tmp, path)
