"""A declared :class:`~logbench.workloads.workload.Import` measured: every run starts a fresh local server at its
configuration's settings (initdb, start, import, stop), then ``pgbench -i`` one step at a time, so each step's
seconds, and its WAL where the load counts it (:mod:`.wal`), are its own (study 07's import phase)."""

from __future__ import annotations

import contextlib
import shutil
import time

from ....base import cleanup, paths
from ....base.settings import Configuration
from ....servers import postgres as pgserver
from ....workloads.pgbench import Pgbench
from ....workloads.workload import Import
from ...bench import Bench
from ...design import PlannedRun
from ...runner import Measurement
from ..backend import filesystem_of
from . import wal
from .load import Load
from .study import PgStudy


def data_bytes(server: pgserver.PostgresServer) -> int:
    """The bytes pgbench's tables hold (their heap, no index)."""
    with server.connect() as c:
        return int(c.execute("SELECT sum(pg_table_size(c.oid)) FROM pg_class c WHERE relname LIKE 'pgbench_%' "
                             "AND relkind = 'r'").fetchone()[0] or 0)


def import_steps(server: pgserver.PostgresServer, load: Import, count_wal: bool = True) -> dict[str, object]:
    """pgbench -i's default steps one at a time on ``server``: per step its seconds (and WAL), the loaded bytes;
    with WAL counted, the import's total, the position it ends at and whether the skip path was taken."""
    pgbench = Pgbench(server.binary("pgbench"), server.conninfo)
    out: dict[str, object] = {}
    first = before = wal.counters(server) if count_wal else None
    seconds = 0.0
    for step, letters in load.steps():
        s = pgbench.initialise(load.scale, fillfactor=load.fillfactor, steps=letters)
        seconds += s
        out[f"{step}_seconds"] = s
        if count_wal:
            after = wal.counters(server)
            out.update({f"{step}_{k}": v for k, v in after.minus(before).items()})
            before = after
        if step == "gen":
            out["data_bytes"] = data_bytes(server)
    if count_wal:
        out.update(before.minus(first))
        # The position itself, what pg_current_wal_lsn() shows after initdb and the import: post 004 read "how much
        # xlog we have written" "after running initdb and pgbench", which may be this rather than the difference.
        out["wal_position_end"] = before.lsn
    out["import_s"] = seconds
    if count_wal:
        out["wal_skipped"] = wal.skipped(out["gen_wal_lsn_bytes"], out["data_bytes"])
    return out


class ImportBench(Bench):
    """The runner's bench for a declared Import: nothing runs between the runs, each run's server is its own."""

    engine = "postgresql"
    backend = "local"
    query_mode = Import.protocol

    def __init__(self, study: PgStudy, load: Load, server_version: str):
        if not isinstance(load.workload, Import):
            raise TypeError(f"an ImportBench runs an Import, not {load.workload!r}")
        self.study, self.load, self.server_version = study, load, server_version
        self.workload = load.workload.label
        self.scale = load.workload.scale
        self.switches: list[tuple[str, float]] = []
        self.configuration: Configuration | None = None

    def apply(self, configuration: Configuration) -> pgserver.Switch:
        self.configuration = configuration
        return pgserver.Switch("fresh", 0.0)  # the run itself starts its own server

    def warm(self, run: PlannedRun, seconds: float) -> None:
        pass  # a fresh instance has nothing to warm: the post imported into a new one

    def measure(self, run: PlannedRun, seconds: float) -> Measurement:
        load: Import = self.load.workload
        settings = self.study.base.merged(self.configuration.settings)
        with contextlib.ExitStack() as stack:
            log_dir = cleanup.private_dir("logbench-log-", paths.scratch_root())
            stack.callback(shutil.rmtree, log_dir, True)
            server = stack.enter_context(pgserver.LocalPostgres(settings, log_dir=log_dir, bindir=self.study.pg_bindir))
            t0 = time.perf_counter()
            r = import_steps(server, load, self.load.wal)
            wall = time.perf_counter() - t0
        nan = float("nan")
        # "transactions" of an import are the rows loaded, its "tps" rows per second of import.
        return Measurement(transactions=load.rows, failed=0, tps=load.rows / r["import_s"], latency_mean_ms=nan,
                           latency_stddev_ms=nan, latency_p50_ms=nan, latency_p95_ms=nan, latency_p99_ms=nan,
                           latency_samples=0, wall_s=wall, threads=1,
                           extra={**dict(self.load.tags), "generate": load.generate, "fillfactor": load.fillfactor,
                                  **r})

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
