"""PostgreSQL: the base study type, its destinations, and one measurement with pgbench on a server.

:class:`PgStudy` carries what every PostgreSQL study shares (base settings, pgbench scale and
query mode, backend, image, log directory, syslog options); :func:`start` brings up the log
directory, syslog daemons, server(s) and dataset for it and returns the runner's bench.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import cleanup, environment, params, paths, runner
from ..design import PlannedRun, Study
from ..logsinks import FileSink, wait_quiet
from ..runner import Measurement
from ..servers import postgres as pgserver
from ..servers import memlimit, process
from ..servers.process import is_root
from ..servers.syslog import FACILITY_FILE, FACILITY_TCP, FACILITY_UDP, NamespaceLogHost, SyslogPair, rsyslogd_binary
from ..errors import SettingError
from ..settings import Configuration, RecordShape, Settings, validate_postgres
from ..workloads.pgbench import (QUERY_MODES, RECORD_MARKER, RECORDS_PER_CONNECTION, RECORDS_PER_TRANSACTION,
                                 SETUP_STATEMENTS, Pgbench)
from .backend import check_backend, check_image, filesystem_of, resolve_backend

LOG_DIR_ON = ("disk", "tmpfs")
# With logging_collector = off every backend writes its lines to the server's own stderr: this file in the
# study's log directory (opened O_APPEND by the launcher), counted as the sink "stderr_direct".
STDERR_DIRECT = "postgresql_direct.log"
STDERR_DIRECT_SINK = "stderr_direct"
DEFAULT_VERSION = "15"  # a container's PostgreSQL unless a version sweep says otherwise

# Post 000's baseline (its pg_settings listing): the collector on, stderr to a file,
# no statement logging; timestamps in UTC rather than 'Poland' so runs compare anywhere.
BASE = {
    "logging_collector": True,
    "log_destination": "stderr",
    "log_filename": "postgresql.log",
    "log_rotation_age": 0,
    "log_rotation_size": 0,
    "log_truncate_on_rotation": False,
    "log_file_mode": "0600",
    "log_line_prefix": "%m %u@%d %p %r ",
    "log_checkpoints": False,
    "log_connections": False,
    "log_disconnections": False,
    "log_duration": False,
    "log_lock_waits": True,
    "log_temp_files": 0,
    "log_autovacuum_min_duration": 0,
    "log_min_messages": "warning",
    "log_min_error_statement": "error",
    "log_statement": "none",
    "log_min_duration_statement": -1,
    "log_timezone": "UTC",
    "syslog_ident": "postgres",
}

_ALL = {"log_min_duration_statement": 0}
# Post 000 changed the prefix for syslog: the daemon already stamps pid and time.
_SYSLOG = {**_ALL, "log_line_prefix": "%u@%d %r "}

# Every statement to one destination: name -> (settings over BASE, sinks that receive the statement records).
DESTINATIONS: dict[str, tuple[dict, tuple[str, ...]]] = {
    "none": ({}, ()),
    "stderr": ({**_ALL, "log_destination": "stderr"}, ("stderr",)),
    "csvlog": ({**_ALL, "log_destination": "csvlog"}, ("csvlog",)),
    "jsonlog": ({**_ALL, "log_destination": "jsonlog"}, ("jsonlog",)),
    "syslog": ({**_SYSLOG, "log_destination": "syslog", "syslog_facility": FACILITY_FILE}, ("syslog",)),
    "remote_syslog_udp": ({**_SYSLOG, "log_destination": "syslog", "syslog_facility": FACILITY_UDP}, ("remote_syslog",)),
    "remote_syslog_tcp": ({**_SYSLOG, "log_destination": "syslog", "syslog_facility": FACILITY_TCP}, ("remote_syslog",)),
    "syslog,csvlog": ({**_SYSLOG, "log_destination": "syslog,csvlog", "syslog_facility": FACILITY_FILE}, ("syslog", "csvlog")),
}

# Statement logging as a DBA runs it in production (PostgreSQL 13+): every statement's duration is checked, a random
# share of them logged (log_min_duration_sample = 0 with log_statement_sample_rate, each protocol message drawn
# apart), nothing else; to the collector's file like "stderr". No record is due (a random subset: the log's own
# count says what was written). Name -> (settings over BASE, sinks), as DESTINATIONS.
SAMPLED: dict[str, tuple[dict, tuple[str, ...]]] = {
    f"stderr_sample_{label}": ({"log_min_duration_sample": 0, "log_statement_sample_rate": rate,
                                "log_destination": "stderr"}, ("stderr",))
    for label, rate in (("1pct", 0.01), ("10pct", 0.1))
}

# How every statement is logged (study 02's ``statement_logging``): post 000's log_min_duration_statement = 0
# (statement and duration in one record, after execution), or post 004's log_statement = all (a statement
# record before execution). The records each leaves are :func:`statement_records`'.
STATEMENT_LOGGING = {
    "min_duration_0": {"log_min_duration_statement": 0},
    "log_statement_all": {"log_statement": "all"},
}


def with_statement_logging(table: dict[str, tuple], mechanism: str) -> dict[str, tuple]:
    """``table`` (name -> (settings over BASE, sinks)) with every logging configuration's
    log_min_duration_statement = 0 replaced by ``mechanism``'s settings; the baseline stays as it is."""
    params.choice("statement_logging", mechanism, STATEMENT_LOGGING)
    out = {}
    for name, (settings, *rest) in table.items():
        if settings.get("log_min_duration_statement") == 0:
            settings = {k: v for k, v in settings.items() if k != "log_min_duration_statement"}
            settings.update(STATEMENT_LOGGING[mechanism])
        out[name] = (settings, *rest)
    return out


