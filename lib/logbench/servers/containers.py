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
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
import uuid
from pathlib import Path

from .. import paths
from ..errors import ServerStartError
from ..settings import Settings, validate_postgres
from . import process
from .postgres import PostgresServer, Switch, conf_text, find_bindir  # noqa: F401  (Switch re-exported)
from .syslog import REMOTE_PORT, remote_config

# Official image first (where a registry or a local copy has it), then the one set-up builds here.
PG_IMAGES = {v: (f"postgres:{v}", f"logbench/postgres:{v}") for v in ("13", "14", "15", "16", "17")}
RSYSLOG_IMAGE = "logbench/rsyslog:8"
CONTAINER_UID = 999  # the postgres/mysql user of the official images, and of ours
LABEL = "org.logbench.study"


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


def _log_message(message: str):
    from testcontainers.core.wait_strategies import LogMessageWaitStrategy

    return LogMessageWaitStrategy(message)


def resolve_image(kind: str, version: str = "15", image: str | None = None) -> str:
    """The image to run: the one asked for, else the official one if present or pullable, else ours."""
    client = _docker()
    candidates = [image] if image else list(PG_IMAGES[version]) if kind == "postgres" else [RSYSLOG_IMAGE]
    for name in candidates:
        try:
            client.images.get(name)
            return name
        except Exception:
            try:
                client.images.pull(name)
                return name
            except Exception:
                continue
    raise ServerStartError(
        f"no {kind} image available (tried {', '.join(candidates)}); `bash scripts/setup.sh --docker` builds "
        "the local ones"
    )


def leftovers() -> dict[str, list[str]]:
    """Containers and networks a study created that still exist (tests check there are none)."""
    client = _docker()
    return {
        "containers": [c.name for c in client.containers.list(all=True, filters={"label": LABEL})],
        "networks": [n.name for n in client.networks.list(filters={"label": LABEL})],
    }


def _container_pid(container) -> int:
    wrapped = container.get_wrapped_container()
    wrapped.reload()
    return int(wrapped.attrs["State"]["Pid"])


def _remove(container) -> None:
    if container is None:
        return
    try:
        container.stop(force=True, delete_volume=True)
    except Exception:  # already gone is fine: teardown must go on to the next resource
        pass


class ContainerLogHost:
    """The remote log host as an rsyslog container on a study-created Docker network."""

    def __init__(self, workdir: Path, rate_limit: bool):
        self.workdir, self.rate_limit = workdir, rate_limit
        self.file = workdir / "remote" / "syslog-remote.log"
        self.address = ""
        self.network = None
        self.container = None

    def start(self) -> None:
        import docker

        (self.workdir / "remote").mkdir(exist_ok=True)
        (self.workdir / "remote-conf").mkdir(exist_ok=True)
        tag = uuid.uuid4().hex[:8]
        # A /24 of the benchmarking range per study; 198.19.0.0/16 keeps clear of the namespace hosts.
        subnet = f"198.19.{int(tag[:4], 16) % 256}.0/24"
        ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=subnet)])
        self.network = _docker().networks.create(f"logbench-{tag}", driver="bridge", ipam=ipam, labels={LABEL: tag})
        conf = self.workdir / "remote-conf" / "rsyslog.conf"
        conf.write_text(remote_config("0.0.0.0", "/var/log/remote/syslog-remote.log", "/var/spool/rsyslog", self.rate_limit))
        DockerContainer = _testcontainers()
        self.container = (
            DockerContainer(resolve_image("rsyslog"))
            .with_name(f"logbench-rsyslog-{tag}")
            .with_volume_mapping(str(self.workdir / "remote"), "/var/log/remote", "rw")
            .with_volume_mapping(str(conf), "/etc/rsyslog-logbench/rsyslog.conf", "ro")
            .with_kwargs(labels={LABEL: tag}, network=self.network.name)
        )
        self.container.start()
        wrapped = self.container.get_wrapped_container()
        wrapped.reload()
        self.address = wrapped.attrs["NetworkSettings"]["Networks"][self.network.name]["IPAddress"]

        def ready() -> bool:
            try:
                with socket.create_connection((self.address, REMOTE_PORT), timeout=1):
                    return True
            except OSError:
                return False

        if not process.wait_until(ready, timeout=30):
            raise ServerStartError(f"the rsyslog container did not listen on {self.address}:{REMOTE_PORT}:\n"
                                   f"{wrapped.logs(tail=30).decode(errors='replace')}")

    def cpu_seconds(self) -> float:
        return process.tree_cpu_seconds(_container_pid(self.container)) if self.container else 0.0

    def close(self) -> None:
        _remove(self.container)
        self.container = None
        if self.network is not None:
            try:
                self.network.remove()
            finally:
                self.network = None


