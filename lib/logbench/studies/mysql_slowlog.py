"""Study 04: what does the MySQL/MariaDB slow log cost? (post 001, Percona 2009, redone)

The post ran DBT2 (TPC-C) against MySQL 5.0 with the slow log off, at
``long_query_time = 1``, logging every query, and logging every query to
``/dev/null``, in a CPU-bound (buffer pool larger than the data) and an
IO-bound (buffer pool much smaller than the data, ``O_DIRECT``) regime, at 1, 20
and 100 connections. Here the same questions run on a real MariaDB, from this
machine's binaries or in a container (``backend``; the same settings either way),
with sysbench's ``oltp_read_write`` as the stand-in for DBT2 and
``oltp_point_select`` for the highest query rate, plus the relatives the post
did not have: the general log, the slow log as a table, and the sampled slow log
(``log_slow_rate_limit``).

Each (regime, workload) pair is one *cell*: the server restarts into the regime's
base settings once, then the runner's schedule interleaves every (configuration,
clients) pair in seeded random blocks. Ratios compare configurations within a
cell, never across cells.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import cleanup, environment, params, paths, records, runner, stats
from ..design import PlannedRun, Study
from ..errors import ParameterError, ServerStartError
from ..runner import Measurement
from ..servers import mariadb as mdb
from ..servers.process import server_user, tree_cpu_seconds
from ..settings import Configuration, Settings, mariadb_flavor, validate_mariadb
from ..workloads.sysbench import Sysbench, SysbenchResult, sysbench_binary

NAME = "mysql_slowlog"
POST = "001_4609e05799603b0a.txt"  # the post this study redoes (shared/seeds)
# "auto": the container when a Docker engine answers, else the machine's binaries (define() resolves it).
BACKENDS = ("auto", "local", "container")
REGIMES = ("cpu", "io")
WORKLOADS = ("oltp_read_write", "oltp_point_select")
# A cell is one regime with one workload: "cpu/oltp_read_write".
CELLS = tuple(f"{r}/{w}" for r in REGIMES for w in WORKLOADS)
BASELINE = "off"
DEVNULL = "/dev/null"

# The post's [mysqld] section (max_connections lowered: 3000 threads are pointless on 2 cores;
# table_cache is today's table_open_cache). Logging off; FILE output unless a configuration says TABLE.
BASE = {
    "max_connections": 500,
    "innodb_log_file_size": "128M",
    "innodb_flush_log_at_trx_commit": 1,
    "innodb_file_per_table": True,
    "table_open_cache": 2000,
    "slow_query_log": False,
    "general_log": False,
    "log_output": "FILE",
    "long_query_time": 10,
    "log_queries_not_using_indexes": False,
}

_ALL = {"slow_query_log": True, "long_query_time": 0}

# name -> (settings over BASE, sinks that receive the statement records, what it is)
CONFIGURATIONS: dict[str, tuple[dict, tuple[str, ...], str]] = {
    "off": ({}, (), "no query logging (the post's baseline)"),
    "slow_1s": ({"slow_query_log": True, "long_query_time": 1}, ("slow_file",),
                "slow log, long_query_time = 1 s: the usual production setting; sysbench's statements are far faster"),
    "slow_all": (_ALL, ("slow_file",), "slow log of every statement (long_query_time = 0) to a file"),
    "slow_all_devnull": ({**_ALL, "slow_query_log_file": DEVNULL}, (),
                         "every statement formatted and written to /dev/null: the cost without the file (startup only: a restart)"),
    "general_log": ({"general_log": True}, ("general_file",), "the general query log (every statement, no timing)"),
    "slow_all_table": ({**_ALL, "log_output": "TABLE"}, ("slow_table",),
                       "slow log of every statement into the CSV table mysql.slow_log"),
    "slow_sampled": ({**_ALL, "log_slow_rate_limit": None}, ("slow_file",),
                     "slow log of every n-th statement (MariaDB log_slow_rate_limit): the sampled alternative"),
}
# Our names for the post's configuration keys (data/raw/reference/configurations.csv).
REFERENCE_KEYS = {"none": "off", "slow_log_1s": "slow_1s", "slow_log_all": "slow_all",
                  "slow_log_all_devnull": "slow_all_devnull"}
REFERENCE_EXPERIMENTS = {"cpu": ("001/cpu_bound", "001/cpu_bound_devnull"), "io": ("001/io_bound",)}
# InnoDB bytes per sysbench row (data + secondary index), measured on MariaDB 10.11: sizes the regimes.
BYTES_PER_ROW = 250

PROFILES: dict[str, dict[str, object]] = {
    # seconds: what tests and nbval run; regime sizes are not checked (the plumbing is the point)
    "smoke": {"cells": ["cpu/oltp_point_select"], "clients": [2], "repeats": 2, "duration": 1,
              "warmup": 0, "tables": 1, "table_size": 2000, "buffer_pool_cpu": "64M", "buffer_pool_io": "8M",
              "restart_warmup": 0},
    # the committed run: ~11 minutes on two cores (data ~100 MB); the post's two regimes with the DBT2
    # stand-in, and the highest statement rate (point selects) where the data is cached
    "standard": {"cells": ["cpu/oltp_read_write", "io/oltp_read_write", "cpu/oltp_point_select"], "clients": [1, 8],
                 "repeats": 5, "duration": 2, "warmup": 0, "tables": 4, "table_size": 100000,
                 "buffer_pool_cpu": "512M", "buffer_pool_io": "16M", "restart_warmup": 2},
    # paper-grade: longer runs, ~2 GB of data, three concurrencies
    "full": {"cells": list(CELLS), "clients": [1, 8, 32],
             "repeats": 5, "duration": 30, "warmup": 5, "tables": 8, "table_size": 1000000,
             "buffer_pool_cpu": "4G", "buffer_pool_io": "128M", "restart_warmup": 10},
}


def size_bytes(name: str, value: object) -> int:
    """'512M', '4G', '16384' -> bytes; ParameterError otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)\s*", str(value))
    if not m or isinstance(value, bool):
        raise ParameterError(name, value, "a size in bytes with an optional K/M/G suffix, e.g. '512M'")
    n, suffix = int(m.group(1)), m.group(2).lower()
    return n * (1024 ** ("kmg".index(suffix) + 1) if suffix else 1)


