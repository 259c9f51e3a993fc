"""MariaDB of one of docker/servers.tsv's versions, run under a counting tool inside its container (study 11,
record_cost's ``versions``): the image's mariadbd under the image's valgrind or strace, a data directory copied
from a pristine one (or made by the image's mariadb-install-db), reached from this host through a bind-mounted
socket; the container, the ``docker exec`` under the tool and the namespace's pids are :mod:`.counted_container`'s,
as the counted PostgreSQL's.

The command line is :class:`~logbench.servers.mariadb.MariaDBServer`'s (``--no-defaults`` first, so the image's
option files do not count; the slow and general logs in the log directory, bind-mounted at its host path, so the
host counts the files the server writes), with the private paths of the image. The settings are not checked
against this host's mariadbd catalog, as the throughput studies' container server checks them: a counted version
may lack a variable this host's 10.11 has (the study's start-up options are per version for that reason), and the
image's own server refuses an unknown option at start, with its message in the start error.

:class:`~logbench.servers.container_mariadb.ContainerMariaDB` is the throughput studies' container server (the
image's entrypoint, the server as the container's main process, SET GLOBAL switching); this one exists because a
counted server is started under a tool, from a copied data directory, and must not be pid 1.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from ..base.errors import ServerStartError
from ..base.settings import Settings
from . import process
from .counted_container import CountedContainer
from .mariadb import MariaDBServer


class CountedContainerMariaDB(MariaDBServer, CountedContainer):
    """MariaDB ``version`` (docker/servers.tsv) in its container, started under ``launch_prefix`` with ``base`` on
    its command line, from a copy of ``datadir_from`` (mariadb-install-db in the container without one); a
    context manager."""

    kind = "mariadb"
    user_name = "mysql"
    DATA = "/var/lib/mysql"
    RUN = "/run/mysqld"  # the socket and the pid file
    STOP_SIGNAL = signal.SIGTERM  # a clean shutdown
    SERVER_LOG = "mariadbd.out"  # no --log-error: the server's errors go to stderr, i.e. here
    workdir_prefix = "logbench-mdbc-"

    def __init__(self, base: Settings, *, log_dir: Path, version: str, launch_prefix: tuple[str, ...] = (),
                 datadir_from: Path | None = None, shared: tuple[Path, ...] = (), start_timeout: float = 300.0,
                 stop_timeout: float = 120.0):
        self.base, self.log_dir = base, Path(log_dir)
        self._counted(version, launch_prefix, datadir_from, shared, start_timeout)
        self.binary = Path("mariadbd")  # the image's, found on its PATH
        self.flavor = "mariadb"
        self.listen_tcp = False
        self.stop_timeout = stop_timeout
        self.applied = Settings.of("mariadb")
        self.initial: dict[str, str] = {}
        self._admin = None

    @property
    def what(self) -> str:
        return f"MariaDB in {self.image}"

    @property
    def program(self) -> str:
        return "mariadbd"

    @property
    def socket_path(self) -> Path:
        return self.socket_dir / "mysqld.sock"

    def _private_options(self) -> list[str]:
        return [f"--datadir={self.DATA}", f"--socket={self.RUN}/mysqld.sock", f"--pid-file={self.RUN}/mysqld.pid",
                "--tmpdir=/tmp"]

    def _listen_options(self) -> list[str]:
        return ["--skip-networking"]

    def _launch(self, settings: Settings | None = None) -> None:
        self._start_container({self.log_dir: str(self.log_dir)})
        if not (self.datadir / "mysql").exists():
            # as the local server's: root without a password (the host's clients connect as root through the
            # socket), no test database, no DNS
            argv = ["mariadb-install-db", "--no-defaults", f"--datadir={self.DATA}",
                    "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"]
            r = subprocess.run(self.exec_argv(argv), capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                raise ServerStartError(f"`{' '.join(argv)}` in {self.image} failed ({r.returncode}):\n"
                                       f"{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
        self._spawn(self.command(self.base if settings is None else settings))

    def server_pid(self) -> int:
        """mariadbd's pid in the container (its pid file; under strace not the docker exec's child's child)."""
        return int((self.socket_dir / "mysqld.pid").read_text().strip())

    def _log_tail(self) -> str:
        return process.tail(self.server_log) if self.workdir is not None else ""

    def _stop_proc(self) -> None:
        self._drop_admin()
        CountedContainer._stop_proc(self)

    restart = CountedContainer.restart  # not MariaDBServer's: a counted server is started once per count
