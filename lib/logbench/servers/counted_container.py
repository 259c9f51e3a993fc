"""A server of one of docker/servers.tsv's versions, run under a counting tool inside its container (study 11,
record_cost's ``versions``): what the counted PostgreSQL (:mod:`.counted_postgres`) and the counted MariaDB
(:mod:`.counted_mariadb`) share.

The container's main process is an init (docker's ``--init``) over ``sleep infinity``; the server is started with
``docker exec`` as the image's server user, under ``launch_prefix`` (the counting tool's argv, the image's own
valgrind or strace), so the server is no pid 1: a process it leaves behind (PostgreSQL's logging collector, reading
its pipe to the end) is reaped by the init, as on the host. Its data directory is a copy of a pristine one (or
empty, for the engine's own initialisation in the container), bind-mounted with its socket directory, so the
host's clients (pgbench, sysbench) connect as they do to a local server. The directories a counting tool writes
to (``shared``: its output, vgdb's FIFOs) are bind-mounted at their own host paths, so the tool's argv names them
as the host does. The tools need ``personality(ADDR_NO_RANDOMIZE)`` (``setarch -R``) and ptrace (strace, vgdb),
which Docker's default seccomp profile refuses: a counted container runs unconfined by seccomp.

Pids: the counting tools name their files, and the servers report (``pg_stat_activity``, a pid file), by the pids of
the container's pid namespace; :class:`NamespacePids` reads and signals those processes from this host (/proc, as
root), so a study polls them as it polls a local server's (:data:`logbench.servers.process.HOST_PIDS`).

The throughput studies' container servers (:mod:`.container_postgres`, :mod:`.container_mariadb`) run the server
as the container's main process from the image's entrypoint; a counted one exists because it must be started
under a tool, from a copied data directory, and must not be pid 1.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from . import containers, process


@dataclass(frozen=True)
class _Proc:
    host: int  # its pid on this host
    parent: int  # its parent's pid on this host
    zombie: bool


def _status(path: str) -> dict[str, str]:
    with open(path) as f:
        return dict(line.split(":", 1) for line in f if ":" in line)


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
                fields = _status(f"/proc/{name}/status")
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
        os.kill(self.host(pid), sig)

    def host(self, pid: int) -> int:
        """The process ``pid`` of the namespace as this host's /proc has it."""
        p = self.table().get(pid)
        if p is None:
            raise ProcessLookupError(f"no process {pid} in the container")
        return p.host

    @staticmethod
    def thread(host_tid: int) -> int:
        """A thread this host sees as ``host_tid``, by its id in the namespace (what strace names its file by);
        ProcessLookupError once it has exited."""
        try:
            return int(_status(f"/proc/{host_tid}/status")["NSpid"].split()[-1])
        except (OSError, KeyError) as e:
            raise ProcessLookupError(f"no thread {host_tid}") from e