@dataclass(frozen=True, kw_only=True)
class MysqlSlowlogStudy(Study):
    cell_names: tuple[str, ...]  # "regime/workload", in the order they run
    tables: int
    table_size: int
    buffer_pool_cpu: str
    buffer_pool_io: str
    sample_rate: int
    restart_warmup: int  # seconds of unrecorded load after each restart (the warm-up runs only then)
    base: Settings
    mariadbd: str  # the host's server binary: runs the local backend, validates the settings for both
    flavor: str
    image: str | None = None  # the container backend's image (resolved: one that is present), else None
    cell: int = -1  # -1: the whole study; >= 0: one (regime, workload) cell of it

    def base_for(self, regime: str) -> Settings:
        """The post's regimes: a buffer pool over the data; or far under it with O_DIRECT."""
        if regime == "cpu":
            return self.base.merged({"innodb_buffer_pool_size": self.buffer_pool_cpu})
        return self.base.merged({"innodb_buffer_pool_size": self.buffer_pool_io, "innodb_flush_method": "O_DIRECT"})

    def cells(self) -> list[tuple[str, str]]:
        return [tuple(c.split("/")) for c in self.cell_names]

    @property
    def regimes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r for r, _ in self.cells()))

    @property
    def workloads(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(w for _, w in self.cells()))

    def for_cell(self, index: int) -> "MysqlSlowlogStudy":
        """One cell's study: its own regime and workload, and a seed of its own for its schedule."""
        seed = int(np.random.SeedSequence([self.seed, index]).generate_state(1)[0])
        return dataclasses.replace(self, cell_names=(self.cell_names[index],), seed=seed, cell=index)

    @property
    def data_bytes_estimate(self) -> int:
        return self.tables * self.table_size * BYTES_PER_ROW


