"""PostgreSQL of one of docker/servers.tsv's versions, run under a counting tool inside its container (study 11,
record_cost's ``versions``): the container's PostgreSQL, its valgrind or strace (the release's own builds, in the
image), a data directory copied from a pristine one, reached from this host through a bind-mounted socket.

The container's main process is an init (docker's ``--init``) over ``sleep infinity``; the server is started with
``docker exec`` as the postgres user, under ``launch_prefix`` (the counting tool's argv, as
:class:`~logbench.servers.postgres.LocalPostgres`'s), so the postmaster is no pid 1: when it exits its logging
collector goes on reading its pipe to the end, and the init reaps it, as on the host. The directories a counting
tool writes to (``shared``) are bind-mounted at their own host paths, so the tool's argv names them as the host
does. The tools need ``personality(ADDR_NO_RANDOMIZE)`` (``setarch -R``), which Docker's default seccomp profile
refuses: a counted container runs unconfined by seccomp.

Pids: the counting tools name their files, and ``pg_stat_activity`` reports, by the pids of the container's pid
namespace; :class:`NamespacePids` reads and signals those processes from this host (/proc, as root), so a study
polls them as it polls the local server's (:data:`logbench.servers.process.HOST_PIDS`).

:class:`~logbench.servers.container_postgres.ContainerPostgres` is the container backend of the throughput studies
(the image's entrypoint, initdb on first start, the server as the container's main process); this one exists
because a counted server must be started under a tool, from a copied data directory, and must not be pid 1.
"""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..errors import ServerStartError
from ..settings import Settings
from . import containers, process
from .postgres import DBNAME, SUPERUSER, PostgresServer, conf_text, find_bindir


@dataclass(frozen=True)
class _Proc:
    host: int  # its pid on this host
    parent: int  # its parent's pid on this host
    zombie: bool


class NamespacePids:
    """The processes of one pid namespace, by their pids there, read and signalled from this host through /proc
    (root: another user's namespace link is not readable otherwise)."""

    def __init__(self, host_pid: int):
        self.ns = os.readlink(f"/proc/{host_pid}/ns/pid")

    def table(self) -> dict[int, _Proc]:
        """namespace pid -> the process as this host sees it, for every process in the namespace now."""
        out = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                if os.readlink(f"/proc/{name}/ns/pid") != self.ns:
                    continue
                with open(f"/proc/{name}/status") as f:
                    fields = dict(line.split(":", 1) for line in f if ":" in line)
            except OSError:  # exited while we read
                continue
            nspid = fields.get("NSpid", "").split()
            if nspid:
                out[int(nspid[-1])] = _Proc(int(name), int(fields["PPid"]), fields["State"].split()[0] == "Z")
        return out

    def children(self, pid: int) -> set[int]:
        t = self.table()
        if pid not in t:
            return set()
        host = t[pid].host
        return {n for n, p in t.items() if p.parent == host and not p.zombie}

    def exists(self, pid: int) -> bool:
        p = self.table().get(pid)
        return p is not None and not p.zombie

    def kill(self, pid: int, sig: int) -> None:
        p = self.table().get(pid)
        if p is None:
            raise ProcessLookupError(f"no process {pid} in the container")
        os.kill(p.host, sig)


