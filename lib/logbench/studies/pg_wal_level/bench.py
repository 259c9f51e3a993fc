"""Study 07's bench, PostgreSQL WAL volume: what each wal_level requires, WAL counters, an import on a fresh
instance, OLTP by count.

WAL is measured two ways on every run: the LSN difference (every byte inserted, by any process) and the
difference of ``pg_stat_wal`` (records, full-page images, bytes). Counters are read only after every client
backend of the run has exited: a backend flushes its WAL statistics on exit, *after* it has left
``pg_stat_activity``, so only its process being gone says the flush is done.

The import runs ``pgbench -i`` one initialisation step at a time (``-I dt``, ``-I g`` or ``G``, ``-I v``,
``-I p``) on a server started fresh for the run, so each step's WAL is its own. Whether the WAL-skip path
was taken is read from the data: the generation step wrote less WAL than a tenth of the bytes it loaded.
(Since PostgreSQL 13, under ``wal_level = minimal`` a relation created or truncated in the same transaction is
not WAL-logged but synced at commit — or, below ``wal_skip_threshold``, logged whole at commit.)
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ...base import cleanup, environment, params, paths
from ...measure.bench import Bench
from ...measure.benches.backend import filesystem_of
from ...measure.benches.postgres import PgStudy
from ...base.errors import ToolError
from ...measure.runner import Measurement
from ...servers import postgres as pgserver
from ...servers import process
from ...base.settings import Configuration, Settings
from ...workloads.pgbench import parse_output

# What each level requires (post 004's archive / hot_standby are replica since PostgreSQL 9.6):
# minimal refuses to start with WAL senders or archiving configured; archiving is off for every level in the
# base (WAL_BASE: a postmaster setting left at its value is never re-read on reload, so it cannot be a
# configuration's own), max_wal_senders = 0 is minimal's.
WAL_LEVELS: dict[str, dict[str, object]] = {
    "minimal": {"wal_level": "minimal", "max_wal_senders": 0},
    "replica": {"wal_level": "replica"},
    "logical": {"wal_level": "logical"},
}
# pgbench -i's default steps, measured one at a time: drop+create tables, generate data, vacuum, primary keys.
GENERATE = ("g", "G")  # client-side COPY (pgbench's default) or server-side INSERT ... SELECT generate_series
STEPS = ("dt", "gen", "v", "p")
# Base settings for WAL measurements: no checkpoint inside a measured window (a checkpoint moves the full-page
# images to whichever run follows it), no autovacuum (its WAL would land on whichever run it overlapped).
WAL_BASE = {"max_wal_size": "8GB", "checkpoint_timeout": "1h", "autovacuum": False, "archive_mode": False}
SKIP_FRACTION = 0.1  # generation WAL below this fraction of the loaded bytes: the skip path was taken
ROWS_PER_SCALE = 100_000


def level_settings(names: tuple[str, ...]) -> dict[str, tuple[dict, tuple]]:
    """name -> (settings over the base, no sinks), as :func:`benches.postgres.configurations` takes them."""
    return {n: (dict(WAL_LEVELS[n]), ()) for n in names}


def lsn_bytes(lsn: str) -> int:
    """A WAL position ('16/B374D848') as a byte offset."""
    hi, lo = lsn.split("/")
    return (int(hi, 16) << 32) + int(lo, 16)


@dataclass(frozen=True)
class WalCounters:
    lsn: int
    records: int
    fpi: int
    bytes: int

    def minus(self, before: "WalCounters") -> dict[str, int]:
        return {"wal_lsn_bytes": self.lsn - before.lsn, "wal_records": self.records - before.records,
                "wal_fpi": self.fpi - before.fpi, "wal_bytes": self.bytes - before.bytes}


def wal_counters(server: pgserver.PostgresServer) -> WalCounters:
    """The WAL position and ``pg_stat_wal`` after every other client backend has exited (see the module)."""
    process.children_settled(server.pid, lambda p: "[local]" in " ".join(p.cmdline()), timeout=30.0)
    with server.connect() as c:
        lsn, rec, fpi, nbytes = c.execute(
            "SELECT pg_current_wal_lsn()::text, wal_records, wal_fpi, wal_bytes FROM pg_stat_wal").fetchone()
    return WalCounters(lsn_bytes(lsn), int(rec), int(fpi), int(nbytes))


def pgbench_env(server: pgserver.PostgresServer) -> dict[str, str]:
    ci = server.conninfo
    return {"PGHOST": str(ci["host"]), "PGPORT": str(ci["port"]), "PGUSER": str(ci["user"]),
            "PGDATABASE": str(ci["dbname"]), "PATH": "/usr/bin:/bin"}


def _pgbench(server: pgserver.PostgresServer, args: list[str], timeout: float) -> tuple[str, float]:
    argv = [str(server.binary("pgbench")), *args]
    t0 = time.perf_counter()
    r = subprocess.run(argv, env=pgbench_env(server), capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise ToolError(f"{' '.join(argv[1:])} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return r.stdout + r.stderr, time.perf_counter() - t0


def initialise(server: pgserver.PostgresServer, scale: int, fillfactor: int, steps: str = "dtgvp") -> float:
    """``pgbench -i -F fillfactor -s scale -I steps``; seconds."""
    return _pgbench(server, ["-i", "-q", "-I", steps, "-F", str(fillfactor), "-s", str(scale)], 3600)[1]


def data_bytes(server: pgserver.PostgresServer) -> int:
    with server.connect() as c:
        return int(c.execute("SELECT sum(pg_table_size(c.oid)) FROM pg_class c WHERE relname LIKE 'pgbench_%' "
                             "AND relkind = 'r'").fetchone()[0] or 0)


def import_steps(server: pgserver.PostgresServer, scale: int, fillfactor: int, generate: str) -> dict[str, object]:
    """pgbench -i's default steps one at a time; per step its seconds and WAL, the loaded bytes, the skip path."""
    params.choice("generate", generate, GENERATE)
    out: dict[str, object] = {}
    first = before = wal_counters(server)
    seconds = 0.0
    for step, letters in zip(STEPS, ("dt", generate, "v", "p")):
        s = initialise(server, scale, fillfactor, letters)
        after = wal_counters(server)
        seconds += s
        out[f"{step}_seconds"] = s
        out.update({f"{step}_{k}": v for k, v in after.minus(before).items()})
        if step == "gen":
            out["data_bytes"] = data_bytes(server)
        before = after
    out.update(after.minus(first))
    # The position itself, what pg_current_wal_lsn() shows after initdb and the import: the post read "how much
    # xlog we have written" "after running initdb and pgbench", which may be this rather than the difference.
    out["wal_position_end"] = after.lsn
    out["import_s"] = seconds
    out["wal_skipped"] = bool(out["gen_wal_lsn_bytes"] < SKIP_FRACTION * out["data_bytes"])
    return out


