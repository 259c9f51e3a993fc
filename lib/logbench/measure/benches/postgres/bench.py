"""One PostgreSQL measurement on a running server: the runner's bench (:class:`PgBench`), with its log sinks,
its switches, pgbench runs and the evidence a run keeps (block reads, memory limit, contention samples).

It runs the load the study declares (:class:`.load.Load`): which pgbench script, timed or counted (the argv is
``workloads.pgbench.Pgbench.command``'s), with WAL counted around it and a checkpoint before it where declared, and
the sessions a configuration declares (``Configuration.sessions``) held open while it measures. A load on a fresh
server per run (an import) is :class:`.imports.ImportBench`'s."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

from ...bench import Bench
from ...design import PlannedRun
from ....base.logsinks import FileSink, wait_quiet
from ...runner import Measurement
from ....base.errors import ToolError
from ....servers import memlimit, process
from ....servers import postgres as pgserver
from ....servers.syslog import SyslogPair
from ....base.settings import Configuration, HeldSessions
from ....workloads import sessions as held
from ....workloads.pgbench import Pgbench
from ..backend import filesystem_of
from . import wal
from .destinations import _MARK, STDERR_DIRECT, STDERR_DIRECT_SINK
from .load import DEFAULT, Load
from .study import PgStudy

class PgBench(Bench):
    """The PostgreSQL half of the runner's loop (see :class:`logbench.measure.runner.Bench`)."""

    engine = "postgresql"
    # pgbench -P interval (s) of measured runs; 0: none. The noise study's per-second series.
    progress = 0

    def __init__(self, study: PgStudy, pg: pgserver.LocalPostgres, pgbench: Pgbench,
                 syslog: SyslogPair | None, log_dir: Path, memory_limit: memlimit.MemoryLimit | None = None,
                 load: Load = DEFAULT):
        self.study, self.pg, self.pgbench, self.syslog, self.log_dir = study, pg, pgbench, syslog, log_dir
        self.memory_limit = memory_limit
        self.load = load
        self.load_workload = load.workload_for(study.query_mode)
        self.workload = self.load_workload.label  # the record's: "pgbench -S" unless the study declares another
        self._configuration: Configuration | None = None
        self.backend = pg.backend
        self.server_version = pg.version()
        self.query_mode = study.query_mode
        self.scale = study.scale
        self.switches: list[tuple[str, float]] = []
        self._sinks = {
            "stderr": FileSink("stderr", log_dir / "postgresql.log"),
            "csvlog": FileSink("csvlog", log_dir / "postgresql.csv"),
            "jsonlog": FileSink("jsonlog", log_dir / "postgresql.json"),
            STDERR_DIRECT_SINK: FileSink(STDERR_DIRECT_SINK, log_dir / STDERR_DIRECT),
        }
        self._profiled: set[tuple[str, int]] = set()
        self._pending_profile: dict[str, object] = {}
        if syslog is not None:
            self._sinks["syslog"] = FileSink("syslog", syslog.files.local)
            if syslog.files.remote is not None:
                self._sinks["remote_syslog"] = FileSink("remote_syslog", syslog.files.remote)

    def apply(self, configuration: Configuration):
        self._configuration = configuration
        sw = self.pg.apply(configuration.settings)
        if sw.kind != "none":
            self.switches.append((sw.kind, sw.seconds))
            if any(_MARK not in r.markers for r in configuration.records):
                # Bare duration lines cannot be told from those of the switch's own queries, which may still be
                # in the collector's pipe: let them land before the run marks its sinks.
                wait_quiet(self.sinks(configuration))
        if sw.kind == "restart" and self.memory_limit is not None:
            # A restarted server is a new process tree: into the cgroup again, from a cold cache again.
            self.memory_limit.add_tree(self.pg.pid)
            memlimit.evict(self.pg.datadir)
        return sw

    def all_sinks(self) -> list[FileSink]:
        """Every sink of the study's configurations, each counting the records of the configurations that write
        to it (the switchback design reads them all by time, after a load that ran every arm)."""
        shapes: dict[str, tuple] = {}
        for c in self.study.configurations:
            for name in c.destinations:
                shapes[name] = tuple(dict.fromkeys((*shapes.get(name, ()), *c.records)))
        return [self._sinks[name].counting(rs) for name, rs in shapes.items()]

    def restart_with(self, configuration: Configuration) -> None:
        """A freshly started server running ``configuration`` (an independent load of the switchback design)."""
        from ..pg_switchback import Control

        with Control(self.pg) as control:
            control.apply(configuration.settings, requested=0.0)
        self.pg.restart()
        self.pg.applied = configuration.settings
        if self.memory_limit is not None:
            self.memory_limit.add_tree(self.pg.pid)
            memlimit.evict(self.pg.datadir)

    def warm(self, run: PlannedRun, seconds: float) -> None:
        cell = (run.configuration, run.clients)
        if self.study.perf_profile and not run.warmup and cell not in self._profiled:
            # The cell's first measured run: its warm-up is profiled, so the profiler never slows a measured run.
            from ... import contention

            self._profiled.add(cell)
            data = Path(self.study.output_dir) / "profiles" / f"run{run.position:04d}.perf.data"
            with contention.PerfRecord(data):  # at least 2 s: a profile of a few hundred samples says little
                self.pgbench.run(run.clients, max(2, int(seconds)), self.study.query_mode,
                                 workload=self.load_workload.timed())
            self._pending_profile = {"profile": data.name,
                                     "profile_top": contention.summarise_profiles([({}, data)])}
            data.unlink(missing_ok=True)
            return
        # a counted load warms up for the warm-up's seconds all the same
        self.pgbench.run(run.clients, max(1, int(seconds)), self.study.query_mode, workload=self.load_workload.timed())

    def block_counters(self) -> tuple[int, int]:
        """pg_stat_database's (blks_read, blks_hit), once the run's backends are gone (a backend adds its
        counts when it exits), read by a session that logs nothing: its statements must not count among
        the run's records."""
        process.children_settled(self.pg.pid, lambda p: "[local]" in " ".join(p.cmdline()))
        with self.pg.connect(options="-c log_statement=none -c log_duration=off "
                                     "-c log_min_duration_statement=-1") as c:
            row = c.execute("SELECT sum(blks_read), sum(blks_hit) FROM pg_stat_database").fetchone()
        return int(row[0]), int(row[1])

    def measure(self, run: PlannedRun, seconds: float) -> Measurement:
        sessions = self._configuration.sessions if self._configuration is not None else None
        if sessions is None:
            return self._measure(run, seconds)
        return self._holding(sessions, run, seconds)

    def _holding(self, sessions: HeldSessions, run: PlannedRun, seconds: float) -> Measurement:
        """The run with the configuration's sessions open: opened before, counted, closed after; the server's
        memory read with them open."""
        n = held.count(sessions, run.clients,
                       lambda: int(self.effective_settings(self._configuration)["max_connections"]))
        with held.SessionPool(self.pg, n, sessions.kind) as pool:
            opened, state = pool.settled(n)
            if opened != n or state != n:
                raise ToolError(f"{n} {sessions.kind} sessions wanted, pg_stat_activity shows {opened} ({state} "
                                f"{sessions.kind})")
            memory = process.server_memory_mb(self.pg.pid)
            m = self._measure(run, seconds)
            during = pool.count()
        after = pool.count()
        extra = {"session_kind": sessions.kind, "sessions": n, "sessions_open_before": opened,
                 "sessions_open_after_run": during, "sessions_left_after_close": after,
                 "sessions_open_s": pool.open_s, **memory}
        return dataclasses.replace(m, extra={**m.extra, **extra})

    def _measure(self, run: PlannedRun, seconds: float) -> Measurement:
        prefix = Path(self.study.output_dir) / "txlog" / f"run{run.position:04d}"
        prefix.parent.mkdir(parents=True, exist_ok=True)
        # Block counters: a memory-limited server's runs check their regime; a contention study's runs
        # set track_io_timing's cost against the reads they made.
        limited = self.memory_limit is not None
        counted = limited or self.study.wchan_hz > 0
        if counted:
            read0, hit0 = self.block_counters()
        if limited:
            mem0 = self.memory_limit.stats()
        sampling = contextlib.nullcontext()
        if self.study.wchan_hz > 0:
            from ... import contention

            sampling = contention.WchanSampler(self.pg.pid, self.study.wchan_hz)
        if self.load.checkpoint_first:
            with self.pg.connect() as c:
                c.execute("CHECKPOINT")
        wal0 = wal.counters(self.pg) if self.load.wal else None
        with sampling as sampler:
            r = self.pgbench.run(run.clients, seconds, self.study.query_mode, log_prefix=prefix,
                                 sampling_rate=self.study.sampling_rate, progress=self.progress,
                                 workload=self.load_workload)
        evidence: dict[str, object] = dict(self.load.tags)
        if wal0 is not None:
            grew = wal.counters(self.pg).minus(wal0)
            evidence.update(grew, **wal.per_transaction(grew, r.transactions))
        if counted:
            read1, hit1 = self.block_counters()
            evidence.update(blks_read=read1 - read0, blks_hit=hit1 - hit0)
        if sampler is not None:
            evidence.update(sampler.result.as_extra())
        if limited:
            mem = self.memory_limit.stats()
            evidence.update(memory_limit_hits=mem["limit_hits"] - mem0["limit_hits"],
                            memory_usage_bytes=mem["usage_bytes"], page_cache_bytes=mem["file_bytes"],
                            page_cache_growth_bytes=mem["file_bytes"] - mem0["file_bytes"])
            if self.memory_limit.read_iops:
                evidence["disk_reads"] = mem["disk_reads"] - mem0["disk_reads"]
            evidence["regime"] = io_regime(evidence["blks_read"], evidence["blks_hit"],
                                           evidence["memory_limit_hits"], evidence["page_cache_growth_bytes"])
        evidence, self._pending_profile = {**evidence, **self._pending_profile}, {}
        return Measurement(
            transactions=r.transactions, failed=r.failed, tps=r.tps, latency_mean_ms=r.latency_avg_ms,
            latency_stddev_ms=r.latency_stddev_ms, latency_p50_ms=r.latency_p50_ms, latency_p95_ms=r.latency_p95_ms,
            latency_p99_ms=r.latency_p99_ms, latency_samples=r.latency_samples, wall_s=r.wall_seconds,
            threads=run.clients, extra={"command": " ".join(r.command[1:]),
                                        "initial_connection_ms": r.initial_connection_ms,
                                        **({"progress_tps": list(r.progress_tps)} if self.progress else {}),
                                        **evidence},
        )

    def sinks(self, configuration: Configuration) -> list[FileSink]:
        return [self._sinks[name].counting(configuration.records) for name in configuration.destinations]

    def expected_records(self, configuration: Configuration, run: PlannedRun, m: Measurement) -> int:
        # the load's statements per transaction (pgbench -S: one), one connection per client
        return configuration.expected_records(statements=m.transactions * self.load_workload.statements,
                                              transactions=m.transactions,
                                              connections=run.clients)

    def server_cpu(self) -> float:
        # The server's own processes (checkpointer, walwriter, collector, ...) stay; the client
        # backends of the run, titled "postgres: user db [local] ...", must be gone and reaped.
        pid = self.pg.pid
        process.children_settled(pid, lambda p: "[local]" in " ".join(p.cmdline()))
        return process.tree_cpu_seconds(pid)

    def server_pid(self) -> int:
        return self.pg.pid

    def collector_cpu(self) -> float:
        """The logging collector's own CPU (it is also in server_cpu): the one process every file destination's
        line passes through, whatever the cores; NaN without one (logging_collector = off)."""
        return process.child_cpu_seconds(self.pg.pid, _is_collector)

    def collector_ctx_switches(self) -> tuple[float, float]:
        """The logging collector's (voluntary, involuntary) context switches so far: a voluntary one is a sleep on
        an empty pipe, so per record they say whether it was woken for each message or read them in batches."""
        return process.child_ctx_switches(self.pg.pid, _is_collector)

    def logger_cpu(self) -> float:
        return self.syslog.cpu_seconds() if self.syslog is not None else 0.0

    def logger_cpu_parts(self) -> dict[str, float]:
        return self.syslog.cpu_parts() if self.syslog is not None else {}

    def effective_settings(self, configuration: Configuration) -> dict:
        return self.study.base.merged(configuration.settings).as_dict()

    def log_dir_fs(self) -> str:
        return filesystem_of(self.log_dir)


BLOCK_BYTES = 8192


def _is_collector(p) -> bool:
    return " ".join(p.cmdline()).startswith("postgres: logger")


def io_regime(blks_read: int, blks_hit: int, limit_hits: int, page_cache_growth: int) -> str:
    """'io_bound' or 'cached' for one run, by the server's own counters (memlimit.io_bound)."""
    return "io_bound" if memlimit.io_bound(blks_read, blks_read + blks_hit, limit_hits=limit_hits,
                                           page_cache_growth=page_cache_growth, page_bytes=BLOCK_BYTES) else "cached"
