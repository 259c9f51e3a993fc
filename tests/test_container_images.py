"""The local images of docker/ work with testcontainers unchanged.

Needs a Docker engine and the images of ``scripts/setup_docker.sh``
(logbench/postgres:15, logbench/mariadb:10.11, logbench/rsyslog:8); skipped with
the reason when either is missing. No registry is reachable, so testcontainers'
reaper (ryuk), whose image would have to be pulled, is disabled here; every test
removes what it created and checks that nothing of it is left (containers,
their anonymous volumes, networks). All traffic stays on this machine: the host's
loopback to the published ports, and a user-created bridge network.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

PG_IMAGE = "logbench/postgres:15"
MARIADB_IMAGE = "logbench/mariadb:10.11"
RSYSLOG_IMAGE = "logbench/rsyslog:8"
IMAGES = (PG_IMAGE, MARIADB_IMAGE, RSYSLOG_IMAGE)
SETUP = "scripts/setup_docker.sh"


def _docker(*args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


def _why_not_runnable() -> str | None:
    if shutil.which("docker") is None:
        return f"no docker CLI on PATH; `sudo {SETUP}` installs Debian's docker.io and builds the images"
    try:
        info = _docker("info", "--format", "{{.ServerVersion}}")
    except subprocess.TimeoutExpired:
        return f"`docker info` did not answer within 20 s; `sudo {SETUP}` starts an engine"
    if info.returncode != 0:
        return f"no Docker engine answers `docker info`; `sudo {SETUP}` starts one and builds the images"
    missing = [i for i in IMAGES if _docker("image", "inspect", i).returncode != 0]
    if missing:
        return f"image(s) {', '.join(missing)} not built; run `sudo {SETUP}`"
    return None


_REASON = _why_not_runnable()
pytestmark = [
    pytest.mark.integration,
    pytest.mark.docker_engine,
    pytest.mark.timeout(180),
    pytest.mark.skipif(_REASON is not None, reason=_REASON or ""),
]


@pytest.fixture(autouse=True)
def no_ryuk(monkeypatch):
    """ryuk's image cannot be pulled here: disable the reaper (env and the already-read config)."""
    from testcontainers.core.config import testcontainers_config

    monkeypatch.setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
    monkeypatch.setattr(testcontainers_config, "ryuk_disabled", True)


class Created:
    """What a test created in the engine, checked to be gone at teardown."""

    def __init__(self):
        import docker

        self.client = docker.from_env()
        self.containers: dict[str, str] = {}  # id -> what
        self.volumes: set[str] = set()
        self.networks: dict[str, str] = {}  # id -> name

    def container(self, tc_container) -> None:
        c = tc_container.get_wrapped_container()
        c.reload()
        self.containers[c.id] = tc_container.image
        for m in c.attrs.get("Mounts", []):
            if m.get("Type") == "volume" and m.get("Name"):
                self.volumes.add(m["Name"])

    def network(self, tc_network) -> None:
        self.networks[tc_network.id] = tc_network.name

    def leftovers(self) -> list[str]:
        import docker.errors

        made = [(self.client.containers, cid, f"container {cid[:12]} ({what})")
                for cid, what in self.containers.items()]
        made += [(self.client.volumes, name, f"volume {name[:12]}") for name in self.volumes]
        made += [(self.client.networks, nid, f"network {name}") for nid, name in self.networks.items()]
        left = []
        for collection, key, label in made:
            try:
                collection.get(key)
                left.append(label)
            except docker.errors.NotFound:
                pass
        return left

    def force_cleanup(self) -> None:
        for cid in self.containers:
            _docker("rm", "-f", "-v", cid)
        for nid in self.networks:
            _docker("network", "rm", nid)
        for name in self.volumes:
            _docker("volume", "rm", "-f", name)


@pytest.fixture
def created():
    c = Created()
    yield c
    left = c.leftovers()
    if left:
        c.force_cleanup()
    c.client.close()
    assert not left, f"the test left behind: {', '.join(left)}"


def _init_dir(path: Path, sql: str) -> Path:
    """A /docker-entrypoint-initdb.d with one .sql and one sourced .sh, readable by the server's uid."""
    path.mkdir(mode=0o755)
    path.chmod(0o755)
    (path / "01-seed.sql").write_text(sql)
    (path / "02-note.sh").write_text('echo "init script sourced"\n')
    for f in path.iterdir():
        f.chmod(0o644)
    return path


