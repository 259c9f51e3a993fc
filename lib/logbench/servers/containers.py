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

This module keeps the engine and the images (issue 24: it had grown to 630 lines); the servers are modules of
their own, :mod:`.container_postgres`, :mod:`.container_mariadb` and :mod:`.container_syslog`, which import this
one (so it names none of them: the package keeps no import circle).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from ..base import paths
from ..base.errors import ParameterError, ServerStartError

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


# Our server images found matching their definition under docker/ in this process: a study starts many
# containers, and set-up's check is worth doing once for each.
_current: set[str] = set()


def resolve_image(kind: str, version: str = "15", image: str | None = None) -> str:
    """The image to run: the one asked for (present, else pulled), else ours for ``version``, built on first
    use, and rebuilt on first use when it is older than its definition under docker/ (``build_image``:
    minutes, said on the progress channel). ParameterError for a version no line of docker/servers.tsv
    declares; ServerStartError when nothing can run."""
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
    if tag in _current:
        return tag
    try:
        client.images.get(tag)
    except Exception:  # not built yet: build it now
        build_image(tag)
    else:
        stale = stale_reason(tag)
        if stale:
            build_image(tag, f"{tag} is older than its definition under docker/ ({stale}): rebuilding it "
                        "(the server's packages; under a minute, once)")
    _current.add(tag)
    return tag


def stale_reason(tag: str) -> str:
    """'' when ``tag`` and its Debian base match their definitions under docker/, else set-up's lines saying
    what is stale or missing: set-up's own check (``--check --image``), so the hash is computed in one place."""
    import subprocess

    r = subprocess.run(["bash", str(SETUP_DOCKER), "--check", "--image", tag], capture_output=True, text=True,
                       timeout=120)
    if r.returncode == 0:
        return ""
    said = [line.removeprefix("setup_docker: ") for line in r.stdout.splitlines()
            if " is stale " in line or line.endswith(" is missing")]
    return "; ".join(said) or (r.stdout + r.stderr).strip()[-500:]


def build_image(tag: str, why: str = "") -> None:
    """Build ``tag`` (a line of docker/servers.tsv) and its Debian base with set-up's script, telling the
    progress channel why (``why``; by default: it is not built here), then each step with its time and
    the image's size; ServerStartError with the script's last lines when it fails."""
    import subprocess

    from ..base import progress

    say = progress.Reporter("images")
    t0 = time.monotonic()
    say.say(why or f"{tag} is not built here: building it (debootstrap of its Debian release and the server's "
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


def started(container, image: str) -> int:
    """Start a server's ``container``; the host pid of its main process. ServerStartError with the container's log
    when it does not start (one place for the three launches of the PostgreSQL and MariaDB servers)."""
    try:
        container.start()
        return _container_pid(container)
    except Exception as e:
        raise ServerStartError(f"the {image} container did not start ({e}); its log:\n{_logs_of(container)}") from e


def _remove(container) -> None:
    if container is None:
        return
    try:
        container.stop(force=True, delete_volume=True)
    except Exception:  # already gone is fine: teardown must go on to the next resource
        pass


def _logs_of(container, lines: int = 30) -> str:
    try:
        return container.get_wrapped_container().logs(tail=lines).decode(errors="replace")
    except Exception as e:  # no container (create failed) or already gone
        return f"(no container log: {e})"