class CountedContainer(process.OwnDirectories, process.ChildProcess, process.Managed):
    """A server of docker/servers.tsv's ``kind`` and ``version`` in its container, started by :meth:`_spawn` under
    ``launch_prefix`` from a copy of ``datadir_from`` (an empty data directory without one); a context manager.
    ``proc`` is the ``docker exec`` that runs the server: it ends when the tool (or the server) does.

    An engine's class provides ``kind``, ``user_name``, ``DATA`` and ``RUN`` (its data and socket directories in
    the image), ``STOP_SIGNAL`` (its clean shutdown), :meth:`server_pid` (the server's pid in the namespace) and
    ``_launch`` (the container by :meth:`_start_container`, then the server by :meth:`_spawn`)."""

    backend = "container"
    kind: str  # docker/servers.tsv's: postgres | mariadb
    user_name: str  # the image's server user (uid and gid containers.CONTAINER_UID)
    DATA: str
    RUN: str
    STOP_SIGNAL: int
    SERVER_LOG = "server.log"  # the docker exec's stdout and stderr, in the work directory
    private_dirs = ("sock",)
    opens_host_paths = False

    def _counted(self, version: str, launch_prefix: tuple[str, ...], datadir_from: Path | None,
                 shared: tuple[Path, ...], start_timeout: float) -> None:
        """The attributes every counted container sets in its ``__init__``."""
        self.image_line = containers.check_version(self.kind, version)
        self.image = containers.resolve_image(self.kind, version)
        self.launch_prefix = tuple(launch_prefix)
        self.datadir_from = Path(datadir_from) if datadir_from is not None else None
        self.shared = tuple(Path(p) for p in shared)
        self.start_timeout = start_timeout
        self.workdir: Path | None = None
        self.container = None
        self.proc: subprocess.Popen | None = None
        self.pids: NamespacePids | None = None

    @property
    def label(self) -> str:
        """What ran, for a table's ``server`` column: '13 (bullseye container)'."""
        return f"{self.image_line.version} ({self.image_line.suite} container)"

    @property
    def server_log(self) -> Path:
        return self._wd / self.SERVER_LOG

    # -- lifecycle (the hooks of process.Managed's start template) -----------
    def _server_user(self) -> process.RunUser:
        return process.RunUser(self.user_name, containers.CONTAINER_UID, containers.CONTAINER_UID)

    def _configure(self) -> None:
        if self.datadir_from is not None:
            process.copy_datadir(self.datadir_from, self.datadir, self._server_user())
        else:  # the engine's own initialisation, in the container once it runs
            self.datadir.mkdir(mode=0o700)
            process.chown_tree(self.datadir, self._server_user())

    def exec_argv(self, argv: list[str]) -> list[str]:
        """``argv`` run in the container as the server's user."""
        return ["docker", "exec", "-u", f"{containers.CONTAINER_UID}:{containers.CONTAINER_UID}",
                self.container.get_wrapped_container().name, *argv]

    def _start_container(self, mounts: dict[Path, str]) -> None:
        """The container (named after the work directory's prefix), its init over ``sleep infinity``, with the data
        and socket directories, ``mounts`` (host path -> path inside) and the shared directories bind-mounted."""
        tag = uuid.uuid4().hex[:8]
        c = (
            containers._testcontainers()(self.image)
            .with_name(f"{self.workdir_prefix}{tag}")
            .with_command("sleep infinity")  # the image's entrypoint execs it; the server comes by docker exec
            .with_volume_mapping(str(self.datadir), self.DATA, "rw")
            .with_volume_mapping(str(self.socket_dir), self.RUN, "rw")
            .with_kwargs(labels={containers.LABEL: tag}, init=True, security_opt=["seccomp=unconfined"])
        )
        for host, inside in {**mounts, **{d: str(d) for d in self.shared}}.items():
            c = c.with_volume_mapping(str(host), inside, "rw")
        self.container = c  # whatever happens from here (an interrupt too), close() removes it
        self.pids = NamespacePids(containers.started(c, self.image))

    def _spawn(self, argv: list[str]) -> None:
        """The server: ``argv`` under the counting tool, by docker exec, its output to :attr:`server_log`."""
        with open(self.server_log, "ab") as log:
            self.proc = subprocess.Popen(self.exec_argv([*self.launch_prefix, *argv]), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT)

    def server_pid(self) -> int:
        """The server's pid in the container (what its counting tool names its files by)."""
        raise NotImplementedError

    @property
    def pid(self) -> int:
        """The server as this host sees it."""
        return self.pids.host(self.server_pid())

    def _stop_proc(self) -> None:
        """A clean shutdown (``STOP_SIGNAL`` to the server) if it runs, then the container removed (whatever is
        left in it with it)."""
        try:
            if self.proc is not None and self.proc.poll() is None and self.pids is not None:
                try:
                    self.pids.kill(self.server_pid(), self.STOP_SIGNAL)
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

    def restart(self, *_) -> None:
        raise NotImplementedError("a counted server is started once per count, never restarted")

    def close(self) -> None:
        try:
            self._stop_proc()
        finally:
            self._remove_workdir()