def define(
    profile: str = "standard",
    configurations: object = None,
    cells: object = None,
    clients: object = None,
    repeats: object = None,
    duration: object = None,
    warmup: object = None,
    tables: object = None,
    table_size: object = None,
    buffer_pool_cpu: object = None,
    buffer_pool_io: object = None,
    sample_rate: object = 100,
    restart_warmup: object = None,
    seed: object = 20090210,
    warmup_blocks: object = 0,
    backend: str = "auto",
    image: object = None,
    output_dir: object = None,
    processed_dir: object = None,
    mariadbd: object = None,
) -> MysqlSlowlogStudy:
    """Check every parameter and freeze the study; raises ParameterError/SettingError before anything starts."""
    params.choice("profile", profile, params.PROFILES)
    d = lambda name, v: params.from_profile(name, v, profile, PROFILES)  # noqa: E731
    chosen = params.name_list("configurations", list(CONFIGURATIONS) if configurations is None else configurations,
                              CONFIGURATIONS)
    # The baseline is always measured: every ratio needs it.
    chosen = (BASELINE,) + tuple(c for c in chosen if c != BASELINE)
    params.choice("backend", backend, BACKENDS)
    rate = params.positive_int("sample_rate", sample_rate)
    if rate < 2:
        raise ParameterError("sample_rate", rate, "a whole number >= 2 (log every n-th statement; 1 is slow_all)")
    binary = mdb.find_mariadbd(mariadbd)
    flavor, _ = mariadb_flavor(binary)
    if flavor == "mysql" and "slow_sampled" in chosen:
        raise ParameterError("configurations", "slow_sampled",
                             "configurations without 'slow_sampled' on MySQL (log_slow_rate_limit is MariaDB's / "
                             "Percona Server's)")
    sysbench_binary()
    backend, image = resolve_server(backend, image)
    configs = []
    for name in chosen:
        settings, sinks, _ = CONFIGURATIONS[name]
        settings = {k: (rate if v is None else v) for k, v in settings.items()}
        configs.append(Configuration(name, Settings.of("mariadb", settings), sinks))
    study = MysqlSlowlogStudy(
        name=NAME, engine="mariadb", backend=backend, profile=profile, configurations=tuple(configs),
        clients=params.int_list("clients", d("clients", clients)),
        repeats=params.positive_int("repeats", d("repeats", repeats)),
        duration=params.positive_int("duration", d("duration", duration)),
        warmup=params.non_negative_int("warmup", d("warmup", warmup)),
        warmup_blocks=params.non_negative_int("warmup_blocks", warmup_blocks),
        seed=params.non_negative_int("seed", seed),
        output_dir=Path(output_dir) if output_dir else _default_output(profile),
        processed_dir=(Path(processed_dir) if processed_dir else (None if profile == "smoke" else paths.PROCESSED)),
        # Cells sharing a regime run next to each other: one restart per regime.
        cell_names=tuple(sorted(params.name_list("cells", d("cells", cells), CELLS), key=lambda c: (
            REGIMES.index(c.split("/")[0]), c))),
        tables=params.positive_int("tables", d("tables", tables)),
        table_size=params.positive_int("table_size", d("table_size", table_size)),
        buffer_pool_cpu=str(d("buffer_pool_cpu", buffer_pool_cpu)),
        buffer_pool_io=str(d("buffer_pool_io", buffer_pool_io)),
        sample_rate=rate, restart_warmup=params.non_negative_int("restart_warmup", d("restart_warmup", restart_warmup)),
        base=Settings.of("mariadb", BASE), mariadbd=str(binary), flavor=flavor, image=image,
    )
    cpu_pool = size_bytes("buffer_pool_cpu", study.buffer_pool_cpu)
    io_pool = size_bytes("buffer_pool_io", study.buffer_pool_io)
    data = study.data_bytes_estimate
    if profile != "smoke":
        if "cpu" in study.regimes and cpu_pool < 1.25 * data:
            raise ParameterError("buffer_pool_cpu", study.buffer_pool_cpu,
                                 f"at least 1.25 x the data (~{data / 2**20:.0f} MB for {study.tables} x "
                                 f"{study.table_size} rows), or the CPU-bound regime is not CPU-bound")
        if "io" in study.regimes and io_pool * 4 > data:
            raise ParameterError("buffer_pool_io", study.buffer_pool_io,
                                 f"at most a quarter of the data (~{data / 2**20:.0f} MB), or the IO-bound regime "
                                 "is not IO-bound; add tables or rows instead")
    for r in study.regimes:
        validate_mariadb(study.base_for(r), binary)
    for c in study.configurations:
        validate_mariadb(c.settings, binary)
    return study