@dataclass(frozen=True, kw_only=True)
class PgStudy(Study):
    """What every PostgreSQL study shares; a study subclasses it with its own parameters."""

    base: Settings
    scale: int
    query_mode: str
    syslog_rate_limit: bool
    log_dir_on: str
    sampling_rate: float
    pg_bindir: str
    image: str | None
    # (label, backend, image, version) per server when one schedule spans several; configurations are then
    # "label/name". ``version``: the PostgreSQL version of a version sweep's container (its default image),
    # None for the default one. Backend and image stay as asked until the run resolves them (resolved()).
    variants: tuple[tuple[str, str, str | None, str | None], ...] = ()
    # A memory cgroup limit (MB) on the server's processes, page cache included, with the data evicted from the
    # page cache before the runs: the IO-bound regime on a dataset smaller than RAM (servers.memlimit). None: none.
    memory_limit_mb: int | None = None
    # Under that limit, a cap on the reads per second the server's processes issue to the data's disk (a slow
    # disk's pace on a fast virtual one; servers.memlimit). None: the disk's own pace.
    read_iops: int | None = None
    # Contention evidence per measured run (logbench.contention): backends' wchan sampled at this rate (0: off),
    # their and the collector's context switches, the block reads and hits of the run (pg_stat_database);
    # perf_profile: a perf cpu-clock profile during the warm-up of each cell's first measured run.
    wchan_hz: float = 0.0
    perf_profile: bool = False
    # The switchback design (logbench.switchback): every arm switched inside one continuous load per clients
    # level; None: the block design (a separate run per configuration).
    switchback: object = None

    @property
    def needs_syslog(self) -> bool:
        return any(s in ("syslog", "remote_syslog") for c in self.configurations for s in c.destinations)

    @property
    def needs_remote(self) -> bool:
        return any("remote_syslog" in c.destinations for c in self.configurations)

    @property
    def needs_direct_stderr(self) -> bool:
        """A configuration runs with logging_collector = off: the server's stderr must go to a file of the
        study's log directory (``STDERR_DIRECT``), where the backends write their lines themselves."""
        return any(STDERR_DIRECT_SINK in c.destinations for c in self.configurations)

    def resolved(self) -> "PgStudy":
        """The study as it runs: backend 'auto' decided, each container's image found (ServerStartError
        naming the images tried when none is there), the syslog destinations checked against the backend
        they will use. Asks the Docker engine, so the run calls it, before anything starts."""
        from ..servers.containers import resolve_image

        def server(backend: str, image: str | None, version: str | None) -> tuple[str, str | None]:
            backend = resolve_backend(backend)
            if version is not None and backend != "container":
                raise params.ParameterError("versions", version, "a version sweep runs in containers: "
                                            "backend 'container', or 'auto' once a Docker engine answers "
                                            "(`bash scripts/setup.sh --docker` installs and starts one)")
            return backend, (resolve_image("postgres", version or DEFAULT_VERSION, image)
                             if backend == "container" else None)

        if not self.variants:
            backend, image = server(self.backend, self.image, None)
            study = dataclasses.replace(self, backend=backend, image=image)
        else:
            variants = tuple((label, *server(b, i, v), v) for label, b, i, v in self.variants)
            study = dataclasses.replace(self, variants=variants,
                                        backend="+".join(dict.fromkeys(b for _, b, _, _ in variants)))
        check_syslog(study)
        return study