def tpcb_argv(clients: int, per_client: int) -> list[str]:
    """pgbench's default (TPC-B-like) script, a fixed number of transactions per client; -n: no vacuum first."""
    return ["-n", "-M", "simple", "-c", str(clients), "-j", str(clients), "-t", str(per_client)]


@dataclass(frozen=True)
class _Switch:
    kind: str
    seconds: float


class ImportBench(Bench):
    """The runner's bench for imports: every run starts a fresh server at its level (initdb, start, import, stop)."""

    engine = "postgresql"
    backend = "local"
    workload = "pgbench -i (step by step)"
    query_mode = "simple"

    def __init__(self, study: PgStudy, generate: str, fillfactor: int, server_version: str, scale: int):
        self.study, self.generate, self.fillfactor = study, generate, fillfactor
        self.scale, self.server_version = scale, server_version
        self.switches: list[tuple[str, float]] = []

    def apply(self, configuration: Configuration) -> _Switch:
        self.configuration = configuration
        return _Switch("fresh", 0.0)  # the run itself starts its own server

    def warm(self, run, seconds: float) -> None:
        pass  # a fresh instance has nothing to warm: the post imported into a new one

    def measure(self, run, seconds: float) -> Measurement:
        settings = self.study.base.merged(self.configuration.settings)
        with contextlib.ExitStack() as stack:
            log_dir = cleanup.private_dir("logbench-log-", paths.scratch_root())
            stack.callback(shutil.rmtree, log_dir, True)
            server = stack.enter_context(pgserver.LocalPostgres(settings, log_dir=log_dir, bindir=self.study.pg_bindir))
            t0 = time.perf_counter()
            r = import_steps(server, self.scale, self.fillfactor, self.generate)
            wall = time.perf_counter() - t0
        rows = self.scale * ROWS_PER_SCALE
        nan = float("nan")
        # "transactions" of an import are the rows loaded, its "tps" rows per second of import.
        return Measurement(transactions=rows, failed=0, tps=rows / r["import_s"], latency_mean_ms=nan,
                           latency_stddev_ms=nan, latency_p50_ms=nan, latency_p95_ms=nan, latency_p99_ms=nan,
                           latency_samples=0, wall_s=wall, threads=1,
                           extra={"phase": "import", "generate": self.generate, "fillfactor": self.fillfactor, **r})

    def sinks(self, configuration: Configuration) -> list:
        return []

    def expected_records(self, configuration, run, m) -> int:
        return 0

    def server_cpu(self) -> float:
        return 0.0

    def logger_cpu(self) -> float:
        return 0.0

    def effective_settings(self, configuration: Configuration) -> dict:
        return self.study.base.merged(configuration.settings).as_dict()

    def log_dir_fs(self) -> str:
        return filesystem_of(paths.scratch_root())