class ContainerPostgres(PostgresServer):
    """PostgreSQL in a container, reached through a bind-mounted unix socket; a context manager."""

    backend = "container"
    DATA = "/var/lib/postgresql/data"

    def __init__(self, base: Settings, *, log_dir: Path, image: str | None = None, version: str = "15",
                 syslog_socket: Path | None = None, start_timeout: float = 120.0):
        self.bindir = find_bindir(None)  # client tools (pgbench) on this host
        validate_postgres(base, self.bindir / "postgres")
        self.base, self.log_dir, self.syslog_socket = base, Path(log_dir), syslog_socket
        self.image = resolve_image("postgres", version, image)
        self.start_timeout = start_timeout
        self.workdir: Path | None = None
        self.container = None
        self.applied = Settings.of("postgresql")
        self.port = 5432

    @property
    def auto_conf(self) -> str:
        return f"{self.DATA}/postgresql.auto.conf"

    @property
    def socket_dir(self) -> Path:
        return self.workdir / "sock"

    @property
    def conninfo(self) -> dict[str, object]:
        return {"host": str(self.socket_dir), "port": self.port, "user": "postgres", "dbname": "postgres"}

    def __enter__(self) -> "ContainerPostgres":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="logbench-pg-", dir=paths.scratch_root()))
        (self.workdir / "sock").mkdir()
        (self.workdir / "conf").mkdir()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if process.is_root():
            os.chown(self.log_dir, CONTAINER_UID, CONTAINER_UID)
        else:
            self.log_dir.chmod(0o777)
        fixed = {"listen_addresses": "", "port": str(self.port), "unix_socket_directories": "/var/run/postgresql",
                 "unix_socket_permissions": "0700", "log_directory": "/logbench/log"}
        (self.workdir / "conf" / "postgresql.conf").write_text(conf_text({**self.base.as_dict(), **fixed}))
        tag = uuid.uuid4().hex[:8]
        DockerContainer = _testcontainers()
        c = (
            DockerContainer(self.image)
            .with_name(f"logbench-pg-{tag}")
            .with_env("POSTGRES_HOST_AUTH_METHOD", "trust")
            .with_env("POSTGRES_INITDB_ARGS", "-E UTF8 --locale=C")  # as the local backend's initdb
            .with_volume_mapping(str(self.socket_dir), "/var/run/postgresql", "rw")
            .with_volume_mapping(str(self.log_dir), "/logbench/log", "rw")
            .with_volume_mapping(str(self.workdir / "conf"), "/logbench/conf", "ro")
            .with_command("postgres -c config_file=/logbench/conf/postgresql.conf "
                          f"-c hba_file={self.DATA}/pg_hba.conf -c ident_file={self.DATA}/pg_ident.conf")
            .with_kwargs(labels={LABEL: tag})
            # The entrypoint's first start runs a temporary server for initialisation; wait until it is gone.
            .waiting_for(_log_message("PostgreSQL init process complete")
                         .with_startup_timeout(int(self.start_timeout)))
        )
        if self.syslog_socket is not None:
            c = c.with_volume_mapping(str(self.syslog_socket), "/dev/log", "rw")
        self.container = c
        try:
            c.start()
        except Exception as e:
            raise ServerStartError(f"PostgreSQL container did not initialise ({e}); its log:\n{self._log_tail()}") from e
        self._wait_ready()

    def _wait_ready(self) -> None:
        if not process.wait_until(self._probe, timeout=self.start_timeout):
            raise ServerStartError(f"PostgreSQL container did not accept connections; its log:\n{self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            text = self.container.get_wrapped_container().logs(tail=30).decode(errors="replace")
        except Exception as e:
            text = f"(no container log: {e})"
        collector = sorted(self.log_dir.glob("*.log"))
        if collector:
            text += f"\n--- {collector[-1].name}\n" + process.tail(collector[-1])
        return text

    @property
    def pid(self) -> int:
        return _container_pid(self.container)

    def restart(self) -> None:
        self.container.get_wrapped_container().restart(timeout=30)
        time.sleep(0.2)
        self._wait_ready()

    def close(self) -> None:
        try:
            _remove(self.container)
            self.container = None
        finally:
            if self.workdir is not None:
                shutil.rmtree(self.workdir, ignore_errors=True)
                self.workdir = None