def pg_fields(*, backend: str, image: object, scale: object, query_mode: str, syslog_rate_limit: object,
              log_dir_on: str, sampling_rate: object, shared_buffers: str, extra_settings: object,
              pg_bindir: object, base: dict = BASE) -> dict[str, object]:
    """The :class:`PgStudy` fields, checked; ``backend`` 'auto' and the image stay as asked until the run
    (:meth:`PgStudy.resolved`)."""
    params.choice("query_mode", query_mode, QUERY_MODES)
    params.choice("log_dir_on", log_dir_on, LOG_DIR_ON)
    check_backend(backend)
    rate_limit = params.boolean("syslog_rate_limit", syslog_rate_limit)
    bindir = pgserver.find_bindir(pg_bindir)
    extra = params.mapping("extra_settings", extra_settings)
    settings = Settings.of("postgresql", {**base, "shared_buffers": shared_buffers, **extra})
    validate_postgres(settings, bindir / "postgres")
    return dict(backend=backend, base=settings, scale=params.positive_int("scale", scale), query_mode=query_mode,
                syslog_rate_limit=rate_limit, log_dir_on=log_dir_on,
                sampling_rate=params.fraction("sampling_rate", sampling_rate), pg_bindir=str(bindir),
                image=check_image(image))


_MARK = RECORD_MARKER.encode()
_STATEMENT_TEXT = (_MARK, b"statement: ", b"parse ", b"bind ", b"execute ")


# Post 000's PostgreSQL 9.2.4 wrote the same records per prepared statement as 15 does, so counting two per
# transaction is the post's shape too: in 9.2 (and 9.3) src/backend/tcop/postgres.c, exec_bind_message and
# exec_execute_message each call check_log_duration, which returns 2 ("log the statement") whenever
# log_min_duration_statement = 0 and log_statement did not log it already, and each then logs
# "duration: %s ms  bind|execute <name>: <text>" with errdetail_params; pgbench -M prepared calls PQprepare once
# per connection and PQsendQueryPrepared (Bind, Describe, Execute, Sync) per statement. Post 000's "number of
# queries logged" comes to about one per transaction if its cached runs were 3 x 300 s like its IO-bound ones
# (it does not say); then it counted statements, not the records its server wrote.
def statement_records(settings: Settings, query_mode: str) -> tuple[RecordShape, ...]:
    """The records pgbench -S's statements leave under ``settings`` (the effective ones: base and
    configuration merged), as PostgreSQL 15 writes them (tests/fixtures/pg15_*.log are captured runs).

    - ``log_min_duration_statement = 0``: one "duration: … statement/parse/bind/execute: <text>" line per
      protocol message: per transaction 1 (simple) or 2 (bind, execute), per connection 1 parse (prepared);
    - ``log_statement = all``: one "statement: <text>" (simple) or "execute P_0: <text>" (prepared) line
      per transaction; the set-up statements have other text;
    - ``log_duration = on`` (without the above): a bare "duration: … ms" line per protocol message, the
      set-up statements' included (they cannot be told apart);
    - both of the last two: both kinds. A threshold above 0 logs an unpredictable subset: none is due;
    - ``log_min_duration_sample = 0`` (without the first): the first kind's lines for a random share of the
      protocol messages (``log_statement_sample_rate``): counted, none due (a random subset).
    """
    statement_all = settings.get("log_statement") == "all"
    min_duration = settings.get("log_min_duration_statement", "-1")
    durations = settings.get("log_duration") == "on"
    if statement_all and min_duration == "0":
        raise SettingError("log_statement = 'all' with log_min_duration_statement = 0: which records this writes "
                           "per statement is not captured yet (tests/fixtures/pg15_*.log); use one of them")
    per_tx, per_conn = RECORDS_PER_TRANSACTION[query_mode], RECORDS_PER_CONNECTION[query_mode]
    if min_duration == "0":
        return (RecordShape("duration+statement", (b"duration:", _MARK), per_transaction=per_tx,
                            per_connection=per_conn),)
    shapes = []
    if settings.get("log_min_duration_sample", "-1") == "0":
        shapes.append(RecordShape("duration+statement (sampled)", (b"duration:", _MARK)))
    if statement_all:
        shapes.append(RecordShape("statement", (_MARK,), absent=(b"duration:",), per_transaction=1))
    if durations:
        shapes.append(RecordShape("duration", (b"duration: ",), absent=_STATEMENT_TEXT, per_transaction=per_tx,
                                  per_connection=per_conn, per_run=SETUP_STATEMENTS))
    return tuple(shapes)