class CountedContainerPostgres(PostgresServer, process.ChildProcess, process.Managed):
    """PostgreSQL ``version`` (docker/servers.tsv) in its container, started under ``launch_prefix`` from a copy of
    ``datadir_from`` (an initdb in the container without one); a context manager. ``proc`` is the ``docker exec``
    that runs the server: it ends when the tool (or the postmaster) does. ``bindir`` is this host's (pgbench)."""

    backend = "container"
    DATA = "/var/lib/postgresql/data"
    RUN = "/var/run/postgresql"
    LOG = "/logbench/log"
    workdir_prefix = "logbench-pgc-"
    private_dirs = ("sock",)
    opens_host_paths = False

    def __init__(self, base: Settings, *, log_dir: Path, version: str, launch_prefix: tuple[str, ...] = (),
                 datadir_from: Path | None = None, shared: tuple[Path, ...] = (), start_timeout: float = 120.0):
        self.bindir = find_bindir(None)  # client tools on this host
        self.image_line = containers.check_version("postgres", version)
        self.image = containers.resolve_image("postgres", version)
        self.base, self.log_dir = base, Path(log_dir)
        self.launch_prefix = tuple(launch_prefix)
        self.datadir_from = Path(datadir_from) if datadir_from is not None else None
        self.shared = tuple(Path(p) for p in shared)
        self.start_timeout = start_timeout
        self.workdir: Path | None = None
        self.container = None
        self.proc: subprocess.Popen | None = None
        self.pids: NamespacePids | None = None
        self.applied = Settings.of("postgresql")
        self.port = 5432

    @property
    def what(self) -> str:
        return f"PostgreSQL in {self.image}"

    @property
    def label(self) -> str:
        """What ran, for a table's ``server`` column: '13 (bullseye container)'."""
        return f"{self.image_line.version} ({self.image_line.suite} container)"

    @property
    def datadir(self) -> Path:
        return self._wd / "data"

    @property
    def socket_dir(self) -> Path:
        return self._wd / "sock"

    @property
    def server_log(self) -> Path:
        return self._wd / "postmaster.log"

    @property
    def conninfo(self) -> dict[str, object]:
        return {"host": str(self.socket_dir), "port": self.port, "user": SUPERUSER, "dbname": DBNAME}

    @property
    def auto_conf(self) -> str:
        return f"{self.DATA}/postgresql.auto.conf"

    # -- lifecycle (the hooks of process.Managed's start template) -----------
    def _server_user(self) -> process.RunUser:
        return process.RunUser("postgres", containers.CONTAINER_UID, containers.CONTAINER_UID)

    def _configure(self) -> None:
        if self.datadir_from is not None:
            process.copy_datadir(self.datadir_from, self.datadir, self._server_user())
        else:  # initdb in the container, once it runs
            self.datadir.mkdir(mode=0o700)
            process.chown_tree(self.datadir, self._server_user())

    def _exec(self, argv: list[str]) -> list[str]:
        return ["docker", "exec", "-u", f"{containers.CONTAINER_UID}:{containers.CONTAINER_UID}",
                self.container.get_wrapped_container().name, *argv]

    def _launch(self) -> None:
        tag = uuid.uuid4().hex[:8]
        c = (
            containers._testcontainers()(self.image)
            .with_name(f"logbench-pgc-{tag}")
            .with_command("sleep infinity")  # the image's entrypoint execs it; the server comes by docker exec
            .with_volume_mapping(str(self.datadir), self.DATA, "rw")
            .with_volume_mapping(str(self.socket_dir), self.RUN, "rw")
            .with_volume_mapping(str(self.log_dir), self.LOG, "rw")
            .with_kwargs(labels={containers.LABEL: tag}, init=True, security_opt=["seccomp=unconfined"])
        )
        for d in self.shared:
            c = c.with_volume_mapping(str(d), str(d), "rw")
        self.container = c  # whatever happens from here (an interrupt too), close() removes it
        self.pids = NamespacePids(containers.started(c, self.image))
        if not (self.datadir / "PG_VERSION").exists():
            r = subprocess.run(self._exec(["initdb", "-D", self.DATA, "-U", SUPERUSER, "--auth=trust", "--no-sync",
                                           "-E", "UTF8", "--locale=C"]), capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                raise ServerStartError(f"initdb in {self.image} failed ({r.returncode}):\n{r.stdout[-2000:]}\n"
                                       f"{r.stderr[-2000:]}")
        fixed = {"listen_addresses": "", "port": str(self.port), "unix_socket_directories": self.RUN,
                 "unix_socket_permissions": "0700", "log_directory": self.LOG}
        conf = self.datadir / "postgresql.conf"
        conf.write_text(conf_text({**self.base.as_dict(), **fixed}))
        os.chown(conf, containers.CONTAINER_UID, containers.CONTAINER_UID)
        with open(self.server_log, "ab") as log:
            self.proc = subprocess.Popen(self._exec([*self.launch_prefix, "postgres", "-D", self.DATA]),
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

    def postmaster(self) -> int:
        """The postmaster's pid in the container (its postmaster.pid)."""
        return int((self.datadir / "postmaster.pid").read_text().split()[0])

    @property
    def pid(self) -> int:
        """The postmaster as this host sees it."""
        return self.pids.table()[self.postmaster()].host

    def _log_tail(self) -> str:
        text = process.tail(self.server_log) if self.workdir is not None else ""
        collector = sorted(self.log_dir.glob("*.log"))
        if collector:
            text += f"\n--- {collector[-1].name}\n" + process.tail(collector[-1])
        return text

    def _stop_proc(self) -> None:
        """A fast shutdown (SIGINT to the postmaster) if it runs, then the container removed (whatever is left
        in it with it)."""
        try:
            if self.proc is not None and self.proc.poll() is None and self.pids is not None:
                try:
                    self.pids.kill(self.postmaster(), signal.SIGINT)
                    self.proc.wait(timeout=30)
                except (OSError, ValueError, subprocess.TimeoutExpired):
                    pass  # the container's removal stops it
        finally:
            containers._remove(self.container)
            self.container = None
            if self.proc is not None:
                try:
                    self.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
                self.proc = None

    def stop(self) -> None:
        self._stop_proc()

    def restart(self) -> None:
        raise NotImplementedError("a counted server is started once per count, never restarted")

    def close(self) -> None:
        try:
            self._stop_proc()
        finally:
            self._remove_workdir()
