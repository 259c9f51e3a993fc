"""The container backend: the same servers, settings and log destinations, in Docker containers.

Containers are started through testcontainers (its reaper image cannot be
pulled here, so the reaper is switched off and every container is removed by
our own teardown, volumes included). Nothing is published on a host port: the
server's unix-socket directory is a bind mount, so the host's pgbench reaches it
exactly as it reaches the local backend's private socket.

PostgreSQL gets the *same* ``postgresql.conf`` the local backend writes (as
``-c config_file=...``) and the same ``ALTER SYSTEM`` + reload/restart
switching, so a configuration produces the same effective settings under either
backend (a test compares ``pg_settings``). Its ``/dev/log`` is the study's
private rsyslog socket; the remote log host is an rsyslog container on a Docker
network the study creates, addressed from 198.18.0.0/15 like the namespace host.

MariaDB gets the *same* command-line options the local backend builds
(:meth:`~logbench.servers.mariadb.MariaDBServer.command`, ``--no-defaults`` first,
so the image's own option files do not count either) and the same ``SET GLOBAL``
+ restart switching; only the server's private paths differ inside. Its data is
on a named Docker volume (the container's own disk, not a host directory), kept
across the restarts a startup-only setting needs (the command line is fixed when
a container is created, so a restart is a new container on the same volume) and
removed at close. The log directory is bind-mounted at its host path, so the
server reports the same ``slow_query_log_file`` either way and the host counts
the files it writes.
"""

from __future__ import annotations

import re
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from ..errors import ParameterError, ServerStartError
from ..settings import Settings, mariadb_flavor, validate_mariadb, validate_postgres
from . import process
from .mariadb import MariaDBServer, find_mariadbd
from .postgres import SWITCH_FILE, PostgresServer, conf_text, find_bindir
from .syslog import REMOTE_PORT, remote_config

RSYSLOG_IMAGE = "logbench/rsyslog:8"
CONTAINER_UID = 999  # the postgres/mysql user of the official images, and of ours
LABEL = "org.logbench.study"
# The label set-up puts on a server image: the Debian package version it installed (docker/servers.tsv's pin).
SERVER_VERSION_LABEL = "org.logbench.server-version"
SERVERS_MANIFEST = paths.ROOT / "docker" / "servers.tsv"
SETUP_DOCKER = paths.ROOT / "scripts" / "setup_docker.sh"


@dataclass(frozen=True)
class ServerImage:
    """One line of docker/servers.tsv: an image set-up can build, its Debian release and pinned package."""

    kind: str  # postgres | mariadb
    version: str  # the major (PostgreSQL) or series (MariaDB): what a study's ``versions`` names
    suite: str  # the Debian release it is built FROM
    debian_version: str  # the package version installed, exactly ("15.18-0+deb12u1", "1:10.11.19-0+deb12u1")
    default: bool  # built by every set-up; the others on first use

    @property
    def tag(self) -> str:
        return f"logbench/{self.kind}:{self.version}"

    @property
    def release(self) -> str:
        """The server's own version, to the patch level ("15.18", "10.11.19"): the package's upstream part."""
        return re.sub(r"^\d+:", "", self.debian_version).split("-")[0].split("+")[0]


def server_images(kind: str) -> dict[str, ServerImage]:
    """The images of ``kind`` set-up can build, by version, as docker/servers.tsv declares them."""
    out = {}
    for line in SERVERS_MANIFEST.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        k, version, suite, debian_version, default = line.split("\t")
        if k == kind:
            out[version] = ServerImage(k, version, suite, debian_version, default.strip() == "yes")
    return out


# The versions a study's ``versions`` may name, each with the image(s) that run it: only the pinned ones
# set-up builds (an official image's patch level is whatever its tag points at today; one can still be
# run by naming it as ``image``).
PG_IMAGES = {v: (s.tag,) for v, s in server_images("postgres").items()}
MARIADB_IMAGES = {v: (s.tag,) for v, s in server_images("mariadb").items()}


def _docker():
    import docker

    return docker.from_env(timeout=30)


def engine_answers() -> bool:
    """True when a Docker engine responds (what backend='auto' asks)."""
    try:
        return bool(_docker().ping())
    except Exception:  # any failure to reach an engine means 'no engine' here
        return False