def configurations(names: tuple[str, ...], table: dict[str, tuple], pg_bindir: str, base: Settings,
                   query_mode: str) -> tuple[Configuration, ...]:
    """``names`` from ``table`` (name -> (settings over the base, sinks, ...)), each checked against the
    catalog, each with the records its sinks must receive under pgbench -S in ``query_mode``."""
    out = []
    for n in names:
        settings = Settings.of("postgresql", table[n][0])
        validate_postgres(settings, Path(pg_bindir) / "postgres")
        records = statement_records(base.merged(settings), query_mode) if table[n][1] else ()
        out.append(Configuration(n, settings, tuple(table[n][1]), records))
    return tuple(out)




def switchback_design(profile: dict, configurations: tuple[Configuration, ...], pg_bindir: str, *, design: object,
                      lead_in_s: float, versions: object = None, memory_limit_mb: object = None, **given: object):
    """The study's switchback design from its parameters (None: the profile's), or None for the block design.
    Refused (ParameterError naming the parameter) before anything starts: an arm that needs a restart, a version
    sweep (its servers interleave as separate runs), a window not longer than its guard."""
    from .. import switchback
    from ..settings import postgres_catalog

    sb = switchback.from_profile(profile, design=design, lead_in_s=lead_in_s, **given)
    if sb is None:
        return None
    if versions is not None:
        raise params.ParameterError("design", "switchback", "'blocks' with a version sweep (versions): its servers "
                                    "interleave as separate runs")
    catalog = postgres_catalog(str(Path(pg_bindir) / "postgres"))
    switchback.check_reloadable(configurations, {k: v.context for k, v in catalog.items()})
    return sb


def execute(study: PgStudy, bench, env: dict, progress: bool = True) -> tuple:
    """A PostgreSQL study's schedule (``common.run_study``'s ``execute``): its switchback loads when define() gave it
    the switchback design (logbench.switchback), else every planned run (the block design)."""
    if study.switchback is not None:
        from .. import switchback

        return switchback.execute(study, bench, env, progress)
    from ..studies import common

    return common.execute_all(study, bench, env, progress)


def checked(study: PgStudy, versions: object = None) -> PgStudy:
    """The checks that need the whole study: a version sweep, whole seconds, syslog's needs."""
    if versions is not None:
        from ..servers.containers import PG_IMAGES

        chosen = params.name_list("versions", versions, PG_IMAGES, coerce=str)
        if study.backend == "local":
            raise params.ParameterError("versions", versions, "a version sweep runs in containers: set backend to "
                                        "'container' or 'auto' with a Docker engine")
        # Each version's image is found when the study runs (resolved()), before any server starts.
        study = with_variants(study, [(f"pg{v}", study.backend, None, v) for v in chosen])
    if study.duration != int(study.duration):
        raise params.ParameterError("duration", study.duration, "whole seconds (pgbench -T takes seconds)")
    check_syslog(study)
    if study.needs_syslog:
        rsyslogd_binary()
    return study


def check_syslog(study: PgStudy) -> None:
    """Syslog destinations on the local backend need root (a private /dev/log, a network namespace);
    under 'auto' this is known once the run has decided the backend."""
    if study.needs_syslog and "local" in study.backend.split("+") and not is_root():
        raise params.ParameterError(
            "destinations", [c.name for c in study.configurations if c.destinations and "syslog" in c.destinations[0]],
            "without root, only 'none', 'stderr', 'csvlog', 'jsonlog' (syslog destinations give the server a "
            "private /dev/log and a network namespace, which need root)")


