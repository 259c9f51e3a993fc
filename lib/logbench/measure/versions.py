"""What changes in the log records between the server versions the suite runs (docker/servers.tsv), and how
one version's records are captured from a real server of it (tests/fixtures/versions/,
scripts/capture_version_fixtures.py; tests/test_server_versions.py checks the counts on them and on a fresh
server of each version).

The counts a study checks (expected vs received) read one record per line by its text, so what matters per
version is that each statement still leaves the same lines with the same markers. Captured (PostgreSQL
13.23, 15.18, 17.12; MariaDB 10.5.29, 10.11.19, 11.8.9, Debian's packages):

- PostgreSQL: csvlog has 24 columns in 13 (``backend_type`` came in 13) and 26 in 15 and 17 (``leader_pid``,
  ``query_id`` from 14); jsonlog exists from 15 only, so a version sweep with 'jsonlog' and 13 is refused
  before any server starts. Every statement-logging line (``duration: … statement|parse|bind|execute …``,
  ``statement: …``, bare ``duration: …``) is the same in 13, 15 and 17: the counts need no change.
- MariaDB: one ``# Query_time:`` line per slow-log entry in all three; 10.5 also writes an entry for each
  connection's end (``# administrator command: Quit;``), 10.11 and 11.8 do not
  (:func:`logbench.servers.mariadb.slow_entry`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from ..base import logsinks, paths
from ..base.errors import ParameterError
from ..base.settings import Settings

# The first PostgreSQL major that has log_destination = jsonlog.
JSONLOG_FROM = 15
# csvlog's columns by major (src/backend/utils/error/csvlog.c / elog.c's write_csvlog): 13 added backend_type,
# 14 leader_pid and query_id.
CSVLOG_COLUMNS = {13: 24, 14: 26, 15: 26, 16: 26, 17: 26}

# The statement-logging modes captured per version (the ones the studies count), over the study's base.
PG_MODES = {
    "min_duration_0": {"log_min_duration_statement": 0},
    "log_statement_all": {"log_statement": "all"},
    "log_duration": {"log_duration": True},
}
PG_TRANSACTIONS, PG_CLIENTS = 20, 2  # pgbench -S -t 20 -c 2: 40 transactions per mode and query mode
MARIADB_STATEMENTS = 5


def major(version: str) -> int:
    return int(str(version).split(".")[0])


def pg_destinations(version: str) -> str:
    """Every file destination this major has (the capture writes all of them at once)."""
    return "stderr,csvlog" + (",jsonlog" if major(version) >= JSONLOG_FROM else "")


def pg_has(version: str, destinations: list[str] | tuple[str, ...]) -> bool:
    """Whether this major has every one of these log destinations (jsonlog from 15)."""
    return "jsonlog" not in destinations or major(version) >= JSONLOG_FROM


def check_pg_destinations(version: str, destinations: list[str] | tuple[str, ...]) -> None:
    """ParameterError when a destination does not exist in this major (jsonlog before 15)."""
    if not pg_has(version, destinations):
        raise ParameterError("versions", version, f"a PostgreSQL major that has jsonlog ({JSONLOG_FROM} and later) "
                             "when 'jsonlog' is among the destinations")


def csv_columns(line: bytes) -> int:
    """The columns of one csvlog record on one line (quoted fields may hold commas)."""
    import csv
    import io

    return len(next(csv.reader(io.StringIO(line.decode(errors="replace")))))


def capture_pg(version: str, out: Path, log_root: Path | None = None, modes: tuple[str, ...] = tuple(PG_MODES),
               image: str | None = None) -> dict:
    """Start PostgreSQL ``version`` in its container for seconds, run pgbench -S under each mode of
    :data:`PG_MODES` (``modes`` of them) in both query modes, and write what each file destination received per run to
    ``out/pg<version>_<mode>_<query mode>.<log|csv|json>``; returns what each run was (settings, transactions,
    clients, the server's own version). ``image``: another image of that version than set-up's."""
    from .benches.postgres.destinations import BASE
    from ..servers.container_postgres import ContainerPostgres
    from ..workloads.pgbench import Pgbench

    out.mkdir(parents=True, exist_ok=True)
    log_dir = Path(paths.scratch_root() if log_root is None else log_root) / f"logbench-versions-pg{version}"
    shutil.rmtree(log_dir, ignore_errors=True)
    log_dir.mkdir(parents=True)
    log_dir.chmod(0o777)  # the container's postgres user (uid 999) writes here
    meta = {}
    try:
        base = Settings.of("postgresql", {**BASE, "log_destination": pg_destinations(version)})
        with ContainerPostgres(base, log_dir=log_dir, version=str(version), image=image) as pg:
            server = pg.version()
            pgb = Pgbench(pg.binary("pgbench"), pg.conninfo)
            pgb.initialise(1)
            files = {"log": log_dir / "postgresql.log", "csv": log_dir / "postgresql.csv"}
            if major(version) >= JSONLOG_FROM:
                files["json"] = log_dir / "postgresql.json"
            sinks = [logsinks.FileSink(k, f) for k, f in files.items()]
            for name in modes:
                settings = PG_MODES[name]
                for qm in ("simple", "prepared"):
                    pg.apply(Settings.of("postgresql", settings))
                    offsets = {k: s.mark() for k, s in zip(files, sinks)}
                    argv = [str(pgb.binary), "-n", "-S", "-M", qm, "-c", str(PG_CLIENTS), "-j", str(PG_CLIENTS),
                            "-t", str(PG_TRANSACTIONS)]
                    r = subprocess.run(argv, env=pgb.env, capture_output=True, text=True, check=True)
                    logsinks.wait_quiet(sinks, quiet=0.5)
                    key = f"pg{version}_{name}_{qm}"
                    for k, f in files.items():
                        (out / f"{key}.{k}").write_bytes(f.read_bytes()[offsets[k]:])
                    pg.apply(Settings.of("postgresql", {}))
                    tx = int(next(l for l in r.stdout.splitlines() if "actually processed" in l)
                             .split()[-1].split("/")[0])
                    meta[key] = {"version": str(version), "settings": settings, "query_mode": qm,
                                 "clients": PG_CLIENTS, "transactions": tx, "files": sorted(files),
                                 "command": "pgbench " + " ".join(argv[1:]), "server": server}
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    return meta


def capture_mariadb(version: str, out: Path, log_root: Path | None = None, image: str | None = None) -> dict:
    """Start MariaDB ``version`` in its container for seconds with every statement slow-logged, run
    :data:`MARIADB_STATEMENTS` statements on one connection, and write the slow log's new bytes to
    ``out/mariadb<version>_slow_all.log``; returns what was run (statements, the server's own version)."""
    from ..servers import mariadb as mdb
    from ..servers.container_mariadb import ContainerMariaDB
    from .benches.mariadb import BASE  # study 04's BASE is this very dict

    out.mkdir(parents=True, exist_ok=True)
    log_dir = Path(paths.scratch_root() if log_root is None else log_root) / f"logbench-versions-mariadb{version}"
    shutil.rmtree(log_dir, ignore_errors=True)
    meta = {}
    try:
        start = Settings.of("mariadb", {**BASE, "innodb_buffer_pool_size": "64M", "slow_query_log": True,
                                        "long_query_time": 0})
        with ContainerMariaDB(start, log_dir=log_dir, version=str(version), image=image) as m:
            server = m.version()
            slow = mdb.slow_file_sink(m.slow_log)
            mark = slow.mark()
            c = m.connect(quiet=False)
            with c.cursor() as cur:
                for i in range(MARIADB_STATEMENTS):
                    cur.execute(f"SELECT 'versions', {i}")
            c.close()
            logsinks.wait_quiet([slow], quiet=0.5)
            key = f"mariadb{version}_slow_all"
            (out / f"{key}.log").write_bytes(m.slow_log.read_bytes()[mark:])
            # the connection's own SET NAMES (pymysql's first statement) is one more entry
            meta[key] = {"version": str(version), "statements": MARIADB_STATEMENTS + 1, "connections": 1,
                         "server": server,
                         "settings": {"slow_query_log": True, "long_query_time": 0}}
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    return meta


def write_meta(out: Path, meta: dict) -> None:
    (out / "captured.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