def _testcontainers():
    # The reaper (ryuk) image is not available without a registry; our own teardown removes everything.
    from testcontainers.core.config import testcontainers_config

    testcontainers_config.ryuk_disabled = True
    from testcontainers.core.container import DockerContainer

    return DockerContainer


def check_version(kind: str, version: str, parameter: str = "versions") -> ServerImage:
    """The image line for ``version`` of ``kind``; ParameterError naming the allowed ones otherwise."""
    images = server_images(kind)
    if str(version) not in images:
        raise ParameterError(parameter, version, f"a {kind} version set-up builds (docker/servers.tsv): "
                             + ", ".join(repr(v) for v in images))
    return images[str(version)]


def resolve_image(kind: str, version: str = "15", image: str | None = None) -> str:
    """The image to run: the one asked for (present, else pulled), else ours for ``version``, built on first
    use (``build_image``: minutes, said on the progress channel). ParameterError for a version no line of
    docker/servers.tsv declares; ServerStartError when nothing can run."""
    client = _docker()
    if image or kind == "rsyslog":
        name = image or RSYSLOG_IMAGE
        try:
            client.images.get(name)
            return name
        except Exception:
            try:
                client.images.pull(name)
                return name
            except Exception:
                hint = "" if image else "; `bash scripts/setup.sh --docker` builds it"
                raise ServerStartError(f"no {kind} image available (tried {name}: not here, cannot be pulled){hint}"
                                       ) from None
    tag = check_version(kind, version).tag
    try:
        client.images.get(tag)
        return tag
    except Exception:  # not built yet: build it now
        build_image(tag)
        return tag