def with_variants(study: PgStudy, variants: list[tuple[str, str, str | None, str | None]]) -> PgStudy:
    """The same study on several servers in one interleaved schedule (see runner.SplitBench)."""
    configs = tuple(dataclasses.replace(c, name=f"{label}{runner.SplitBench.SEP}{c.name}")
                    for c in study.configurations for label, *_ in variants)
    return dataclasses.replace(study, configurations=configs, variants=tuple(variants),
                               backend="+".join(dict.fromkeys(b for _, b, _, _ in variants)))


class PgBench:
    """The PostgreSQL half of the runner's loop (see :class:`logbench.runner.Bench`)."""

    engine = "postgresql"
    workload = "pgbench -S"
    # pgbench -P interval (s) of measured runs; 0: none. The noise study's per-second series.
    progress = 0

    def __init__(self, study: PgStudy, pg: pgserver.LocalPostgres, pgbench: Pgbench,
                 syslog: SyslogPair | None, log_dir: Path, memory_limit: memlimit.MemoryLimit | None = None):
        self.study, self.pg, self.pgbench, self.syslog, self.log_dir = study, pg, pgbench, syslog, log_dir
        self.memory_limit = memory_limit
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
        from .pg_switchback import Control

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
            from .. import contention

            self._profiled.add(cell)
            data = Path(self.study.output_dir) / "profiles" / f"run{run.position:04d}.perf.data"
            with contention.PerfRecord(data):  # at least 2 s: a profile of a few hundred samples says little
                self.pgbench.run(run.clients, max(2, int(seconds)), self.study.query_mode)
            self._pending_profile = {"profile": data.name,
                                     "profile_top": contention.summarise_profiles([({}, data)])}
            data.unlink(missing_ok=True)
            return
        self.pgbench.run(run.clients, max(1, int(seconds)), self.study.query_mode)

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
            from .. import contention

            sampling = contention.WchanSampler(self.pg.pid, self.study.wchan_hz)
        with sampling as sampler:
            r = self.pgbench.run(run.clients, seconds, self.study.query_mode, log_prefix=prefix,
                                 sampling_rate=self.study.sampling_rate, progress=self.progress)
        evidence: dict[str, object] = {}
        if counted:
            read1, hit1 = self.block_counters()
            evidence = {"blks_read": read1 - read0, "blks_hit": hit1 - hit0}
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
        # pgbench -S: one statement per transaction, one connection per client.
        return configuration.expected_records(statements=m.transactions, transactions=m.transactions,
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


def start_stack(study: PgStudy, backend: str, stack: contextlib.ExitStack,
                image: str | None = None) -> tuple[PgBench, dict]:
    """Start one (resolved) backend's log directory, syslog daemons, server and dataset inside ``stack``."""
    root = paths.tmpfs_root() if study.log_dir_on == "tmpfs" else paths.scratch_root()
    log_dir = cleanup.private_dir("logbench-log-", root)
    stack.callback(shutil.rmtree, log_dir, True)
    syslog = None
    if backend == "container":
        from ..servers import containers

        host_kind, server_kind = containers.ContainerLogHost, containers.ContainerPostgres
        server_kw = {"image": image or study.image}
    else:
        host_kind, server_kind = NamespaceLogHost, pgserver.LocalPostgres
        server_kw = {"bindir": study.pg_bindir}
    if study.needs_syslog:
        syslog = stack.enter_context(SyslogPair(remote=study.needs_remote, rate_limit=study.syslog_rate_limit,
                                                log_dir=log_dir, remote_host=host_kind))
    if study.needs_direct_stderr and backend == "local":
        server_kw["stderr_file"] = log_dir / STDERR_DIRECT
    pg = stack.enter_context(server_kind(study.base, log_dir=log_dir, syslog_socket=syslog.socket if syslog else None,
                                         **server_kw))
    pgb = Pgbench(pg.binary("pgbench"), pg.conninfo)
    init_s = pgb.initialise(study.scale)
    limit, limited = None, {}
    if study.memory_limit_mb:
        limit = stack.enter_context(memlimit.MemoryLimit(study.memory_limit_mb * 2**20, read_iops=study.read_iops,
                                                          read_limit_on=pg.datadir))
        limit.add_tree(pg.pid)
        with pg.connect() as conn:
            conn.execute("CHECKPOINT")  # dirty pages stay in the page cache: write them before evicting
        limited = {"memory_limit_bytes": limit.limit_bytes, "memory_cgroup": str(limit.path),
                   "evicted_bytes": memlimit.evict(pg.datadir),
                   **({"read_iops_limit": limit.read_iops, "read_limit_device": limit.device} if limit.read_iops
                      else {})}
    tools = {"pgbench": pgb.version(), "postgres": environment.tool_version([str(pg.binary("postgres")), "--version"])}
    if syslog is not None:
        tools["rsyslogd"] = environment.tool_version([rsyslogd_binary(), "-v"])
    env = environment.collect(
        server_version=pg.version(), tools=tools,
        extra={**environment.pg_test_timing(pg.binary("pg_test_timing")), "pgbench_init_s": init_s,
               "log_dir_on": study.log_dir_on, "backend": pg.backend, "image": getattr(pg, "image", None),
               # the syslog daemons' input rate limit decides what a syslog destination keeps: the claims read it
               **({"syslog_rate_limit": study.syslog_rate_limit} if syslog is not None else {}), **limited},
    )
    return PgBench(study, pg, pgb, syslog, log_dir, limit), env


def start(study: PgStudy, stack: contextlib.ExitStack) -> tuple[object, dict]:
    """The (resolved) study's bench and environment record: one server, or one per variant behind a
    SplitBench (the record is then ``{"variants": {label: record}}``)."""
    if not study.variants:
        return start_stack(study, study.backend, stack)
    benches, envs = {}, {}
    for label, backend, image, _ in study.variants:
        benches[label], envs[label] = start_stack(study, backend, stack, image)
    return runner.SplitBench(benches, envs), {"variants": envs}


def configuration_table(study: PgStudy):
    """Each configuration: the settings it changes from the base, where its records are counted, and how many
    records of each kind a transaction must leave there."""
    import pandas as pd

    rows = []
    for c in study.configurations:
        changed = {k: v for k, v in c.settings.items() if study.base.get(k) != v}
        rows.append({"configuration": c.name, "settings (over the base)":
                     ", ".join(f"{k}={v}" for k, v in changed.items()) or "(base only)",
                     "sinks": ", ".join(c.destinations) or "–",
                     "records per transaction": "; ".join(f"{r.kind} {r.per_transaction:g}" for r in c.records) or "0"})
    return pd.DataFrame(rows).set_index("configuration")


def design_summary(study: PgStudy) -> dict[str, object]:
    """A PostgreSQL study's design as the notebooks show it (planned runs before any adaptive block)."""
    if study.switchback is not None:
        sb = study.switchback
        arms = len(study.planned_configurations)
        design = {"design": f"switchback ({sb.layout})", "loads per clients level": f"{sb.loads} (up to {sb.max_loads})",
                  "blocks per load": sb.blocks, "windows per block": sb.windows_per_block(arms),
                  "window (s)": sb.window_s, "guard after each switch (s)": sb.guard_s,
                  "lead-in per load (s)": sb.lead_in_s,
                  "load length (s)": sb.lead_in_s + sb.load_seconds(arms)}
    else:
        design = {"design": "blocks", "repeats": study.repeats, "runs planned": len(study.plan()),
                  "duration (s)": study.duration, "warm-up per run (s)": study.warmup}
    return {
        "profile": study.profile, "backend": study.backend, "clients": list(study.clients), **design,
        "scale": study.scale, "query mode": study.query_mode,
        "syslog rate limit": study.syslog_rate_limit, "log directory on": study.log_dir_on, "seed": study.seed,
        "output": str(study.output_dir),
        **({"memory limit (MB, page cache included)": study.memory_limit_mb,
            "shared_buffers": study.base.get("shared_buffers")} if study.memory_limit_mb else {}),
        **({"disk reads per second (limit)": study.read_iops} if study.read_iops else {}),
    }