def resolve_server(backend: str, image: object) -> tuple[str, str | None]:
    """(backend, image) as a run uses them: 'auto' decided now, the container's image found now (or refused)."""
    from ..servers.containers import resolve_image
    from .pg_destinations import resolve_backend

    backend = resolve_backend(backend)
    if backend == "local":
        if image:
            raise ParameterError("image", image, "None with the local backend (an image runs only with backend "
                                 "'container', or 'auto' when a Docker engine answers)")
        server_user()  # as root, the unprivileged account must exist before anything starts
        return backend, None
    if not image:
        return backend, resolve_image("mariadb", "10.11")
    try:
        return backend, resolve_image("mariadb", "10.11", str(image))
    except ServerStartError as e:
        raise ParameterError("image", image, f"an image present here or pullable ({e})") from e


def _default_output(profile: str) -> Path:
    if profile == "smoke":
        return Path(tempfile.mkdtemp(prefix="logbench-smoke-")) / NAME
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return paths.RESULTS / NAME / stamp


def run_seed(study: Study, run: PlannedRun, warm: bool = False) -> int:
    """sysbench --rand-seed of one run: reproducible, different for every run and for its warm-up."""
    # sysbench reads the seed as a signed 32-bit integer.
    return int(np.random.SeedSequence([study.seed, run.position, int(warm)]).generate_state(1)[0]) & 0x7FFFFFFF


def statements_sent(queries: int, ignored_errors: int) -> int:
    """Statements the server executed: sysbench's count leaves out each statement that failed
    (a deadlock it retries), but the server logs that one too (its ROLLBACK sysbench does count)."""
    return int(queries) + int(ignored_errors)


def expected_statement_records(settings: Settings, queries: int) -> int:
    """Records a destination should get for ``queries`` plain-text statements under ``settings``.

    Every statement reaches the general log and, at long_query_time = 0, the slow
    log; the sampled slow log keeps the statements whose query id is a multiple of
    the rate, ~1/rate of them; at long_query_time = 1 s, none of sysbench's.
    """
    if settings.get("general_log") == "on":
        return queries
    if settings.get("slow_query_log") == "on" and float(settings.get("long_query_time", "10")) == 0:
        return int(round(queries / int(settings.get("log_slow_rate_limit", "1"))))
    return 0


