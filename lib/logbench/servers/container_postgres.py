"""PostgreSQL in a container: the local backend's server (:class:`logbench.servers.postgres.PostgresServer`) with
the same postgresql.conf and switching, started from an image, reached through a bind-mounted socket."""

from __future__ import annotations

import uuid
from pathlib import Path

from ..base.settings import Settings, validate_postgres
# The engine and image helpers through their module (containers._docker, not a copy of the name), so whatever
# replaces one there (a test's stand-in engine) is what this server uses too, as when it lived in containers.py.
from . import containers, process
from .postgres import SWITCH_FILE, PostgresServer, conf_text, find_bindir


class ContainerPostgres(PostgresServer, process.Managed):
    """PostgreSQL in a container, reached through a bind-mounted unix socket; a context manager."""

    backend = "container"
    DATA = "/var/lib/postgresql/data"
    RUN = "/var/run/postgresql"  # the socket directory inside; the host's private one is mounted here
    workdir_prefix = "logbench-pg-"
    private_dirs = ("sock", "conf")
    opens_host_paths = False

    def __init__(self, base: Settings, *, log_dir: Path, image: str | None = None, version: str = "15",
                 syslog_socket: Path | None = None, start_timeout: float = 120.0):
        self.bindir = find_bindir(None)  # client tools (pgbench) on this host
        validate_postgres(base, self.bindir / "postgres")
        self.base, self.log_dir, self.syslog_socket = base, Path(log_dir), syslog_socket
        self.image = containers.resolve_image("postgres", version, image)
        self.start_timeout = start_timeout
        self.workdir: Path | None = None
        self.container = None
        self._host_pid = 0
        self.applied = Settings.of("postgresql")
        self.port = 5432

    @property
    def what(self) -> str:
        return f"PostgreSQL in {self.image}"

    @property
    def auto_conf(self) -> str:
        return f"{self.DATA}/postgresql.auto.conf"

    @property
    def switch_file(self) -> Path:
        """The host's path of the file the container's postgresql.conf includes last (beside it, mounted)."""
        return self._wd / "conf" / SWITCH_FILE

    @property
    def socket_dir(self) -> Path:
        return self._wd / "sock"

    @property
    def conninfo(self) -> dict[str, object]:
        return {"host": str(self.socket_dir), "port": self.port, "user": "postgres", "dbname": "postgres"}

    # -- lifecycle (the hooks of process.Managed's start template) -----------
    def _server_user(self) -> process.RunUser:
        return process.RunUser("postgres", containers.CONTAINER_UID, containers.CONTAINER_UID)

    def _configure(self) -> None:
        fixed = {"listen_addresses": "", "port": str(self.port), "unix_socket_directories": self.RUN,
                 "unix_socket_permissions": "0700", "log_directory": "/logbench/log"}
        (self._wd / "conf" / "postgresql.conf").write_text(conf_text({**self.base.as_dict(), **fixed}))

    def _launch(self) -> None:
        tag = uuid.uuid4().hex[:8]
        c = (
            containers._testcontainers()(self.image)
            .with_name(f"logbench-pg-{tag}")
            .with_env("POSTGRES_HOST_AUTH_METHOD", "trust")
            .with_env("POSTGRES_INITDB_ARGS", "-E UTF8 --locale=C")  # as the local backend's initdb
            .with_volume_mapping(str(self.socket_dir), self.RUN, "rw")
            .with_volume_mapping(str(self.log_dir), "/logbench/log", "rw")
            .with_volume_mapping(str(self._wd / "conf"), "/logbench/conf", "ro")
            .with_command("postgres -c config_file=/logbench/conf/postgresql.conf "
                          f"-c hba_file={self.DATA}/pg_hba.conf -c ident_file={self.DATA}/pg_ident.conf")
            .with_kwargs(labels={containers.LABEL: tag})
        )
        if self.syslog_socket is not None:
            c = c.with_volume_mapping(str(self.syslog_socket), "/dev/log", "rw")
        self.container = c  # whatever happens from here (an interrupt too), close() removes it
        self._host_pid = containers.started(c, self.image)

    def _probe(self) -> bool:
        # On a first start the entrypoint runs a temporary server (initdb's follow-up work) on this same
        # socket directory, with our config file, then stops it and execs the real server as the
        # container's main process. A probe that reached the temporary one would let the study in just
        # before it is stopped, so only the real one counts: the socket's lock file names the postmaster's
        # pid, 1 for the server the entrypoint exec'd, another for the one pg_ctl started as its child.
        return self._postmaster_pid() == 1 and super()._probe()

    def _postmaster_pid(self) -> int | None:
        try:
            return int((self.socket_dir / f".s.PGSQL.{self.port}.lock").read_text().split("\n", 1)[0])
        except (OSError, ValueError):  # not there yet, or half-written
            return None

    def running(self) -> bool:
        return self.container is not None and containers._alive(self._host_pid)

    def _log_tail(self) -> str:
        text = containers._logs_of(self.container)
        collector = sorted(self.log_dir.glob("*.log"))
        if collector:
            text += f"\n--- {collector[-1].name}\n" + process.tail(collector[-1])
        return text

    def _stop_proc(self) -> None:
        containers._remove(self.container)
        self.container = None
        self._host_pid = 0

    @property
    def pid(self) -> int:
        """The postmaster as this host sees it: the container's main process, read once per start."""
        if self.container is None or not self._host_pid:
            raise RuntimeError("server not running")
        return self._host_pid

    def restart(self) -> None:
        wrapped = self.container.get_wrapped_container()
        wrapped.restart(timeout=30)
        self._host_pid = containers._container_pid(self.container)
        self._wait_ready()

    def close(self) -> None:
        try:
            self._stop_proc()
        finally:
            self._remove_workdir()