def _logs(tc_container) -> str:
    out, err = tc_container.get_logs()
    return out.decode(errors="replace") + err.decode(errors="replace")


def test_postgres_container_takes_official_env_and_server_args(created, tmp_path):
    import psycopg
    from testcontainers.community.postgres import PostgresContainer

    t0 = time.monotonic()
    pg = PostgresContainer(PG_IMAGE, username="bench", password="s3cret'pw", dbname="benchdb", driver=None)
    # arguments only, as with the official image: the entrypoint puts `postgres` in front
    pg.with_command(["-c", "log_min_duration_statement=0", "-c", "log_line_prefix=%m [%p] "])
    init = _init_dir(tmp_path / "init", "CREATE TABLE seeded(x int); INSERT INTO seeded VALUES (7);\n")
    pg.with_volume_mapping(str(init), "/docker-entrypoint-initdb.d", "ro")
    with pg:
        created.container(pg)
        started = time.monotonic() - t0
        host, port = pg.get_container_host_ip(), pg.get_exposed_port(5432)
        with psycopg.connect(host=host, port=port, user="bench", password="s3cret'pw", dbname="benchdb",
                             connect_timeout=10) as conn:
            setting = conn.execute("SHOW log_min_duration_statement").fetchone()[0]
            version = conn.execute("SHOW server_version_num").fetchone()[0]
            listen = conn.execute("SHOW listen_addresses").fetchone()[0]
            me = conn.execute("SELECT current_user, current_database()").fetchone()
            seeded = conn.execute("SELECT x FROM seeded").fetchone()[0]
        logs = _logs(pg)
        # server runs unprivileged, as pid 1 (docker stop reaches it)
        pid1 = pg.exec(["sh", "-c", "cat /proc/1/comm; awk '/^Uid:/ {print $2}' /proc/1/status"])
    print(f"postgres container ready in {started:.1f} s")
    assert setting == "0"
    assert version.startswith("15")
    assert listen == "*"
    assert me == ("bench", "benchdb")
    assert seeded == 7  # the init script ran in POSTGRES_DB
    assert "init script sourced" in logs
    # the official image's sequence: temporary server (socket only), then the real one
    assert logs.count("database system is ready to accept connections") == 2, logs
    assert "PostgreSQL init process complete; ready for start up." in logs
    assert re.search(r"duration: [0-9.]+ ms\s+statement: SHOW log_min_duration_statement", logs), logs
    assert pid1.output.decode().split() == ["postgres", "999"], pid1.output
    assert started < 60


def _mysql_greeting(host: str, port: int) -> str:
    """The server version from the MySQL protocol's initial handshake packet (no driver needed)."""
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection((host, port), timeout=5) as s:
                data = b""
                while len(data) < 5 or len(data) < 4 + int.from_bytes(data[:3], "little"):
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            if len(data) > 5 and data[4] == 10:  # protocol version 10
                return data[5:data.index(b"\0", 5)].decode()
            raise OSError(f"unexpected greeting {data[:40]!r}")
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_mariadb_container_takes_official_env_and_server_args(created, tmp_path):
    from testcontainers.community.mysql import MySqlContainer

    t0 = time.monotonic()
    db = MySqlContainer(MARIADB_IMAGE, username="bench", password="pw'x", root_password="rootpw", dbname="benchdb")
    db.with_command("mariadbd --slow-query-log=1 --long-query-time=0 --slow-query-log-file=/var/lib/mysql/slow.log")
    init = _init_dir(tmp_path / "init", "CREATE TABLE seeded(x int); INSERT INTO seeded VALUES (8);\n")
    db.with_volume_mapping(str(init), "/docker-entrypoint-initdb.d", "ro")
    with db:
        created.container(db)
        started = time.monotonic() - t0
        greeting = _mysql_greeting(db.get_container_host_ip(), db.get_exposed_port(3306))
        # over TCP as the created user, with the mariadb client in the image
        r = db.exec(["mariadb", "-h127.0.0.1", "-P3306", "-ubench", "-ppw'x", "benchdb", "-N", "-B", "-e",
                     "SHOW VARIABLES WHERE Variable_name IN ('slow_query_log','long_query_time','slow_query_log_file');"
                     " SELECT CONCAT('user=', CURRENT_USER(), ' db=', DATABASE());"
                     " SELECT CONCAT('seeded=', x) FROM seeded;"])
        out = r.output.decode()
        root = db.exec(["mariadb", "-h127.0.0.1", "-uroot", "-prootpw", "-N", "-B", "-e", "SELECT 1"])
        slow = db.exec(["sh", "-c", "cat /var/lib/mysql/slow.log"]).output.decode()
        logs = _logs(db)
    print(f"mariadb container ready in {started:.1f} s; greeting {greeting!r}")
    assert r.exit_code == 0, out
    values = dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)
    assert values["slow_query_log"] == "ON"
    assert float(values["long_query_time"]) == 0
    assert values["slow_query_log_file"] == "/var/lib/mysql/slow.log"
    assert "user=bench@% db=benchdb" in out
    assert "seeded=8" in out  # the init script ran (after the root password was set) in MYSQL_DATABASE
    assert "init script sourced" in logs
    assert root.exit_code == 0, root.output
    assert "10.11" in greeting and "MariaDB" in greeting
    assert "SHOW VARIABLES" in slow  # the slow log records our statement
    assert len(re.findall(r": ready for connections", logs)) == 2, logs
    assert started < 60