class SlowlogBench:
    """The MariaDB half of the runner's loop for one cell (see :class:`logbench.runner.Bench`)."""

    engine = "mariadb"
    query_mode = "text"  # --db-ps-mode=disable

    def __init__(self, study: MysqlSlowlogStudy, server: mdb.MariaDBServer, sysbench: Sysbench):
        self.study, self.server, self.sysbench = study, server, sysbench
        self.backend = server.backend
        self.regime, self.test = study.regimes[0], study.workloads[0]
        self.workload = f"sysbench {self.test}"
        self.server_version = server.version()
        self.scale = study.tables * study.table_size
        self.switches: list[tuple[str, float]] = []
        self.table = mdb.TableSink(server)
        self._sinks: dict[str, object] = {
            "slow_file": mdb.slow_file_sink(server.slow_log),
            "general_file": mdb.general_file_sink(server.general_log),
            "slow_table": self.table,
        }
        self._slow_size_before = 0

    def apply(self, configuration: Configuration):
        sw = self.server.apply(configuration.settings)
        if sw.kind != "none":
            self.switches.append((sw.kind, sw.seconds))
        if sw.kind == "restart":
            # A restarted server starts cold (its buffer pool is reloaded in the background):
            # load it before the run is marked, so the restart is not measured as logging cost.
            self.warm_after_restart()
        if "slow_table" in configuration.destinations:
            # Counting is by difference; emptying keeps COUNT(*) on the CSV table quick.
            self.table.truncate()
        self._rotate_if_large()
        return sw

    def _rotate_if_large(self, limit: int = 256 * 2**20) -> None:
        """Between runs (no load), keep the log files from filling the disk over a long study."""
        for path, what in ((self.server.slow_log, "SLOW"), (self.server.general_log, "GENERAL")):
            if path.exists() and path.stat().st_size > limit:
                old = path.with_name(path.name + ".old")
                path.rename(old)
                self.server.query(f"FLUSH {what} LOGS")
                old.unlink()

    def warm_after_restart(self) -> None:
        if self.study.restart_warmup > 0:
            self.sysbench.run(self.test, max(self.study.clients), self.study.restart_warmup,
                              seed=int(self.study.seed) & 0x7FFFFFFF)

    def warm(self, run: PlannedRun, seconds: float) -> None:
        self.sysbench.run(self.test, run.clients, max(1, int(seconds)), seed=run_seed(self.study, run, warm=True))

    def measure(self, run: PlannedRun, seconds: float) -> Measurement:
        slow0 = _size(self.server.slow_log)
        r = self.sysbench.run(self.test, run.clients, int(seconds), report_interval=1, seed=run_seed(self.study, run))
        cfg = self.study.configuration(run.configuration)
        extra = measurement_extra(r)
        extra.update(regime=self.regime, cell=self.study.cell, slow_file_bytes_during_run=_size(self.server.slow_log) - slow0)
        if cfg.settings.get("slow_query_log_file") == DEVNULL:
            # Nothing to count in /dev/null: say what was expected and leave the received count out.
            extra["records_expected_uncounted"] = expected_statement_records(
                cfg.settings, statements_sent(r.queries, r.ignored_errors))
            extra["note"] = "slow log written to /dev/null: records cannot be counted"
        return Measurement(
            transactions=r.transactions, failed=r.ignored_errors, tps=r.tps, latency_mean_ms=r.latency_avg_ms,
            latency_stddev_ms=r.latency_stddev_ms, latency_p50_ms=r.latency_p50_ms, latency_p95_ms=r.latency_p95_ms,
            latency_p99_ms=r.latency_p99_ms, latency_samples=r.latency_samples, wall_s=r.total_time_s,
            threads=r.threads or run.clients, extra=extra,
        )

    def sinks(self, configuration: Configuration) -> list:
        return [self._sinks[name] for name in configuration.destinations]

    def expected_records(self, configuration: Configuration, run: PlannedRun, m: Measurement) -> int:
        return expected_statement_records(configuration.settings, statements_sent(m.extra["queries"], m.failed))

    def server_cpu(self) -> float:
        return tree_cpu_seconds(self.server.pid)

    def logger_cpu(self) -> float:
        return 0.0  # the server writes its own logs: no logger process

    def effective_settings(self, configuration: Configuration) -> dict:
        return self.study.base_for(self.regime).merged(configuration.settings).as_dict()

    def log_dir_fs(self) -> str:
        return filesystem_of(self.server.log_dir)


def measurement_extra(r: SysbenchResult) -> dict:
    """What sysbench reported beyond the runner's fields (kept in each run record)."""
    return {
        "command": " ".join(r.command[1:]), "queries": r.queries, "qps": r.qps, "reads": r.reads,
        "writes": r.writes, "other": r.other, "reconnects": r.reconnects, "events": r.events,
        "latency_max_ms": r.latency_max_ms, "sysbench_p95_ms": r.latency_pct_ms,
        "tps_per_s": [i.tps for i in r.intervals], "total_time_s": r.total_time_s,
    }


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def filesystem_of(path: Path) -> str:
    import psutil

    best = ("", "")
    for p in psutil.disk_partitions(all=True):
        if str(path).startswith(p.mountpoint) and len(p.mountpoint) > len(best[0]):
            best = (p.mountpoint, p.fstype)
    return best[1]


@dataclass(frozen=True)
class StudyResult:
    study: MysqlSlowlogStudy
    runs: pd.DataFrame
    environment: dict
    switches: tuple[tuple[str, float], ...]


