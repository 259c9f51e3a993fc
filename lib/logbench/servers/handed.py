"""A server handed to a study on a user's server as a DBA's would be: one the study did not start.

The studies on a user's server (``own_server``, ``own_mariadb``) connect to what they are given and start nothing.
Their tests and their committed runs need such a server made the same way every time: a throwaway PostgreSQL or
MariaDB from this machine's binaries (:class:`~.postgres.LocalPostgres`, :class:`~.mariadb.LocalMariaDB`),
listening on loopback only, reached over TCP with a password a client takes from the environment (``PGPASSWORD``,
``MYSQL_PWD``), never from a file: the connection string (:attr:`Handed.spec`) holds none. Its data and log
directories are claimed scratch directories (:mod:`logbench.base.cleanup`): its context's exit stops and removes
them, and a guardian does where the process that started it is killed outright.

``python -m logbench.servers.handed postgresql -- COMMAND ...`` runs one command against a fresh one (the workflow's
committed run of study 12 or 13, ``logbench.jobs``): :data:`SERVER` in the command's arguments becomes the server's
connection string, the password reaches the command through the environment only (a new random one per server),
and the server is stopped and removed when the command ends, fails, or is interrupted (SIGINT, SIGTERM: passed on
to the command once, which then has :data:`GRACE_S` to restore what it changed before it is killed).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..base import cleanup
from ..base.settings import Settings

ENGINES = ("postgresql", "mariadb")
# What a command's arguments name the handed server by, replaced by its connection string (no password in it): a
# connection string itself, both studies' parsers take it, so parameters holding it define; its host is in the
# reserved .invalid domain, so a run given it without this module fails at connecting, naming it.
SERVER = "host=handed-server.invalid"
# How long an interrupted command may take to put back what it changed before it is killed (a study restores its
# settings and drops its database on the way out; papermill then writes the notebook).
GRACE_S = 120.0
# The account a MariaDB is handed with (PostgreSQL's is its superuser, postgres): every privilege the study asks for.
MARIADB_USER = "owner"
# A DBA's server as this module makes it where the caller names no settings: the engine's defaults, and for
# PostgreSQL the collector on (study 12 refuses a server whose log it cannot count: logging_collector = off).
DEFAULTS = {"postgresql": {"logging_collector": True}, "mariadb": {}}


@dataclass(frozen=True)
class Handed:
    """A running server as a user hands it over: ``spec`` is the connection string the study takes (host, port,
    user: no password), ``env`` what a client reads the password from (and nothing else), ``server`` the server
    object itself (the tests' own sessions: its socket, trusted, or its admin connection)."""

    engine: str
    spec: str
    env: dict[str, str] = field(repr=False)
    server: object = field(repr=False)


def _scratch(prefix: str, mode: int) -> Path:
    """A claimed directory the server's account can enter (its log directory is made inside)."""
    d = cleanup.private_dir(prefix)
    d.chmod(mode)
    return d


@contextlib.contextmanager
def postgres(base: Settings | None = None, *, password: str | None = None) -> Iterator[Handed]:
    """A PostgreSQL on 127.0.0.1 whose TCP connections need ``password`` (None: a random one), its unix socket (in
    its own private directory) left trusted for the caller's sessions; the log files in ``<scratch>/log``."""
    from psycopg import sql

    from .postgres import LocalPostgres

    password = password or secrets.token_urlsafe(24)
    base = base if base is not None else Settings.of("postgresql", DEFAULTS["postgresql"])
    work = _scratch("logbench-handed-pg-", 0o755)
    try:
        with LocalPostgres(base, log_dir=work / "log", listen_tcp=True) as pg:
            with pg.connect() as c:
                c.execute(sql.SQL("ALTER ROLE postgres PASSWORD {}").format(sql.Literal(password)))
            hba = pg.datadir / "pg_hba.conf"
            hba.write_text("\n".join(line.replace("trust", "scram-sha-256") if line.startswith("host") else line
                                     for line in hba.read_text().splitlines()) + "\n")
            with pg.connect() as c:
                c.execute("SELECT pg_reload_conf()")
            yield Handed("postgresql", f"host=127.0.0.1 port={pg.port} user=postgres dbname=postgres",
                         {"PGPASSWORD": password}, pg)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def mariadb(base: Settings | None = None, *, password: str | None = None) -> Iterator[Handed]:
    """A MariaDB on 127.0.0.1 with the account :data:`MARIADB_USER` (every privilege, ``password``; None: a random
    one) as a DBA would hand it; the server's log files in ``<scratch>`` (readable by the study's account)."""
    from .mariadb import LocalMariaDB

    password = password or secrets.token_urlsafe(24)
    base = base if base is not None else Settings.of("mariadb", DEFAULTS["mariadb"])
    log_dir = _scratch("logbench-handed-mariadb-", 0o777)
    try:
        with LocalMariaDB(base, log_dir=log_dir, listen_tcp=True) as m:
            for host in ("127.0.0.1", "localhost"):
                m.query(f"CREATE USER '{MARIADB_USER}'@'{host}' IDENTIFIED BY %s", [password])
                m.query(f"GRANT ALL ON *.* TO '{MARIADB_USER}'@'{host}' WITH GRANT OPTION")
            yield Handed("mariadb", f"host=127.0.0.1 port={m.port} user={MARIADB_USER}", {"MYSQL_PWD": password}, m)
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)


