"""PostgreSQL of one of docker/servers.tsv's versions, run under a counting tool inside its container (study 11,
record_cost's ``versions``): the container's PostgreSQL, its valgrind or strace (the release's own builds, in the
image), a data directory copied from a pristine one, reached from this host through a bind-mounted socket.

The container, the server started by ``docker exec`` under the tool, the shared directories and the namespace's
pids are :mod:`.counted_container`'s, as the counted MariaDB's. Here: initdb in the container when there is no
data directory to copy, the configuration as postgresql.conf, the collector's log directory bind-mounted, and the
postmaster's pid from its postmaster.pid; a fast shutdown (SIGINT) stops it, its logging collector goes on reading
its pipe to the end and the container's init reaps it, as on the host.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from ..base.errors import ServerStartError
from ..base.settings import Settings
from . import containers, process
from .counted_container import CountedContainer
from .postgres import DBNAME, SUPERUSER, PostgresServer, conf_text, find_bindir


class CountedContainerPostgres(PostgresServer, CountedContainer):
    """PostgreSQL ``version`` (docker/servers.tsv) in its container, started under ``launch_prefix`` from a copy of
    ``datadir_from`` (an initdb in the container without one); a context manager. ``bindir`` is this host's
    (pgbench)."""

    kind = "postgres"
    user_name = "postgres"
    DATA = "/var/lib/postgresql/data"
    RUN = "/var/run/postgresql"
    LOG = "/logbench/log"
    STOP_SIGNAL = signal.SIGINT  # a fast shutdown
    SERVER_LOG = "postmaster.log"
    workdir_prefix = "logbench-pgc-"

    def __init__(self, base: Settings, *, log_dir: Path, version: str, launch_prefix: tuple[str, ...] = (),
                 datadir_from: Path | None = None, shared: tuple[Path, ...] = (), start_timeout: float = 120.0):
        self.bindir = find_bindir(None)  # client tools on this host
        self.base, self.log_dir = base, Path(log_dir)
        self._counted(version, launch_prefix, datadir_from, shared, start_timeout)
        self.applied = Settings.of("postgresql")
        self.port = 5432

    @property
    def what(self) -> str:
        return f"PostgreSQL in {self.image}"

    @property
    def conninfo(self) -> dict[str, object]:
        return {"host": str(self.socket_dir), "port": self.port, "user": SUPERUSER, "dbname": DBNAME}

    @property
    def auto_conf(self) -> str:
        return f"{self.DATA}/postgresql.auto.conf"

    def _launch(self) -> None:
        self._start_container({self.log_dir: self.LOG})
        if not (self.datadir / "PG_VERSION").exists():
            r = subprocess.run(self.exec_argv(["initdb", "-D", self.DATA, "-U", SUPERUSER, "--auth=trust",
                                               "--no-sync", "-E", "UTF8", "--locale=C"]),
                               capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                raise ServerStartError(f"initdb in {self.image} failed ({r.returncode}):\n{r.stdout[-2000:]}\n"
                                       f"{r.stderr[-2000:]}")
        fixed = {"listen_addresses": "", "port": str(self.port), "unix_socket_directories": self.RUN,
                 "unix_socket_permissions": "0700", "log_directory": self.LOG}
        conf = self.datadir / "postgresql.conf"
        conf.write_text(conf_text({**self.base.as_dict(), **fixed}))
        os.chown(conf, containers.CONTAINER_UID, containers.CONTAINER_UID)
        self._spawn(["postgres", "-D", self.DATA])

    server_pid = PostgresServer.postmaster  # in the container's namespace: what its counting tool names files by

    def _log_tail(self) -> str:
        text = process.tail(self.server_log) if self.workdir is not None else ""
        collector = sorted(self.log_dir.glob("*.log"))
        if collector:
            text += f"\n--- {collector[-1].name}\n" + process.tail(collector[-1])
        return text