@contextlib.contextmanager
def prepared_server(base: Settings, *, mariadbd: str, tables: int, table_size: int, log_root: Path | None = None,
                    backend: str = "local", image: str | None = None):
    """A private MariaDB (local binaries or a container) with the sysbench tables loaded;
    yields (server, sysbench, seconds the load took)."""
    with contextlib.ExitStack() as stack:
        log_dir = cleanup.private_dir("logbench-log-", log_root or paths.scratch_root())
        stack.callback(shutil.rmtree, log_dir, True)
        if backend == "container":
            from ..servers.containers import ContainerMariaDB

            server = stack.enter_context(ContainerMariaDB(base, log_dir=log_dir, image=image, binary=mariadbd))
        else:
            server = stack.enter_context(mdb.LocalMariaDB(base, log_dir=log_dir, binary=mariadbd))
        server.query("CREATE DATABASE IF NOT EXISTS sbtest")
        sb = Sysbench(server.conninfo, tables=tables, table_size=table_size)
        prepare_s = sb.prepare(threads=2)
        yield server, sb, prepare_s


def run(study: MysqlSlowlogStudy, *, progress: bool = True) -> StudyResult:
    """Start a server, load the data, run every cell's schedule, stop and remove everything again."""
    switches: list[tuple[str, float]] = []
    with runner.terminate_as_interrupt(), prepared_server(
            study.base_for(study.regimes[0]), mariadbd=study.mariadbd, tables=study.tables,
            table_size=study.table_size, backend=study.backend, image=study.image) as (server, sb, prepare_s):
        data_bytes = int(server.query("SELECT COALESCE(SUM(data_length + index_length), 0) FROM "
                                      "information_schema.tables WHERE table_schema = 'sbtest'")[0][0])
        env = environment.collect(
            server_version=server.version(),
            tools=server_tools(study.mariadbd, server, sb),
            extra={"sysbench_prepare_s": prepare_s, "data_bytes": data_bytes, "backend": server.backend,
                   "image": getattr(server, "image", None), "flavor": server.flavor,
                   "log_dir_fs": filesystem_of(server.log_dir)},
        )
        runner.write_study(study, env)
        plans = {}
        for index, (regime, _) in enumerate(study.cells()):
            cell = study.for_cell(index)
            if server.base != study.base_for(regime):
                server.restart(base=study.base_for(regime))
            bench = SlowlogBench(cell, server, sb)
            if index > 0 and study.cells()[index - 1][0] != regime:
                bench.warm_after_restart()
            try:
                runs = runner.execute(cell, bench, env["env_id"], progress=progress)
            finally:
                switches += bench.switches
            plans[f"{index}:{cell.regimes[0]}/{cell.workloads[0]}"] = [p.__dict__ for p in cell.plan()]
        (Path(study.output_dir) / "schedule.json").write_text(json.dumps(plans, indent=1))
    result = StudyResult(study, runs, env, tuple(switches))
    if study.processed_dir is not None:
        write_processed(result, Path(study.processed_dir))
    return result


def server_tools(mariadbd: str, server: mdb.MariaDBServer, sb: Sysbench) -> dict[str, str]:
    """The environment's tool versions. In a container the image is one of them, so container runs
    never share an environment id with local runs of the same server version (they are not pooled)."""
    tools = {"sysbench": sb.version(), "mariadbd": environment.tool_version([mariadbd, "--version"])}
    if server.backend == "container":
        from ..servers.containers import image_id

        tools["image"] = f"{server.image} {image_id(server.image)}"
    return tools


# -- summaries -----------------------------------------------------------------------------------