class OltpBench(ImportBench):
    """The runner's bench for OLTP: one server (restarted to change level), a fixed count of TPC-B transactions,
    a checkpoint before each run so every run starts with the same full-page-image debt."""

    workload = "pgbench TPC-B-like (-t)"

    def __init__(self, study: PgStudy, server: pgserver.LocalPostgres, transactions: int, fillfactor: int):
        super().__init__(study, "g", fillfactor, server.version(), study.scale)
        self.server, self.transactions = server, transactions

    def apply(self, configuration: Configuration):
        sw = self.server.apply(configuration.settings)
        if sw.kind != "none":
            self.switches.append((sw.kind, sw.seconds))
        return sw

    def warm(self, run, seconds: float) -> None:
        _pgbench(self.server, ["-n", "-c", str(run.clients), "-j", str(run.clients), "-T", str(max(1, int(seconds)))],
                 seconds + 120)

    def measure(self, run, seconds: float) -> Measurement:
        with self.server.connect() as c:
            c.execute("CHECKPOINT")
        per_client = max(1, self.transactions // run.clients)
        before = wal_counters(self.server)
        out, wall = _pgbench(self.server, tpcb_argv(run.clients, per_client), 3600)
        wal = wal_counters(self.server).minus(before)
        p = parse_output(out)
        nan = float("nan")
        tx = int(p["transactions"])
        per_tx = {f"{k}_per_tx": v / tx for k, v in wal.items()} if tx else {}
        return Measurement(transactions=tx, failed=int(p["failed"]), tps=float(p["tps"]),
                           latency_mean_ms=float(p["latency_avg_ms"]), latency_stddev_ms=nan, latency_p50_ms=nan,
                           latency_p95_ms=nan, latency_p99_ms=nan, latency_samples=0, wall_s=wall,
                           threads=run.clients, extra={"phase": "oltp", **wal, **per_tx})

    def server_cpu(self) -> float:
        return process.tree_cpu_seconds(self.server.pid)

    def server_pid(self) -> int:
        return self.server.pid


def start(study: PgStudy, stack: contextlib.ExitStack, *, transactions: int, fillfactor: int,
          generate: str, import_scale: int) -> tuple[dict[str, object], dict]:
    """The OLTP server (its dataset, ``study.scale``, imported once with -F fillfactor) and both benches, the
    import runs at ``import_scale``; the environment record."""
    log_dir = cleanup.private_dir("logbench-log-", paths.scratch_root())
    stack.callback(shutil.rmtree, log_dir, True)
    server = stack.enter_context(pgserver.LocalPostgres(study.base, log_dir=log_dir, bindir=study.pg_bindir))
    init_s = initialise(server, study.scale, fillfactor)
    oltp = OltpBench(study, server, transactions, fillfactor)
    env = environment.collect(
        server_version=oltp.server_version,
        tools={"pgbench": subprocess.run([str(server.binary("pgbench")), "--version"], capture_output=True,
                                         text=True).stdout.strip(),
               "postgres": environment.tool_version([str(server.binary("postgres")), "--version"])},
        extra={"pgbench_init_s": init_s, "backend": "local", "fillfactor": fillfactor})
    return {"import": ImportBench(study, generate, fillfactor, oltp.server_version, import_scale), "oltp": oltp}, env


def base_settings(shared_buffers: str) -> Settings:
    return Settings.of("postgresql", {**WAL_BASE, "shared_buffers": shared_buffers})
