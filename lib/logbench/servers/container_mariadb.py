"""MariaDB in a container: the local backend's server (:class:`logbench.servers.mariadb.MariaDBServer`) with the
same command line and switching, its data on a named volume kept across restarts, reached through a socket."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from ..base.errors import ServerStartError
from ..base.settings import Settings, mariadb_flavor, validate_mariadb
# The engine and image helpers through their module (containers._docker, not a copy of the name), so whatever
# replaces one there (a test's stand-in engine) is what this server uses too, as when it lived in containers.py.
from . import containers, process
from .mariadb import MariaDBServer, find_mariadbd


class ContainerMariaDB(MariaDBServer):
    """MariaDB in a container, reached through a bind-mounted unix socket; a context manager.

    The settings are validated against the host's ``mariadbd`` catalog (as
    :class:`ContainerPostgres` validates with the host's ``postgres``): the image's
    server must be the same flavour (MariaDB 10.11 here, in both images).
    """

    backend = "container"
    DATA = "/var/lib/mysql"
    RUN = "/run/mysqld"  # the socket directory inside; the host's private one is mounted here
    # The entrypoints' line after the first start's initialisation (stdout), then the real server's
    # readiness (stderr); stopping it earlier could catch the entrypoint's shell, which as pid 1 ignores SIGTERM.
    INIT_DONE = re.compile(rb"init process done.*ready for connections", re.DOTALL)

    def __init__(self, base: Settings, *, log_dir: Path, image: str | None = None, version: str = "10.11",
                 binary: str | Path | None = None, start_timeout: float = 120.0, stop_timeout: float = 60.0):
        self.binary = find_mariadbd(binary)  # the host's server binary: its catalog checks the settings
        self.flavor, self.binary_version = mariadb_flavor(self.binary)
        validate_mariadb(base, self.binary)
        self.image = containers.resolve_image("mariadb", version, image)
        self.base, self.log_dir = base, Path(log_dir)
        self.listen_tcp = False
        self.start_timeout, self.stop_timeout = start_timeout, stop_timeout
        self.workdir: Path | None = None
        self.volume = None
        self.container = None
        self.tag = ""
        self._launches = 0
        self._host_pid = 0
        self.applied = Settings.of("mariadb")
        self.initial: dict[str, str] = {}
        self._admin = None

    # -- paths -------------------------------------------------------------
    @property
    def socket_path(self) -> Path:
        return self._wd / "sock" / "mysqld.sock"

    @property
    def datadir(self) -> Path:
        """The data volume's directory on this host (readable as root; TableSink sizes its CSV file there)."""
        if self.volume is None:
            raise RuntimeError("server not started")
        return Path(self.volume.attrs["Mountpoint"])

    @property
    def program(self) -> str:
        return "mariadbd" if self.flavor == "mariadb" else "mysqld"

    def _private_options(self) -> list[str]:
        # No --log-error: the server's errors go to stderr, i.e. the container's log.
        return [f"--datadir={self.DATA}", f"--socket={self.RUN}/mysqld.sock", f"--pid-file={self.RUN}/mysqld.pid",
                "--tmpdir=/tmp"]

    def _listen_options(self) -> list[str]:
        return ["--skip-networking"]  # and the container has no network at all

    # -- lifecycle (the hooks of process.Managed's start template) -----------
    workdir_prefix = "logbench-mariadb-"
    private_dirs = ("sock",)
    opens_host_paths = False

    @property
    def what(self) -> str:
        return f"{self.flavor} in {self.image}"

    def _server_user(self) -> process.RunUser:
        return process.RunUser("mysql", containers.CONTAINER_UID, containers.CONTAINER_UID)

    def _configure(self) -> None:
        self.tag = uuid.uuid4().hex[:8]
        self.volume = containers._docker().volumes.create(name=f"logbench-mariadb-{self.tag}",
                                                          labels={containers.LABEL: self.tag})
        self._init_datadir()

    def _container(self, command: list[str], name: str):
        DockerContainer = containers._testcontainers()
        return (
            DockerContainer(self.image)
            .with_name(name)
            .with_volume_mapping(self.volume.name, self.DATA, "rw")
            .with_command(command)
            # No network: the server listens on its socket only, nothing is published.
            .with_kwargs(labels={containers.LABEL: self.tag}, network_mode="none")
        )

    def _init_datadir(self) -> None:
        """The entrypoint's first start (install-db, root without password, no time zones) with logbench's
        own options only, so the study's settings and log files see nothing of it (and the host's socket
        directory no temporary server); then a clean stop, leaving the initialised volume."""
        argv = [self.program, "--no-defaults", *self._private_options(), *self._listen_options()]
        if self.flavor == "mysql":
            argv += ["--mysqlx=OFF", "--skip-log-bin"]
        c = (
            self._container(argv, f"logbench-mariadb-{self.tag}-init")
            .with_env("MARIADB_ALLOW_EMPTY_ROOT_PASSWORD", "1").with_env("MYSQL_ALLOW_EMPTY_PASSWORD", "1")
            .with_env("MARIADB_INITDB_SKIP_TZINFO", "1").with_env("MYSQL_INITDB_SKIP_TZINFO", "1")
        )
        self.container = c  # whatever happens from here (an interrupt too), close() removes it
        self._host_pid = containers.started(c, self.image)
        wrapped = c.get_wrapped_container()
        # Both streams in time order (testcontainers' log wait searches each stream on its own).
        if not process.wait_until(lambda: bool(self.INIT_DONE.search(wrapped.logs())), timeout=self.start_timeout,
                                  interval=0.2, alive=self.running):
            raise ServerStartError(f"the {self.image} container did not initialise its data directory within "
                                   f"{self.start_timeout:.0f} s; its log:\n{containers._logs_of(c)}")
        self._stop_proc()

    def _launch(self, settings: Settings | None = None) -> None:
        self._launches += 1
        c = (
            self._container(self.command(self.base if settings is None else settings),
                            f"logbench-mariadb-{self.tag}-{self._launches}")
            .with_volume_mapping(str(self._wd / "sock"), self.RUN, "rw")
            .with_volume_mapping(str(self.log_dir), str(self.log_dir), "rw")
        )
        self.container = c
        self._host_pid = containers.started(c, self.image)

    def _log_tail(self) -> str:
        return containers._logs_of(self.container)

    def _stop_proc(self) -> None:
        """A clean shutdown (SIGTERM, as the local backend's), then the container goes; the volume stays."""
        self._drop_admin()
        if self.container is None:
            return
        try:
            self.container.get_wrapped_container().stop(timeout=int(self.stop_timeout))
        except Exception:  # already gone: removing it below is all that is left
            pass
        containers._remove(self.container)
        self.container = None
        self._host_pid = 0

    def close(self) -> None:
        self._drop_admin()
        try:
            containers._remove(self.container)  # the data goes too: no clean shutdown needed
            self.container = None
            if self.volume is not None:
                try:
                    self.volume.remove(force=True)
                finally:
                    self.volume = None
        finally:
            self._remove_workdir()

    @property
    def pid(self) -> int:
        """The server's process as this host sees it: the container's main process (the entrypoint execs
        mariadbd), read once per container from the engine."""
        if self.container is None or not self._host_pid:
            raise RuntimeError("server not running")
        return self._host_pid

    def running(self) -> bool:
        return self.container is not None and containers._alive(self._host_pid)

    def exec_sql(self, sql: str) -> str:
        """Run ``sql`` with the image's own ``mariadb`` client inside the container (a check from inside)."""
        client = "mariadb" if self.flavor == "mariadb" else "mysql"
        r = self.container.exec([client, "-uroot", f"--socket={self.RUN}/mysqld.sock", "-N", "-B", "-e", sql])
        if r.exit_code != 0:
            raise ServerStartError(f"`{client} -e {sql!r}` in the container failed ({r.exit_code}): "
                                   f"{r.output.decode(errors='replace')}")
        return r.output.decode()