def build_image(tag: str) -> None:
    """Build ``tag`` (a line of docker/servers.tsv) and its Debian base with set-up's script, telling the
    progress channel each step with its time and the image's size; ServerStartError with the script's
    last lines when it fails."""
    import subprocess

    from .. import progress

    say = progress.Reporter("images")
    t0 = time.monotonic()
    say.say(f"{tag} is not built here: building it (debootstrap of its Debian release and the server's "
            "packages; 1-3 minutes, once: the engine keeps it)")
    tail: list[str] = []
    with say.phase(f"building {tag}", every=30):
        proc = subprocess.Popen(["bash", str(SETUP_DOCKER), "--image", tag], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            line = line.rstrip("\n")
            tail = (tail + [line])[-30:]
            # set-up's own step lines (debootstrap, import, build: each with its time and size)
            if line.startswith("setup_docker: ") and "up to date" not in line:
                say.say(line.removeprefix("setup_docker: "))
        rc = proc.wait()
    say.close()
    if rc != 0:
        raise ServerStartError(f"building {tag} failed (scripts/setup_docker.sh --image {tag}, exit {rc}):\n"
                               + "\n".join(tail))
    say.say(f"{tag} ready after {progress.duration(time.monotonic() - t0)}, {image_size_mb(tag):.0f} MB")


def image_size_mb(name: str) -> float:
    try:
        return _docker().images.get(name).attrs["Size"] / 1e6
    except Exception:  # only a display
        return float("nan")


def image_server_version(name: str) -> str:
    """The Debian package version a server image installed (its set-up label), '' when it has none (an
    official image, or one built before the pins): a record names the patch level without starting it."""
    try:
        return (_docker().images.get(name).labels or {}).get(SERVER_VERSION_LABEL, "")
    except Exception:  # only provenance
        return ""


def image_id(name: str) -> str:
    """The local image's id (sha256:...), so a record names exactly what ran; '' when it cannot be read."""
    try:
        return _docker().images.get(name).id
    except Exception:  # only provenance: a missing id must not stop a study that has already run
        return ""


def leftovers() -> dict[str, list[str]]:
    """Containers and networks a study created that still exist (tests check there are none)."""
    client = _docker()
    return {
        "containers": [c.name for c in client.containers.list(all=True, filters={"label": LABEL})],
        "networks": [n.name for n in client.networks.list(filters={"label": LABEL})],
    }


def leftover_volumes() -> list[str]:
    """Named volumes a study created that still exist (the MariaDB container's data; tests check there are none)."""
    return [v.name for v in _docker().volumes.list(filters={"label": LABEL})]


def _container_pid(container) -> int:
    wrapped = container.get_wrapped_container()
    wrapped.reload()
    return int(wrapped.attrs["State"]["Pid"])


def _alive(host_pid: int) -> bool:
    """The container's main process still runs (read from /proc: no engine call in a polling loop)."""
    import psutil

    try:
        return bool(host_pid) and psutil.Process(host_pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _remove(container) -> None:
    if container is None:
        return
    try:
        container.stop(force=True, delete_volume=True)
    except Exception:  # already gone is fine: teardown must go on to the next resource
        pass


class ContainerLogHost(process.Launched):
    """The remote log host as an rsyslog container on a study-created Docker network.

    Its files are in its owner's (:class:`~logbench.servers.syslog.SyslogPair`'s) work directory,
    so it uses the start template's launch-and-probe half: network and config -> container -> ready
    when a TCP client gets in."""

    what = "the rsyslog container"
    start_timeout = 30.0

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.file = workdir / "remote" / "syslog-remote.log"
        self.address = ""
        self.network = None
        self.container = None
        self._host_pid = 0

    def start(self) -> None:
        import docker

        (self.workdir / "remote").mkdir(exist_ok=True)
        (self.workdir / "remote-conf").mkdir(exist_ok=True)
        self.tag = uuid.uuid4().hex[:8]
        # A /24 of the benchmarking range per study; 198.19.0.0/16 keeps clear of the namespace hosts.
        subnet = f"198.19.{int(self.tag[:4], 16) % 256}.0/24"
        ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=subnet)])
        self.network = _docker().networks.create(f"logbench-{self.tag}", driver="bridge", ipam=ipam,
                                                 labels={LABEL: self.tag})
        (self.workdir / "remote-conf" / "rsyslog.conf").write_text(
            remote_config("0.0.0.0", "/var/log/remote/syslog-remote.log", "/var/spool/rsyslog"))
        self._launch_ready()

    def _launch(self) -> None:
        self.container = (
            _testcontainers()(resolve_image("rsyslog"))
            .with_name(f"logbench-rsyslog-{self.tag}")
            .with_volume_mapping(str(self.workdir / "remote"), "/var/log/remote", "rw")
            .with_volume_mapping(str(self.workdir / "remote-conf" / "rsyslog.conf"),
                                 "/etc/rsyslog-logbench/rsyslog.conf", "ro")
            .with_kwargs(labels={LABEL: self.tag}, network=self.network.name)
        )
        self.container.start()
        wrapped = self.container.get_wrapped_container()
        wrapped.reload()
        self._host_pid = int(wrapped.attrs["State"]["Pid"])
        self.address = wrapped.attrs["NetworkSettings"]["Networks"][self.network.name]["IPAddress"]

    def _probe(self) -> bool:
        try:
            with socket.create_connection((self.address, REMOTE_PORT), timeout=1):
                return True
        except OSError:
            return False

    def running(self) -> bool:
        return self.container is not None and _alive(self._host_pid)

    def _log_tail(self) -> str:
        return _logs_of(self.container)

    def _stop_proc(self) -> None:
        _remove(self.container)
        self.container = None
        self._host_pid = 0

    def cpu_seconds(self) -> float:
        return process.tree_cpu_seconds(self._host_pid) if self.container else 0.0

    def close(self) -> None:
        self._stop_proc()
        if self.network is not None:
            try:
                self.network.remove()
            finally:
                self.network = None


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
        self.image = resolve_image("postgres", version, image)
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
        return process.RunUser("postgres", CONTAINER_UID, CONTAINER_UID)

    def _configure(self) -> None:
        fixed = {"listen_addresses": "", "port": str(self.port), "unix_socket_directories": self.RUN,
                 "unix_socket_permissions": "0700", "log_directory": "/logbench/log"}
        (self._wd / "conf" / "postgresql.conf").write_text(conf_text({**self.base.as_dict(), **fixed}))

    def _launch(self) -> None:
        tag = uuid.uuid4().hex[:8]
        c = (
            _testcontainers()(self.image)
            .with_name(f"logbench-pg-{tag}")
            .with_env("POSTGRES_HOST_AUTH_METHOD", "trust")
            .with_env("POSTGRES_INITDB_ARGS", "-E UTF8 --locale=C")  # as the local backend's initdb
            .with_volume_mapping(str(self.socket_dir), self.RUN, "rw")
            .with_volume_mapping(str(self.log_dir), "/logbench/log", "rw")
            .with_volume_mapping(str(self._wd / "conf"), "/logbench/conf", "ro")
            .with_command("postgres -c config_file=/logbench/conf/postgresql.conf "
                          f"-c hba_file={self.DATA}/pg_hba.conf -c ident_file={self.DATA}/pg_ident.conf")
            .with_kwargs(labels={LABEL: tag})
        )
        if self.syslog_socket is not None:
            c = c.with_volume_mapping(str(self.syslog_socket), "/dev/log", "rw")
        self.container = c  # whatever happens from here (an interrupt too), close() removes it
        try:
            c.start()
            self._host_pid = _container_pid(c)
        except Exception as e:
            raise ServerStartError(f"the {self.image} container did not start ({e}); its log:\n{_logs_of(c)}") from e

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
        return self.container is not None and _alive(self._host_pid)

    def _log_tail(self) -> str:
        text = _logs_of(self.container)
        collector = sorted(self.log_dir.glob("*.log"))
        if collector:
            text += f"\n--- {collector[-1].name}\n" + process.tail(collector[-1])
        return text

    def _stop_proc(self) -> None:
        _remove(self.container)
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
        self._host_pid = _container_pid(self.container)
        self._wait_ready()

    def close(self) -> None:
        try:
            self._stop_proc()
        finally:
            self._remove_workdir()


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
        self.image = resolve_image("mariadb", version, image)
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
        return process.RunUser("mysql", CONTAINER_UID, CONTAINER_UID)

    def _configure(self) -> None:
        self.tag = uuid.uuid4().hex[:8]
        self.volume = _docker().volumes.create(name=f"logbench-mariadb-{self.tag}", labels={LABEL: self.tag})
        self._init_datadir()

    def _container(self, command: list[str], name: str):
        DockerContainer = _testcontainers()
        return (
            DockerContainer(self.image)
            .with_name(name)
            .with_volume_mapping(self.volume.name, self.DATA, "rw")
            .with_command(command)
            # No network: the server listens on its socket only, nothing is published.
            .with_kwargs(labels={LABEL: self.tag}, network_mode="none")
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
        try:
            c.start()
            self._host_pid = _container_pid(c)
        except Exception as e:
            raise ServerStartError(f"the {self.image} container did not start ({e}); its log:\n{_logs_of(c)}") from e
        wrapped = c.get_wrapped_container()
        # Both streams in time order (testcontainers' log wait searches each stream on its own).
        if not process.wait_until(lambda: bool(self.INIT_DONE.search(wrapped.logs())), timeout=self.start_timeout,
                                  interval=0.2, alive=self.running):
            raise ServerStartError(f"the {self.image} container did not initialise its data directory within "
                                   f"{self.start_timeout:.0f} s; its log:\n{_logs_of(c)}")
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
        try:
            c.start()
            self._host_pid = _container_pid(c)
        except Exception as e:
            raise ServerStartError(f"the {self.image} container did not start ({e}); its log:\n{_logs_of(c)}") from e

    def _log_tail(self) -> str:
        return _logs_of(self.container)

    def _stop_proc(self) -> None:
        """A clean shutdown (SIGTERM, as the local backend's), then the container goes; the volume stays."""
        self._drop_admin()
        if self.container is None:
            return
        try:
            self.container.get_wrapped_container().stop(timeout=int(self.stop_timeout))
        except Exception:  # already gone: removing it below is all that is left
            pass
        _remove(self.container)
        self.container = None
        self._host_pid = 0

    def close(self) -> None:
        self._drop_admin()
        try:
            _remove(self.container)  # the data goes too: no clean shutdown needed
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
        return self.container is not None and _alive(self._host_pid)

    def exec_sql(self, sql: str) -> str:
        """Run ``sql`` with the image's own ``mariadb`` client inside the container (a check from inside)."""
        client = "mariadb" if self.flavor == "mariadb" else "mysql"
        r = self.container.exec([client, "-uroot", f"--socket={self.RUN}/mysqld.sock", "-N", "-B", "-e", sql])
        if r.exit_code != 0:
            raise ServerStartError(f"`{client} -e {sql!r}` in the container failed ({r.exit_code}): "
                                   f"{r.output.decode(errors='replace')}")
        return r.output.decode()


def _logs_of(container, lines: int = 30) -> str:
    try:
        return container.get_wrapped_container().logs(tail=lines).decode(errors="replace")
    except Exception as e:  # no container (create failed) or already gone
        return f"(no container log: {e})"