def handed(engine: str, base: Settings | None = None, *, password: str | None = None):
    """The context manager of ``engine``'s handed server."""
    if engine not in ENGINES:
        from ..base.errors import ParameterError

        raise ParameterError("engine", engine, ", ".join(ENGINES))
    return (postgres if engine == "postgresql" else mariadb)(base, password=password)


def command_for(argv: Sequence[str], spec: str) -> list[str]:
    """``argv`` with every :data:`SERVER` in it (a whole argument or inside one: papermill's -y document) replaced
    by the connection string ``spec``."""
    return [a.replace(SERVER, spec) for a in argv]


class Interrupts:
    """SIGINT and SIGTERM while a command runs against a handed server, by phase: while the server starts, the first
    one stops the start (KeyboardInterrupt: the context's exit removes what was made); while the command runs, the
    first one is passed on to it (``forward``); later ones, and any while the server stops, are noted and ignored,
    so that nothing cuts its removal short (SIGKILL still does: then the guardian removes it)."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.forward = None  # set while the command runs: signum -> None
        self.passed_on: int | None = None  # the signal the command was given

    def __call__(self, signum: int, frame: object) -> None:
        first = not self.received
        self.received.append(signum)
        if not first:
            return
        if self.forward is None:
            raise KeyboardInterrupt(f"signal {signum}")
        self.forward(signum)

    @property
    def first(self) -> int | None:
        return self.received[0] if self.received else None

    @contextlib.contextmanager
    def installed(self) -> Iterator["Interrupts"]:
        old = {s: signal.signal(s, self) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)


def run(engine: str, argv: Sequence[str], *, say=lambda s: print(s, file=sys.stderr, flush=True)) -> int:
    """Run ``argv`` against a fresh handed server of ``engine``; its exit status (:func:`status`). The command runs
    in a session of its own, so an interrupt reaches it once, from here, and the server outlives it."""
    if not argv:
        from ..base.errors import ParameterError

        raise ParameterError("command", "", "a command to run against the server, after --")
    interrupts = Interrupts()
    try:
        with interrupts.installed(), handed(engine) as h:
            code = _run_against(h, argv, interrupts, say)
    except KeyboardInterrupt:  # while the server started: what was made is removed, nothing ran
        say("logbench.servers.handed: interrupted while the server started; removed it")
        return 128 + (interrupts.first or signal.SIGINT)
    return status(code, interrupts.passed_on)


def _run_against(h: Handed, argv: Sequence[str], interrupts: Interrupts, say) -> int:
    say(f"logbench.servers.handed: {h.engine} at {h.spec} (the password in {', '.join(h.env)}); running "
        f"{Path(argv[0]).name}")
    started: list[subprocess.Popen] = []

    def forward(signum: int) -> None:
        interrupts.passed_on = signum
        say(f"logbench.servers.handed: signal {signum} passed on; the server stops once the command has ended "
            f"(at most {GRACE_S:g} s)")
        for child in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signum)

    # set before the command starts: an interrupt from here on is the command's, never a cut into the server's exit
    interrupts.forward = forward
    child = subprocess.Popen(command_for(argv, h.spec), env={**os.environ, **h.env}, start_new_session=True)
    started.append(child)
    if interrupts.passed_on is not None:  # it came while the command was being started
        forward(interrupts.passed_on)
    try:
        code = _wait(child, interrupts)
    finally:
        interrupts.forward = lambda signum: None  # from here on the server stops: noted, not acted on
        if child.poll() is None:  # left by an error here: the command does not outlive its server
            _kill(child)
    say(f"logbench.servers.handed: the command ended ({code}); stopping and removing the server")
    return code


def status(code: int, interrupted_by: int | None) -> int:
    """The exit status to report: a command ended by a signal as a shell says it (128 + the signal); an interrupted
    one never as a success, whatever it returned."""
    if code < 0:
        return 128 - code
    if interrupted_by is not None and code == 0:
        return 128 + interrupted_by
    return code


def _kill(child: subprocess.Popen) -> int:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    return child.wait()


def _wait(child: subprocess.Popen, interrupts: Interrupts, grace: float = GRACE_S) -> int:
    """The command's status, once it has ended; after an interrupt at most ``grace`` seconds later (then it is
    killed, with every process of its session)."""
    deadline = None
    while True:
        try:
            return child.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            if interrupts.passed_on is None:
                continue
            now = time.monotonic()
            deadline = deadline or now + grace
            if now >= deadline:
                return _kill(child)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m logbench.servers.handed",
        description="Run a command against a throwaway server of this machine's binaries, handed over as a user's "
                    f"would be: {SERVER} in its arguments becomes the connection string (host, port, user), the "
                    "password reaches it only through the environment (PGPASSWORD, MYSQL_PWD), and the server is "
                    "stopped and removed when the command ends, however it ends.")
    ap.add_argument("engine", choices=ENGINES)
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- the command and its arguments")
    a = ap.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    return run(a.engine, command)


if __name__ == "__main__":
    sys.exit(main())