def test_rsyslog_receives_from_another_container_on_a_docker_network(created, tmp_path):
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network
    from testcontainers.core.wait_strategies import LogMessageWaitStrategy

    out_dir = tmp_path / "syslog"
    out_dir.mkdir()
    tag = f"lbtest{uuid.uuid4().hex[:8]}"
    t0 = time.monotonic()
    with Network() as net:
        created.network(net)
        syslog = (
            DockerContainer(RSYSLOG_IMAGE)
            .with_network(net)
            .with_network_aliases("syslog")
            .with_volume_mapping(str(out_dir), "/var/log/remote", "rw")
            .waiting_for(LogMessageWaitStrategy(r"rsyslogd.*\] start"))
        )
        with syslog:
            created.container(syslog)
            started = time.monotonic() - t0
            # one line over UDP and one over TCP, from another container (util-linux's logger)
            sender = (
                DockerContainer(PG_IMAGE)
                .with_network(net)
                .with_command(["sh", "-c",
                               f"logger -n syslog -P 514 -d -t {tag} 'hello over udp' && "
                               f"logger -n syslog -P 514 -T -t {tag} 'hello over tcp'"])
            )
            sender.start()
            try:
                created.container(sender)
                rc = sender.get_wrapped_container().wait(timeout=30)["StatusCode"]
                sender_logs = _logs(sender)
            finally:
                sender.stop()
            assert rc == 0, sender_logs
            log_file = out_dir / "messages.log"
            deadline = time.monotonic() + 10
            lines: list[str] = []
            while time.monotonic() < deadline:
                if log_file.exists():
                    lines = [ln for ln in log_file.read_text().splitlines() if tag in ln]
                    if len(lines) >= 2:
                        break
                time.sleep(0.1)
    print(f"rsyslog container ready in {started:.1f} s")
    assert any("hello over udp" in ln for ln in lines), lines
    assert any("hello over tcp" in ln for ln in lines), lines
    # only what was sent: rsyslogd's own messages go to its stdout, not to the file
    assert len(log_file.read_text().splitlines()) == 2
    assert started < 60


@pytest.mark.parametrize("image, version", [(PG_IMAGE, "postgres (PostgreSQL) 15."), (MARIADB_IMAGE, "10.11.")])
def test_a_help_option_runs_the_server_without_initialising(image, version):
    """`--version` (options only, as the official images take them) reaches the server untouched: the
    entrypoints' shared part (docker/common/entrypoint.sh) knows it initialises nothing, needs no password."""
    r = _docker("run", "--rm", image, "--version", timeout=60)
    assert r.returncode == 0 and version in r.stdout, r.stdout + r.stderr
    assert "Initializ" not in r.stdout + r.stderr and "not found" not in r.stderr, r.stdout + r.stderr


def test_setup_script_finds_the_images_current():
    """`setup_docker.sh --check` (what a second run does before deciding to build nothing)."""
    script = Path(__file__).resolve().parents[1] / SETUP
    t0 = time.monotonic()
    r = subprocess.run(["bash", str(script), "--check"], capture_output=True, text=True, timeout=60)
    took = time.monotonic() - t0
    assert r.returncode == 0, (
        f"images are older than their definitions under docker/: run `sudo {SETUP}`\n{r.stdout}{r.stderr}")
    for image in ("logbench/debian:bookworm", *IMAGES):
        assert f"{image} is up to date" in r.stdout, r.stdout
    assert took < 30, r.stdout
