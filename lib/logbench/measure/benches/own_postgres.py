"""The runner's bench on a user's PostgreSQL (:mod:`logbench.servers.own_postgres`): switches by ALTER SYSTEM +
reload (each switch timed), runs pgbench with the user's scripts (or the built-in one) as the application
``own_postgres.APP``, and counts the records the server's own log file received in each run."""

from __future__ import annotations

from pathlib import Path

from ..design import PlannedRun
from ...base.records import Measurement
from ...servers.own_postgres import ServerLog, ServerLogSink, Switcher
from ...base.settings import Configuration
from ...workloads.pgbench import Pgbench
from ...workloads.user_scripts import Script
from .on_user_server import OnUserServerBench


class OwnPgBench(OnUserServerBench):
    engine = "postgresql"

    def __init__(self, study, switcher: Switcher, pgbench: Pgbench, scripts: tuple[Script, ...], log: ServerLog,
                 server_version: str, postmaster: int | None):
        self.study, self.switcher, self.pgbench, self.scripts, self.log = study, switcher, pgbench, scripts, log
        self.server_version = server_version
        self.postmaster = self.server_process = postmaster
        self.query_mode = study.query_mode
        self.scale = study.scale
        self.workload = ("pgbench " + " ".join(f"-f {Path(s.path).name}@{s.weight}" for s in scripts)
                         + f" -M {study.query_mode}")
        self.switches: list[tuple[str, float]] = []

    def warm(self, run: PlannedRun, seconds: float) -> None:
        self.pgbench.run(run.clients, max(1, int(seconds)), self.query_mode)

    def measure(self, run: PlannedRun, seconds: float) -> Measurement:
        r = self.pgbench.run(run.clients, seconds, self.query_mode)
        per_script = r.per_script or (r.transactions,)
        sizes = [s.statements for s in self.scripts]
        # pgbench's per-script counts can miss transactions its exact total holds (PgbenchResult.per_script_lost):
        # which script each missed one ran is unknown, so each adds the fewest statements a script has (the
        # statements certainly sent; the records due, and so the loss, are then a lower bound), and the most it may
        # have sent beyond that is kept beside: the records of that many statements may arrive on top of those due
        lost = r.per_script_lost
        statements = sum(n * k for n, k in zip(per_script, sizes)) + lost * min(sizes)
        return Measurement(
            transactions=r.transactions, failed=r.failed, tps=r.tps, latency_mean_ms=r.latency_avg_ms,
            latency_stddev_ms=r.latency_stddev_ms, latency_p50_ms=r.latency_p50_ms, latency_p95_ms=r.latency_p95_ms,
            latency_p99_ms=r.latency_p99_ms, latency_samples=r.latency_samples, wall_s=r.wall_seconds,
            threads=run.clients, extra={"command": " ".join(Path(a).name if a.startswith("/") else a
                                                            for a in r.command[1:]),
                                        "statements": statements, "transactions_per_script": list(per_script),
                                        "per_script_lost": lost,
                                        "statements_unattributed": lost * (max(sizes) - min(sizes)),
                                        "initial_connection_ms": r.initial_connection_ms,
                                        "log_read": self.log.how or f"not counted: {self.log.why_not}"})

    def sinks(self, configuration: Configuration) -> list[ServerLogSink]:
        if not self.log.how or not configuration.destinations:
            return []
        return [ServerLogSink(self.study.destination, self.log).counting(configuration.records)]

    def expected_records(self, configuration: Configuration, run: PlannedRun, m: Measurement) -> int:
        return configuration.expected_records(statements=m.extra["statements"], transactions=m.transactions,
                                              connections=run.clients, runs=1)

    def loss_defined(self, configuration: Configuration) -> bool:
        # an arm that logs a subset (a threshold, a sample) has no number due: its records are counted, not checked
        return bool(self.log.how) and any(r.per_statement or r.per_transaction for r in configuration.records)