def expand(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs with the cell keys and sysbench's extra numbers as columns."""
    out = runs.copy()
    ex = out["extra"]
    out["regime"] = ex.map(lambda e: e.get("regime"))
    out["test"] = out["workload"].str.replace("sysbench ", "", regex=False)
    out["qps"] = ex.map(lambda e: e.get("qps", np.nan)).astype(float)
    out["queries"] = ex.map(lambda e: e.get("queries", np.nan)).astype(float)
    out["server_cpu_us_per_query"] = 1e6 * out["server_cpu_s"] / out["queries"]
    out["log_bytes_per_query"] = out["log_bytes"] / out["queries"]
    # /dev/null: expected is kept in extra, received is unknowable (NaN, not 0).
    dev = ex.map(lambda e: "records_expected_uncounted" in e)
    out.loc[dev, "log_records_expected"] = ex[dev].map(lambda e: e["records_expected_uncounted"])
    out["log_records_received"] = out["log_records_received"].astype(float)
    out.loc[dev, "log_records_received"] = np.nan
    return out


def summary(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """Per regime × workload × configuration × clients: tps and qps mean ± CI, ratio to ``off`` ± Fieller CI,
    records, log rate and server CPU per query."""
    measured = expand(runs[~runs["warmup"].astype(bool)])
    environment.check_poolable(measured)
    out = stats.summarise(
        measured, by=["regime", "test", "configuration", "clients"], baseline=baseline,
        also=("qps", "latency_p95_ms", "latency_p99_ms", "log_records_expected", "log_records_received", "log_loss",
              "log_bytes_per_s", "log_bytes_per_query", "server_cpu_s", "server_cpu_us_per_query"),
    )
    order = {c: i for i, c in enumerate(CONFIGURATIONS)}
    rorder = {r: i for i, r in enumerate(REGIMES)}
    worder = {w: i for i, w in enumerate(WORKLOADS)}
    key = {"configuration": order, "regime": rorder, "test": worder}
    return out.sort_values(["regime", "test", "configuration", "clients"],
                           key=lambda s: s.map(key[s.name]) if s.name in key else s, ignore_index=True)


def tidy_runs(runs: pd.DataFrame) -> pd.DataFrame:
    return records.flatten(expand(runs))


def write_processed(result: StudyResult, processed_dir: Path) -> dict[str, Path]:
    return records.write_processed(NAME, processed_dir, result.environment,
                                   {"summary": summary(result.runs), "runs": tidy_runs(result.runs)})


def load_processed(processed_dir: Path = paths.PROCESSED) -> tuple[pd.DataFrame, pd.DataFrame]:
    return pd.read_csv(processed_dir / f"{NAME}.csv"), pd.read_csv(processed_dir / f"{NAME}_runs.csv")


def published_ratios(regime: str | None = None) -> pd.DataFrame:
    """Post 001's NOTPM ratios to its own 'No logging', keyed by our configuration names (and our regime names)."""
    try:
        from .. import reference
    except ImportError:
        return pd.DataFrame(columns=["regime", "configuration_key", "clients", "ratio"])
    pub = reference.published_ratios(POST)
    pub = pub[pub["configuration_key"].astype(str).isin(REFERENCE_KEYS)].copy()
    exp_regime = {e: r for r, exps in REFERENCE_EXPERIMENTS.items() for e in exps}
    pub["regime"] = pub["experiment"].astype(str).map(exp_regime)
    pub["configuration_key"] = pub["configuration_key"].astype(str).map(REFERENCE_KEYS)
    pub = pub[~pub["is_baseline"]]
    if regime is not None:
        pub = pub[pub["regime"] == regime]
    return pub[["regime", "experiment", "configuration_key", "clients", "value", "error", "ratio", "ratio_error",
                "published_ratio"]].reset_index(drop=True)


# -- tables and findings for the notebook ---------------------------------------------------------------

def configuration_table(study: MysqlSlowlogStudy) -> pd.DataFrame:
    """Each configuration: what it changes from the base, how it reaches the server, where it is counted."""
    rows = []
    for c in study.configurations:
        changed = {k: v for k, v in c.settings.items() if study.base.get(k) != v}
        rows.append({
            "configuration": c.name,
            "settings (over the base)": ", ".join(f"{k}={v}" for k, v in changed.items()) or "(base only)",
            "applied by": "restart" if c.settings.get("slow_query_log_file") == DEVNULL else "SET GLOBAL",
            "counted in": ", ".join(c.destinations) or ("not countable" if c.settings.get("slow_query_log_file") == DEVNULL else "–"),
            "what": CONFIGURATIONS[c.name][2],
        })
    return pd.DataFrame(rows).set_index("configuration")


def regime_table(study: MysqlSlowlogStudy) -> pd.DataFrame:
    rows = []
    for r in study.regimes:
        s = study.base_for(r)
        rows.append({"regime": r, "innodb_buffer_pool_size": s["innodb_buffer_pool_size"],
                     "innodb_flush_method": s.get("innodb_flush_method", "(server default)"),
                     "data (estimate)": f"{study.data_bytes_estimate / 2**20:.0f} MB "
                                        f"({study.tables} x {study.table_size} rows)"})
    return pd.DataFrame(rows).set_index("regime")


def design_summary(study: MysqlSlowlogStudy) -> dict[str, object]:
    per_cell = len(study.plan())
    return {
        "profile": study.profile, "backend": study.backend,
        "server": f"{study.flavor} ({study.image or study.mariadbd})", "cells": list(study.cell_names),
        "clients": list(study.clients), "repeats": study.repeats,
        "runs planned": per_cell * len(study.cells()), "duration (s)": study.duration,
        "warm-up per run (s)": study.warmup, "sampled slow log rate": study.sample_rate, "seed": study.seed,
        "output": str(study.output_dir),
    }


def environment_table(result: StudyResult) -> pd.DataFrame:
    env = result.environment
    kinds = pd.Series([k for k, _ in result.switches], dtype=object)
    secs = pd.Series([s for _, s in result.switches], dtype=float)
    rows = {
        "env_id": env["env_id"], "CPU": f"{env['cpu_model']} × {env['cpu_count']}", "kernel": env["kernel"],
        "clocksource": env["clocksource"], "server": env["server_version"], "sysbench": env["tools"].get("sysbench"),
        "data (MB)": round(env.get("data_bytes", 0) / 2**20, 1), "log file system": env.get("log_dir_fs"),
        "git commit": env["git_commit"],
    }
    for kind in ("reload", "restart"):
        sel = secs[kinds == kind]
        rows[f"{'SET GLOBAL' if kind == 'reload' else kind}s (n, median s)"] = (
            f"{len(sel)}, {sel.median():.3f}" if len(sel) else "0")
    return pd.Series(rows, name="value").to_frame()


def _ci(r: pd.Series, col: str, digits: int = 3) -> str:
    from ..plots import fmt_ci

    mean = r[col] if col in r.index else r[f"{col}_mean"]
    return fmt_ci(mean, r[f"{col}_ci_low"], r[f"{col}_ci_high"], int(r["n"]), digits)


def finding_overhead(summary: pd.DataFrame, baseline: str = BASELINE) -> str:
    """Per cell and concurrency: what logging every statement costs, and what is indistinguishable from off."""
    lines = []
    for (regime, test, clients), g in summary[summary["configuration"] != baseline].groupby(
            ["regime", "test", "clients"], sort=False):
        g = g.set_index("configuration")
        parts = []
        for name in ("slow_all", "slow_all_devnull", "general_log", "slow_all_table", "slow_sampled", "slow_1s"):
            if name in g.index:
                parts.append(f"`{name}` {_ci(g.loc[name], 'ratio')}")
        slower = [c for c in g.index if g.loc[c, "ratio_ci_high"] < 1]
        lines.append(f"- **{regime}-bound, {test}, {clients} client(s):** throughput / `off` = " + "; ".join(parts)
                     + (f". Slower than `off` with 95 % confidence: {', '.join(f'`{c}`' for c in slower)}."
                        if slower else ". None is slower than `off` with 95 % confidence."))
    return "\n".join(lines)


def finding_records(summary: pd.DataFrame) -> str:
    """Did each counted destination get every statement?"""
    g = summary[summary["log_records_expected_mean"].fillna(0) > 0]
    g = g[g["log_records_received_mean"].notna()]
    if not len(g):
        return "No configuration expected records."
    worst = g.loc[g["log_loss_mean"].abs().idxmax()]
    return (f"Across {len(g)} counted cells, the largest mean difference between records expected and written was "
            f"`{worst['configuration']}` ({worst['regime']}, {worst['test']}, {worst['clients']} clients): "
            f"{100 * worst['log_loss_mean']:.3g} % (positive: missing). The sampled log's expectation is "
            f"queries / rate, so its difference is sampling, not loss.")


def finding_rates(summary: pd.DataFrame) -> str:
    g = summary[summary["log_bytes_per_s_mean"].fillna(0) > 0]
    if not len(g):
        return "Nothing was logged."
    top = g.loc[g["log_bytes_per_s_mean"].idxmax()]
    return (f"The highest log rate was `{top['configuration']}` ({top['regime']}, {top['test']}, {top['clients']} "
            f"clients): {top['log_bytes_per_s_mean'] / 1e6:.3g} MB/s at {top['qps_mean']:,.0f} queries/s "
            f"({top['log_bytes_per_query_mean']:.0f} bytes per statement); the post saw ~10 MB/s at 20–25 k queries/s.")
