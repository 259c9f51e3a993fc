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

The post's IO-bound runs waited on its disks (1/43 of its cached throughput at 1
connection); this VM's disk answers in ~0.1 ms. So the io regime is paced as study 02's
``io_bound`` profile is (servers.memlimit): the server's processes in a memory cgroup
(page cache included), the data evicted from the page cache when the regime starts,
their reads from the data's disk capped (``read_iops``); each run records whether it
was IO-bound by its own counters (InnoDB buffer pool misses, the cgroup's disk reads).

Each (regime, workload) pair is one *cell*: the server restarts into the regime's
base settings once, then the runner's schedule interleaves every (configuration,
clients) pair in seeded random blocks. Ratios compare configurations within a
cell, never across cells.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import claim_rules, environment, params, paths, records, runner, stats
from ..benches import mariadb as mb
from ..benches.mariadb import BACKENDS  # noqa: F401  (the study's allowed backends)
from ..design import PlannedRun
from ..errors import ParameterError
from ..headline import Headline
from ..runner import Measurement
from ..servers import mariadb as mdb
from ..servers import memlimit
from ..servers.process import tree_cpu_seconds  # noqa: F401  (the tests read the server's CPU through it)
from ..settings import Configuration, Settings, validate_mariadb
from ..workloads.sysbench import Sysbench
from . import common

NAME = "mysql_slowlog"
POST = "001_4609e05799603b0a.txt"  # the post this study redoes (shared/seeds)
REGIMES = ("cpu", "io")
WORKLOADS = ("oltp_read_write", "oltp_point_select")
# A cell is one regime with one workload: "cpu/oltp_read_write".
CELLS = tuple(f"{r}/{w}" for r in REGIMES for w in WORKLOADS)
BASELINE = "off"
DEVNULL = "/dev/null"
BASE = mb.BASE  # post 001's [mysqld] section, logging off

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
# Pairs (cheaper, dearer) whose order is physical: the first does strictly less of the second's work (the same
# records to /dev/null instead of a file; far fewer records). The anomaly screen flags a cell where the first kept
# less throughput (logbench.anomalies).
PHYSICAL_ORDER = (("slow_all_devnull", "slow_all"), ("slow_1s", "slow_all"), ("slow_sampled", "slow_all"))
# Our names for the post's configuration keys (data/raw/reference/configurations.csv).
REFERENCE_KEYS = {"none": "off", "slow_log_1s": "slow_1s", "slow_log_all": "slow_all",
                  "slow_log_all_devnull": "slow_all_devnull"}
REFERENCE_EXPERIMENTS = {"cpu": ("001/cpu_bound", "001/cpu_bound_devnull"), "io": ("001/io_bound",)}
# Post 001's connections and its machine's cores (claim_rules.POST_CORES): its levels here are
# connections per core x this machine's cores (``post_levels``), as the claims map them.
POST_CLIENTS = (1, 20, 100)
# InnoDB bytes per sysbench row (data + secondary index), measured on MariaDB 10.11: sizes the regimes.
BYTES_PER_ROW = 250

PROFILES: dict[str, dict[str, object]] = {
    # seconds: what tests and nbval run; regime sizes are not checked (the plumbing is the point)
    "smoke": {"cells": ["cpu/oltp_point_select"], "clients": [2], "repeats": 2, "duration": 1,
              "warmup": 0, "tables": 1, "table_size": 2000, "buffer_pool_cpu": "64M", "buffer_pool_io": "8M",
              "restart_warmup": 0, "target_halfwidth": None},
    # the committed run: ~11 minutes on two cores (data ~100 MB); the post's two regimes with the DBT2
    # stand-in, and the highest statement rate (point selects) where the data is cached; the post's
    # 1 / 20 / 100 connections on 4 cores, mapped by connections per core (POST_CLIENTS)
    "standard": {"cells": ["cpu/oltp_read_write", "io/oltp_read_write", "cpu/oltp_point_select"],
                 "clients": [1, 10, 50], "repeats": 3, "duration": 2, "warmup": 0, "tables": 4,
                 "table_size": 100000, "buffer_pool_cpu": "512M", "buffer_pool_io": "16M", "restart_warmup": 2,
                 # The io regime paced as the post's disk made it wait (claim_rules.POST_001_IO_PACE): its IO-bound
                 # NOTPM was 1/43 of its cached at 1 connection (225 / 9,607). Here the cpu cell does ~920 tps at
                 # 1 client (~1.1 ms a transaction), so the target is ~21 tps (~46 ms a transaction, ~45 ms of it
                 # waiting on storage); a transaction misses the 16 MB buffer pool ~20 times (a smoke-sized run's
                 # counters: 18-25), so the reads are capped at 20 / 45 ms = 450 per second (that run: 18.8 tps
                 # at 1 client with slow_all, 1/44 of the cpu cell's). The limit (64 MB, two thirds of the data):
                 # the pool and the server's own memory, with no room for the data in the page cache (which the
                 # io regime's O_DIRECT bypasses anyway). A doubt: InnoDB's purge reads share the cap, so a run
                 # right after a 50-client run can fall far under the pace (that run: 1.6 tps at 1 client).
                 "memory_limit_mb": 64, "read_iops": 450,
                 # 8 configurations with the A/A control x 3 levels x 3 cells = 72 runs a block at ~2.65 s a
                 # run (the last committed run: 288 runs in 760 s, ~10 min in all): 3 blocks ~9.5 min, then up to
                 # 3 min of adaptive blocks (shared out over the cells); the paced io cell's runs end when their
                 # transactions in flight do, ~1.4 s longer at 50 clients (the smoke-sized run), ~+1 min in all
                 # -> ~11 min with the start and the data load
                 "target_halfwidth": 0.03, "time_budget_s": 180, "max_repeats": 8},
    # The switchback design (logbench.switchback, by SET GLOBAL inside one sysbench load per cell x level: ~20 min):
    # the arms a running session takes at once (benches.mariadb_switchback), the post's two cached cells at its
    # connections per core; per level four loads on a restarted server, 2 blocks of the 4 arms in 3 s windows
    # (four short loads, not two: two give the loads' random effect one degree of freedom, t = 12.7, whenever
    # their means differ more than their windows do; study 02 at 1 client, the same 8 windows: A/A +-43 % with
    # 2 x 4, +-5.9 % with 4 x 2)
    "switchback": {"cells": ["cpu/oltp_read_write", "cpu/oltp_point_select"], "clients": [1, 10, 50],
                   "configurations": ["off", "slow_all", "general_log"], "repeats": 3,
                   "duration": 2, "warmup": 3, "tables": 4, "table_size": 100000, "buffer_pool_cpu": "512M",
                   "buffer_pool_io": "16M", "restart_warmup": 2, "target_halfwidth": 0.03, "time_budget_s": 120,
                   "max_repeats": 8, "design": "switchback", "window_s": 3, "guard_s": 1, "layout": "permutation",
                   "blocks": 2, "loads": 4, "max_loads": 5},
    # paper-grade: longer runs, ~2 GB of data, the post's three concurrencies per core; the io regime's limit
    # and read cap as the standard profile's reasoning gives them for its 128 MB pool (to be calibrated by a run)
    "full": {"cells": list(CELLS), "clients": [1, 10, 50],
             "repeats": 5, "duration": 30, "warmup": 5, "tables": 8, "table_size": 1000000,
             "buffer_pool_cpu": "4G", "buffer_pool_io": "128M", "restart_warmup": 10,
             "memory_limit_mb": 192, "read_iops": 450,
             "target_halfwidth": 0.03, "time_budget_s": 3600, "max_repeats": 20},
}
# Issue 23's sweep (its own stem, common.stem): MariaDB 10.5, 10.11 and 11.8 (docker/servers.tsv), each in its
# container, one interleaved schedule per cell, each version its own baseline and A/A, never pooled. The cpu regime
# only: the io regime's pacing is a memory cgroup on a local server's processes, which cannot hold a container's.
# The post's four configurations (off, 1 s, all, all to /dev/null) and the A/A control; not the general log, the
# table or the sampled log (each would add ~2.5 min). ~17 min on two cores (estimate, from 2-version container runs
# of these cells, 2026-11-26): per cell 3 blocks of 5 configurations x 3 levels x 3 versions = 135 runs of ~2.85 s
# (oltp_read_write) / ~2.25 s (oltp_point_select), the 27 /dev/null runs ~3.5 s more each (a container restart
# ~1.1-1.8 s and the 2 s warm-up after it): ~8 + ~6.6 min; ~1.5 min to start the three containers and load the
# data; then at most 1 min of adaptive blocks.
PROFILES["versions"] = {
    "cells": ["cpu/oltp_read_write", "cpu/oltp_point_select"], "clients": [1, 10, 50],
    "configurations": ["off", "slow_1s", "slow_all", "slow_all_devnull"], "repeats": 3, "duration": 2, "warmup": 0,
    "tables": 4, "table_size": 100000, "buffer_pool_cpu": "512M", "buffer_pool_io": "16M", "restart_warmup": 2,
    "target_halfwidth": 0.03, "time_budget_s": 60, "max_repeats": 6, "versions": ["10.5", "10.11", "11.8"]}


def post_levels(cores: int, post_cores: int = claim_rules.POST_CORES["001"], post_clients: tuple[int, ...] = POST_CLIENTS) -> dict[int, int]:
    """The post's connection counts -> ours at the same connections per core (at least 1), the mapping
    the claims use (``claims.concurrency_here``): on 2 cores 1 -> 1, 20 -> 10, 100 -> 50."""
    return {k: max(1, int(round(k * cores / post_cores))) for k in post_clients}


def size_bytes(name: str, value: object) -> int:
    """'512M', '4G', '16384' -> bytes; ParameterError otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)\s*", str(value))
    if not m or isinstance(value, bool):
        raise ParameterError(name, value, "a size in bytes with an optional K/M/G suffix, e.g. '512M'")
    n, suffix = int(m.group(1)), m.group(2).lower()
    return n * (1024 ** ("kmg".index(suffix) + 1) if suffix else 1)


@dataclass(frozen=True, kw_only=True)
class MysqlSlowlogStudy(mb.MariaDBStudy):
    cell_names: tuple[str, ...]  # "regime/workload", in the order they run
    buffer_pool_cpu: str
    buffer_pool_io: str
    sample_rate: int
    restart_warmup: int  # seconds of unrecorded load after each restart (the warm-up runs only then)
    # The IO-bound regime's pacing (servers.memlimit): a memory cgroup limit (MB, page cache included) on the
    # server's processes while the io regime runs, and a cap on their reads per second from the data's disk.
    # None: not limited / not paced. ``pacing_off``: why the profile's pacing was dropped ('' when it was not).
    memory_limit_mb: int | None = None
    read_iops: int | None = None
    pacing_off: str = ""
    cell: int = -1  # -1: the whole study; >= 0: one (regime, workload) cell of it
    # The switchback design (logbench.switchback; benches.mariadb_switchback), or None for blocks.
    switchback: object = None

    def base_for(self, regime: str) -> Settings:
        """The post's regimes: a buffer pool over the data; or far under it with O_DIRECT."""
        if regime == "cpu":
            return self.base.merged({"innodb_buffer_pool_size": self.buffer_pool_cpu})
        return self.base.merged({"innodb_buffer_pool_size": self.buffer_pool_io, "innodb_flush_method": "O_DIRECT"})

    def resolved(self) -> "MysqlSlowlogStudy":
        """As mb.MariaDBStudy.resolved; a profile's pacing is dropped (and why recorded) where the backend resolves
        to a container, whose server the cgroup cannot hold (an explicit one was refused by define)."""
        study = super().resolved()
        if study.backend != "local" and study.memory_limit_mb is not None:
            study = dataclasses.replace(study, memory_limit_mb=None, read_iops=None,
                                        pacing_off=f"the {study.backend} backend (the limit is a cgroup on a local "
                                                   "server's processes)")
        return study

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
        # Each cell's execution adapts on its own; the study's time budget is shared out evenly.
        budget = None if self.time_budget_s is None else self.time_budget_s / len(self.cell_names)
        return dataclasses.replace(self, cell_names=(self.cell_names[index],), seed=seed, cell=index,
                                   time_budget_s=budget)

    @property
    def data_bytes_estimate(self) -> int:
        return self.tables * self.table_size * BYTES_PER_ROW


def define(profile: str = "standard", configurations: object = None, cells: object = None, tables: object = None,
           table_size: object = None, buffer_pool_cpu: object = None, buffer_pool_io: object = None,
           sample_rate: object = 100, restart_warmup: object = None, backend: str = "auto", image: object = None,
           mariadbd: object = None, design: object = None, window_s: object = None, guard_s: object = None,
           layout: object = None, blocks: object = None, loads: object = None, max_loads: object = None,
           memory_limit_mb: object = None, read_iops: object = None, versions: object = None,
           **shared: object) -> MysqlSlowlogStudy:
    """Check every parameter and freeze the study; raises ParameterError/SettingError before anything starts.
    ``shared``: the parameters every study has (common.SHARED: clients, repeats, duration, warmup, seed, ...).
    ``configurations`` and the switchback design's parameters: None takes the profile's (every configuration,
    the block design, where it has none). ``memory_limit_mb`` / ``read_iops``: the io regime's pacing (None: the
    profile's; 0 or "none": off); the profile's is dropped, with the reason recorded, where the backend is a
    container or this machine allows no cgroup; one asked for explicitly is checked and refused instead.
    ``versions``: MariaDB series (docker/servers.tsv) run side by side in containers, one interleaved schedule,
    each its own baseline and A/A (None: the profile's, if it has them; else one server)."""
    from .. import switchback
    from ..benches import mariadb_switchback

    d = common.profile_lookup(profile, PROFILES)
    own = PROFILES[profile]
    versions = own.get("versions") if versions is None else versions
    swept = None if versions is None else mb.check_versions(versions, backend, image)
    chosen = params.name_list("configurations", own.get("configurations", list(CONFIGURATIONS))
                              if configurations is None else configurations, CONFIGURATIONS)
    chosen = common.with_baseline(BASELINE, chosen)
    params.choice("backend", backend, BACKENDS)
    rate = params.positive_int("sample_rate", sample_rate)
    if rate < 2:
        raise ParameterError("sample_rate", rate, "a whole number >= 2 (log every n-th statement; 1 is slow_all)")
    engine = mb.mariadb_fields(backend=backend, image=image, mariadbd=mariadbd, tables=d("tables", tables),
                               table_size=d("table_size", table_size))
    if engine["flavor"] == "mysql" and "slow_sampled" in chosen:
        raise ParameterError("configurations", "slow_sampled",
                             "configurations without 'slow_sampled' on MySQL (log_slow_rate_limit is MariaDB's / "
                             "Percona Server's)")
    configs = []
    for name in chosen:
        settings, sinks, _ = CONFIGURATIONS[name]
        settings = {k: (rate if v is None else v) for k, v in settings.items()}
        settings = Settings.of("mariadb", settings)
        configs.append(Configuration(name, settings, sinks, mb.statement_records(settings)))
    study = MysqlSlowlogStudy(
        **common.study_fields(SPEC, profile, PROFILES, whole_seconds=True, **shared), **engine,
        configurations=tuple(configs),
        # Cells sharing a regime run next to each other: one restart per regime.
        cell_names=tuple(sorted(params.name_list("cells", d("cells", cells), CELLS), key=lambda c: (
            REGIMES.index(c.split("/")[0]), c))),
        buffer_pool_cpu=str(d("buffer_pool_cpu", buffer_pool_cpu)),
        buffer_pool_io=str(d("buffer_pool_io", buffer_pool_io)),
        sample_rate=rate, restart_warmup=params.non_negative_int("restart_warmup", d("restart_warmup", restart_warmup)),
    )
    sb = switchback.from_profile(own, design=design, lead_in_s=study.warmup, window_s=window_s, guard_s=guard_s,
                                 layout=layout, blocks=blocks, loads=loads, max_loads=max_loads)
    if sb is not None:
        if swept:
            raise ParameterError("design", "switchback", "'blocks' with a version sweep (versions): its servers "
                                 "interleave as separate runs")
        mariadb_switchback.check_switchable(study.configurations, study.base)
        study = dataclasses.replace(study, switchback=sb)
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
    study = _paced(study, own, memory_limit_mb, read_iops, io_pool)
    for r in study.regimes:
        validate_mariadb(study.base_for(r), study.mariadbd)
    for c in study.configurations:
        validate_mariadb(c.settings, study.mariadbd)
    if swept:
        study = mb.with_variants(study, [(f"mariadb{v}", study.backend, None, v) for v in swept])
    return study


# The server's own memory besides the buffer pool that the limit must leave room for; a server over its limit with
# no page cache left to reclaim is killed. What it allocated before it entered stays charged outside (cgroups move
# no charges): MariaDB 10.11 with a 16 MB pool at 50 connections had 3-19 MB charged inside (smoke run, 2026-11-25).
SERVER_OVERHEAD_MB = 48


def _paced(study: MysqlSlowlogStudy, own: dict, memory_limit_mb: object, read_iops: object,
           io_pool: int) -> MysqlSlowlogStudy:
    """The study with its io regime's pacing checked (servers.memlimit), before any server starts."""
    asked = memory_limit_mb is not None or read_iops is not None
    limit, iops = memlimit.limit_parameters(own.get("memory_limit_mb") if memory_limit_mb is None else memory_limit_mb,
                                            own.get("read_iops") if read_iops is None else read_iops,
                                            study.backend if asked else "local")
    if limit is None or "io" not in study.regimes:
        return dataclasses.replace(study, memory_limit_mb=None, read_iops=None)
    need = io_pool / 2**20 + SERVER_OVERHEAD_MB
    if limit < need:
        raise ParameterError("memory_limit_mb", limit, f"at least buffer_pool_io ({study.buffer_pool_io}) + "
                             f"{SERVER_OVERHEAD_MB} MB = {need:.0f} MB: the server's own memory counts against the "
                             "limit, and a server over it with no page cache left to reclaim is killed")
    if not asked and study.backend == "container":
        return dataclasses.replace(study, memory_limit_mb=None, read_iops=None,
                                   pacing_off="the container backend (the limit is a cgroup on a local server's "
                                              "processes)")
    try:
        # the server's data directory is made under the scratch root: its disk is the one whose reads are paced
        memlimit.check_machine(limit, iops, paths.scratch_root())
    except ParameterError as e:
        if asked:
            raise
        return dataclasses.replace(study, memory_limit_mb=None, read_iops=None, pacing_off=f"this machine ({e})")
    return dataclasses.replace(study, memory_limit_mb=limit, read_iops=iops)


def expected_statement_records(settings: Settings, queries: int) -> int:
    """Records a destination should get for ``queries`` plain-text statements under ``settings``."""
    return Configuration("", settings, records=mb.statement_records(settings)).expected_records(statements=queries)


@dataclass(frozen=True, kw_only=True)
class SlowlogNumbers(mb.SysbenchNumbers):
    """A run's own measurements (columns of the processed runs): sysbench's and these."""

    regime: str
    cell: int
    slow_file_bytes_during_run: int
    # Whether the run was IO-bound, by its own counters (io_evidence): InnoDB's page requests and the ones that
    # missed the buffer pool (SHOW GLOBAL STATUS before and after), and under the io regime's memory limit the
    # cgroup's: limit hits, page cache growth, reads from the paced disk and their rate.
    bp_read_requests: int
    bp_reads: int
    bp_miss_share: float
    measured_regime: str  # 'io_bound' | 'cached' | 'unverified' (misses, but no cgroup to say from where)
    memory_limit_hits: float = math.nan
    memory_usage_bytes: float = math.nan
    page_cache_growth_bytes: float = math.nan
    disk_reads: float = math.nan
    disk_reads_per_s: float = math.nan
    # SlowlogBench.settle: the unmeasured wait before the run for the previous run's purge (and, under the read cap,
    # its background reads), the purge backlog it found and the one the run inherited, and whether it settled.
    settle_s: float = math.nan
    history_at_end_of_previous: float = math.nan
    history_at_start: float = math.nan
    settled: bool = False  # (runs recorded before the wait existed: None)
    settle_on: str = "history"  # what said the previous run's work was done: 'history' or 'server_cpu' (before 10.6)


# SlowlogBench.settle: a run starts once the purge backlog is at most SETTLED_HISTORY and, under a read cap, the
# server read at most this share of the cap over the last step; never waiting longer than the timeout.
SETTLE_STEP_S = 0.5
SETTLED_HISTORY = 0
SETTLED_READ_SHARE = 0.05
SETTLE_TIMEOUT_S = 30.0
# MariaDB before 10.6 shrinks the history list it reports only when purge truncates the undo segments, every
# innodb_purge_rseg_truncate_frequency (128) batches: after a 50-client oltp_read_write run on 10.5.29 it stayed at
# 1528 for the whole 30 s timeout (containers, 2026-11-26), where 11.8.9's reached 0 within a second. There a run
# starts once the server's own CPU stays under this share of a core for a step: its background work is done.
HISTORY_SHOWS_PURGE_FROM = (10, 6)
SETTLED_CPU_SHARE = 0.05


def history_shows_purge(server_version: str) -> bool:
    """Whether the server's Innodb_history_list_length falls as purge works (10.6 and later; '' = the local one)."""
    m = re.match(r"(\d+)\.(\d+)", server_version or "")
    return not m or (int(m[1]), int(m[2])) >= HISTORY_SHOWS_PURGE_FROM


# InnoDB's page size (MariaDB's default innodb_page_size): the bytes one buffer pool miss reads.
PAGE_BYTES = 16384
_POOL_COUNTERS = ("Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads")


def io_evidence(pool0: dict[str, int], pool1: dict[str, int], mem0: dict | None, mem1: dict | None,
                seconds: float) -> dict[str, object]:
    """A run's IO-bound evidence (the SlowlogNumbers fields) from the counters before and after it: InnoDB's
    (SHOW GLOBAL STATUS) and, under a memory limit, the cgroup's (memlimit.MemoryLimit.stats; None: none)."""
    requests = pool1["Innodb_buffer_pool_read_requests"] - pool0["Innodb_buffer_pool_read_requests"]
    reads = pool1["Innodb_buffer_pool_reads"] - pool0["Innodb_buffer_pool_reads"]
    share = reads / requests if requests > 0 else math.nan
    out: dict[str, object] = {"bp_read_requests": requests, "bp_reads": reads, "bp_miss_share": share}
    if mem0 is None or mem1 is None:
        missed = requests > 0 and share >= memlimit.IO_BOUND_MISS_SHARE
        out["measured_regime"] = "unverified" if missed else "cached"
        return out
    hits = mem1["limit_hits"] - mem0["limit_hits"]
    growth = mem1["file_bytes"] - mem0["file_bytes"]
    disk = mem1["disk_reads"] - mem0["disk_reads"] if "disk_reads" in mem1 else None
    out.update(memory_limit_hits=hits, page_cache_growth_bytes=growth, memory_usage_bytes=mem1["usage_bytes"],
               measured_regime="io_bound" if memlimit.io_bound(reads, requests, limit_hits=hits, page_cache_growth=growth,
                                                               page_bytes=PAGE_BYTES, disk_reads=disk) else "cached")
    if disk is not None:
        out.update(disk_reads=disk, disk_reads_per_s=disk / seconds if seconds > 0 else math.nan)
    return out


class SlowlogBench(mb.SysbenchBench):
    """The MariaDB half of the runner's loop for one cell (see :class:`logbench.runner.Bench`); in the io regime
    under a memory limit (``memory_limit``), its server's processes are held in it, restarted or not."""

    def __init__(self, study: MysqlSlowlogStudy, server: mdb.MariaDBServer, sysbench: Sysbench,
                 memory_limit: memlimit.MemoryLimit | None = None):
        self.regime, test = study.regimes[0], study.workloads[0]
        super().__init__(study, server, sysbench, test, base=study.base_for(self.regime))
        self.memory_limit = memory_limit if self.regime == "io" else None
        self.table = mdb.TableSink(server)
        self._sinks: dict[str, object] = {
            "slow_file": mdb.slow_file_sink(server.slow_log),
            "general_file": mdb.general_file_sink(server.general_log),
            "slow_table": self.table,
        }

    def apply(self, configuration: Configuration):
        sw = super().apply(configuration)
        if sw.kind == "restart" and self.memory_limit is not None:
            hold(self.memory_limit, self.server)
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

    def pool_counters(self) -> dict[str, int]:
        """InnoDB's page requests and buffer pool misses so far (the quiet admin session: logged nowhere)."""
        rows = self.server.query("SHOW GLOBAL STATUS WHERE Variable_name IN (%s, %s)", _POOL_COUNTERS)
        got = {k.lower(): int(v) for k, v in rows}
        return {k: got[k.lower()] for k in _POOL_COUNTERS}

    def settle(self) -> dict[str, object]:
        """Wait (unmeasured) until the previous run's background work is done: InnoDB's purge has emptied the
        history list and, under a read cap, the server's processes read next to nothing for a step. Measured after
        a 50-client io run under the cap (2026-11-26): purge read at the full cap for ~2.5 s with 87 transactions
        of history, so a 2 s run started at once shared the cap with it (1.6-1.9 tps at 1 client, ~18 when
        quiet). Returns the seconds waited, the history the run would have inherited and whether it settled
        (False: SETTLE_TIMEOUT_S passed first; the run is still measured and says so). On a server whose history
        list does not show the purge's progress (history_shows_purge), the server's own CPU going quiet for a step
        stands for the history reaching 0 (``settle_on``)."""
        t0 = time.monotonic()
        capped = self.memory_limit is not None and bool(self.memory_limit.read_iops)
        by_cpu = not history_shows_purge(self.server_version)
        stepped = capped or by_cpu
        history0 = history = self.history_length()
        reads0 = self.memory_limit.reads() if capped else 0
        cpu0 = self.server_cpu() if by_cpu else 0.0
        while True:
            calm = True
            if stepped:
                time.sleep(SETTLE_STEP_S)
                if capped:
                    reads1 = self.memory_limit.reads()
                    calm, reads0 = reads1 - reads0 <= SETTLED_READ_SHARE * self.memory_limit.read_iops * SETTLE_STEP_S, reads1
                if by_cpu:
                    cpu1 = self.server_cpu()
                    calm, cpu0 = calm and cpu1 - cpu0 <= SETTLED_CPU_SHARE * SETTLE_STEP_S, cpu1
                history = self.history_length()
            settled = calm and (by_cpu or history <= SETTLED_HISTORY)
            if settled or time.monotonic() - t0 >= SETTLE_TIMEOUT_S:
                break
            if not stepped:
                time.sleep(SETTLE_STEP_S / 5)
                history = self.history_length()
        return {"settle_s": time.monotonic() - t0, "history_at_end_of_previous": history0,
                "history_at_start": history, "settled": settled, "settle_on": "server_cpu" if by_cpu else "history"}

    def history_length(self) -> int:
        """InnoDB's purge backlog: transactions whose undo is not yet purged (the quiet admin session)."""
        rows = self.server.query("SHOW GLOBAL STATUS WHERE Variable_name = 'Innodb_history_list_length'")
        return int(rows[0][1]) if rows else 0

    def measure(self, run: PlannedRun, seconds: float) -> Measurement:
        settled = self.settle()
        slow0 = mb.file_size(self.server.slow_log)
        pool0 = self.pool_counters()
        t0 = time.monotonic()
        mem0 = self.memory_limit.stats() if self.memory_limit is not None else None
        r = self.sysbench.run(self.test, run.clients, int(seconds), report_interval=1, seed=mb.run_seed(self.study, run))
        mem1 = self.memory_limit.stats() if self.memory_limit is not None else None
        counted_s = time.monotonic() - t0  # the disk's reads are counted over this, sysbench's start and end included
        if mem1 is not None and not self.memory_limit.read_iops:
            mem0.pop("disk_reads"), mem1.pop("disk_reads")  # no read limit: no cgroup counted the disk's reads
        cfg = self.study.configuration(run.configuration)
        extra = dataclasses.asdict(SlowlogNumbers(
            **mb.SysbenchNumbers.of(r), regime=self.regime, cell=self.study.cell,
            slow_file_bytes_during_run=mb.file_size(self.server.slow_log) - slow0,
            **io_evidence(pool0, self.pool_counters(), mem0, mem1, counted_s), **settled))
        if cfg.settings.get("slow_query_log_file") == DEVNULL:
            # Nothing to count in /dev/null: say what was expected and leave the received count out.
            extra["records_expected_uncounted"] = cfg.expected_records(
                statements=mb.statements_sent(r.queries, r.ignored_errors), connections=connections(run, r.reconnects))
            extra["note"] = "slow log written to /dev/null: records cannot be counted"
        return mb.measurement(r, run, extra)

    def sinks(self, configuration: Configuration) -> list:
        return [self._sinks[name] for name in configuration.destinations]

    def expected_records(self, configuration: Configuration, run: PlannedRun, m: Measurement) -> int:
        # connections count where the server logs each one's end (MariaDB 10.5's slow log: the configuration's
        # records, mb.statement_records by version); elsewhere their share is 0
        return configuration.expected_records(statements=mb.statements_sent(m.extra["queries"], m.failed),
                                              connections=connections(run, m.extra.get("reconnects", 0)))

    def loss_defined(self, configuration: Configuration) -> bool:
        return loss_defined(configuration.settings)

    def window_numbers(self, *, queries: int, qps: float) -> dict:
        """A switchback window's own numbers (the columns :class:`SlowlogNumbers` gives a block run)."""
        return {"regime": self.regime, "cell": self.study.cell, "queries": queries, "qps": qps,
                "command": f"{self.test} (one continuous load)"}


def connections(run: PlannedRun, reconnects: int = 0) -> int:
    """The connections a sysbench run opened: one per thread, and one more per reconnect it reported."""
    return int(run.clients) + int(reconnects or 0)


def hold(limit: memlimit.MemoryLimit, server: mdb.MariaDBServer) -> int:
    """The (re)started server into the memory limit, its data out of the page cache: the io regime starts cold;
    returns the bytes evicted."""
    limit.add_tree(server.pid)
    return memlimit.evict(server.datadir)


def loss_defined(settings: Settings) -> bool:
    """False for the sampled slow log: MariaDB keeps a statement when the *global* query id is a
    multiple of log_slow_rate_limit at the moment it is logged, so with concurrent sessions which
    and how many statements are kept depends on their interleaving (the standard run received
    14 % more than queries / rate at 8 clients; a CI smoke run at 2 clients 36 % fewer). Its
    expected count is an approximation, and a difference from it is not a loss: the loss is
    reported as not defined (NaN)."""
    return int(settings.get("log_slow_rate_limit", "1")) <= 1


def run(study: MysqlSlowlogStudy, *, progress: bool = True) -> common.StudyResult:
    """Start a server (one per version of a sweep), load the data, run every cell's schedule, stop and remove
    everything again."""
    def start(study, stack):
        if study.variants:
            servers, envs = {}, {}
            for label, *_ in study.variants:
                server, sb, envs[label] = mb.start(study.variant(label), stack, study.base_for(study.regimes[0]),
                                                   extra=lambda s: {**_data_bytes(s), **_pacing(study)})
                servers[label] = (server, sb)
            return (servers, None), {"variants": envs}
        server, sb, env = mb.start(study, stack, study.base_for(study.regimes[0]),
                                   extra=lambda s: {**_data_bytes(s), **_pacing(study)})
        limit = None
        if study.memory_limit_mb:
            # made now, entered by the server only when the io regime starts (the cpu regime runs unlimited)
            limit = stack.enter_context(memlimit.MemoryLimit(study.memory_limit_mb * 2**20, read_iops=study.read_iops,
                                                             read_limit_on=server.datadir))
        return ({"": (server, sb)}, limit), env

    return common.run_study(study, start, processed_tables, execute=_execute_cells, progress=progress)


def _data_bytes(server: mdb.MariaDBServer) -> dict:
    return {"data_bytes": int(server.query("SELECT COALESCE(SUM(data_length + index_length), 0) FROM "
                                           "information_schema.tables WHERE table_schema = 'sbtest'")[0][0])}


def _pacing(study: MysqlSlowlogStudy) -> dict:
    """The io regime's pacing as the environment record keeps it."""
    if study.memory_limit_mb:
        return {"io_memory_limit_bytes": study.memory_limit_mb * 2**20, "io_read_iops_limit": study.read_iops}
    return {"io_pacing_off": study.pacing_off} if study.pacing_off else {}


def _execute_cells(study: MysqlSlowlogStudy, started, env: dict, progress: bool):
    """Each cell in turn on the one server, or on each version's server behind one interleaved schedule
    (runner.SplitBench), each restarted into its regime's base when that changes."""
    servers, limit = started
    switches = []
    held = False
    env_id = env["env_id"] if "env_id" in env else next(iter(env["variants"].values()))["env_id"]
    for index, (regime, _) in enumerate(study.cells()):
        cell = study.for_cell(index)
        restarted = False
        for server, _ in servers.values():
            if server.base != study.base_for(regime):
                server.restart(base=study.base_for(regime))
                restarted = True
        if regime == "io" and limit is not None and (restarted or not held):
            # (InnoDB reads and writes its data O_DIRECT here, past the page cache; evict() writes and drops what
            # else the server's files left there; a limit exists for the one local server only)
            hold(limit, servers[""][0])
            held = True
        benches = {label: SlowlogBench(cell, server, sb, limit) for label, (server, sb) in servers.items()}
        if index > 0 and study.cells()[index - 1][0] != regime:
            for b in benches.values():
                b.warm_after_restart()
        bench = benches[""] if "" in benches else runner.SplitBench(benches, env["variants"])
        if study.switchback is not None:
            from .. import switchback
            from ..benches import mariadb_switchback

            _, sw = switchback.execute(cell, bench, env, progress, engine=mariadb_switchback.engine())
            switches += sw
            continue
        try:
            runs = runner.execute(cell, bench, env_id, progress=progress,
                                  schedule_key=f"{index}:{cell.regimes[0]}/{cell.workloads[0]}")
        finally:
            switches += common.switches_of(bench)
    if study.switchback is not None:
        runs = records.load(runner.runs_path(study))
    return runs, switches


# -- summaries -----------------------------------------------------------------------------------

def expand(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs with the cell keys, sysbench's and the study's own numbers (SlowlogNumbers) as columns."""
    out = common.measured_columns(runs, SlowlogNumbers)
    ex = out["extra"]
    out["test"] = out["workload"].str.replace("sysbench ", "", regex=False)
    out["server_cpu_us_per_query"] = 1e6 * out["server_cpu_s"] / out["queries"]
    out["log_bytes_per_query"] = out["log_bytes"] / out["queries"]
    # /dev/null: expected is kept in extra, received is unknowable (NaN, not 0).
    dev = ex.map(lambda e: "records_expected_uncounted" in e)
    out["log_records_received"] = out["log_records_received"].astype(float)
    if dev.any():  # (a run without /dev/null, e.g. the switchback design's arms, has nothing to replace)
        out.loc[dev, "log_records_expected"] = ex[dev].map(lambda e: e["records_expected_uncounted"])
        out.loc[dev, "log_records_received"] = np.nan
    return out


def summary(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """Per regime × workload × configuration × clients: tps and qps mean ± CI, ratio to ``off`` ± CI (block
    design: within blocks, stats.cell_ratio), records, log rate and server CPU per query."""
    from .. import switchwindows

    also = ("qps", "latency_p95_ms", "latency_p99_ms", "log_records_expected", "log_records_received", "log_loss",
            "log_bytes_per_s", "log_bytes_per_query", "server_cpu_s", "server_cpu_us_per_query")
    measured = expand(records.measured(runs))
    if switchwindows.is_switchback(measured):
        environment.check_poolable(measured)  # the cells' own summaries become one table: one environment
        # each cell its own loads: the switchback estimator per cell (never windows pooled across cells)
        out = pd.concat([common.switchback_summary(g, baseline, also, list(CONFIGURATIONS)).assign(
            regime=regime, test=test) for (regime, test), g in measured.groupby(["regime", "test"], sort=False)],
            ignore_index=True)
        out = out[["regime", "test", *[c for c in out.columns if c not in ("regime", "test")]]]
    else:
        # a version sweep's servers each against their own baseline, never pooled (one server: variant '')
        parts = []
        for variant, g in common.split_variant(measured).groupby("variant", sort=False):
            part = stats.summarise(g, by=["regime", "test", "configuration", "clients"], baseline=baseline,
                                   also=also, block="repeat")
            parts.append(part.assign(variant=variant)[["variant", *part.columns]] if variant else part)
        out = pd.concat(parts, ignore_index=True)
    keys = common.variant_keys(out, ["regime", "test", "configuration", "clients"])
    out = common.configuration_order(out, keys, {"configuration": list(CONFIGURATIONS), "regime": list(REGIMES),
                                                 "test": list(WORKLOADS)})
    return common.with_server_version(out, runs)


def pace_table(runs: pd.DataFrame) -> pd.DataFrame | None:
    """The io regime's pace beside the cpu regime's, per configuration and clients (the measured runs): median tps
    in each, their ratio (the post's was 1/43 at 1 connection: claim_rules.POST_001_IO_PACE), the io runs' buffer
    pool misses, the paced disk's reads per second, how many were IO-bound by their own counters, and the wait
    for the previous run's purge (SlowlogBench.settle): median and longest, and how many runs did not settle."""
    m = expand(common.split_variant(runs))
    if "regime" not in m or not (m["regime"] == "io").any():
        return None  # no io regime in this run (records.write_processed removes an earlier run's table)
    keys = common.variant_keys(m, ["test", "configuration", "clients"])
    cpu = m[m["regime"] == "cpu"].groupby(keys)["tps"].median().rename("cpu_tps_median")
    io = m[m["regime"] == "io"]
    out = io.groupby(keys, sort=False).agg(
        n=("tps", "size"), io_tps_median=("tps", "median"), miss_share_median=("bp_miss_share", "median"),
        disk_reads_per_s_median=("disk_reads_per_s", "median"),
        io_bound_runs=("measured_regime", lambda r: int((r == "io_bound").sum())),
        settle_s_median=("settle_s", "median"), settle_s_max=("settle_s", "max"),
        history_inherited_max=("history_at_start", "max"),
        unsettled_runs=("settled", lambda r: int((r == False).sum())))  # noqa: E712 (None: recorded before settling)
    out = out.join(cpu, on=keys)
    out["io_over_cpu"] = out["io_tps_median"] / out["cpu_tps_median"]
    first = ["n", "io_tps_median", "cpu_tps_median", "io_over_cpu"]
    return out[first + [c for c in out.columns if c not in first]].reset_index()


def finding_pace(pace: pd.DataFrame | None) -> str:
    """What the pace table says: whether the io regime waited on storage as the post's did."""
    if pace is None or pace.empty:
        return "No io regime in this run: nothing paced."
    want = claim_rules.POST_001_IO_PACE.want
    one = pace[pace["clients"] == pace["clients"].min()]
    ratios = ", ".join(f"{r.configuration} 1/{1 / r.io_over_cpu:.0f}" for r in one.itertuples() if r.io_over_cpu > 0)
    n, bound, unsettled = int(pace["n"].sum()), int(pace["io_bound_runs"].sum()), int(pace["unsettled_runs"].sum())
    return (f"**The io regime's pace.** At {one['clients'].iloc[0]} client the io cell ran at {ratios} of the cpu "
            f"cell's median tps (the post's IO-bound DBT2 at 1 connection: 1/{1 / want:.0f}). {bound} of {n} io runs "
            f"were IO-bound by their own counters (buffer pool misses served by the paced disk); the disk served a "
            f"median {pace['disk_reads_per_s_median'].median():.0f} reads/s. Each run started after the previous "
            f"one's purge (median wait {pace['settle_s_median'].median():.1f} s, longest "
            f"{pace['settle_s_max'].max():.1f} s; {unsettled} runs did not settle within "
            f"{SETTLE_TIMEOUT_S:.0f} s).")


def processed_tables(result: common.StudyResult) -> dict[str, pd.DataFrame]:
    between = between_versions(result.runs)
    return {"summary": summary(result.runs), "runs": records.flatten(common.with_variant(expand(result.runs))),
            "pace": pace_table(result.runs),
            **switchback_tables(result.study, result.runs),
            # a version sweep's (issue 23); None removes an earlier run's file
            "between_versions": between if len(between) else None}


def between_versions(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """A version sweep's question (issue 23), per cell: each later version's ratio to its own ``off`` over the
    first version's, per configuration and clients, with its CI over the interleaved blocks
    (common.variant_differences); empty for one server."""
    m = expand(records.measured(runs))
    parts = []
    for (regime, test), g in m.groupby(["regime", "test"], sort=False):
        d = common.variant_differences(g, baseline, list(CONFIGURATIONS))
        if len(d):
            parts.append(d.assign(regime=regime, test=test)[["regime", "test", *d.columns]])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def switchback_tables(study: MysqlSlowlogStudy, runs: pd.DataFrame) -> dict[str, pd.DataFrame | None]:
    """The switchback design's tables (switchwindows.processed_tables), cell by cell: a cell's switches and
    carryover are its own load's; None for a block-design run (an earlier switchback run's files are removed)."""
    from .. import switchwindows

    if not switchwindows.is_switchback(runs):
        return dict.fromkeys(switchwindows.PROCESSED_TABLES)
    expanded = expand(runs)
    parts: dict[str, list] = {k: [] for k in switchwindows.PROCESSED_TABLES if k != "pilot"}
    for (regime, test), g in expanded.groupby(["regime", "test"], sort=False):
        c = switchwindows.carryover_report(g, BASELINE)
        tables = {"switches": switchwindows.switch_table(g), "carryover": c["profile"],
                  "carryover_test": c["same_vs_changed"].merge(c["guard"], on="clients") if len(c["guard"]) else None}
        for k, t in tables.items():
            if t is not None and len(t):
                parts[k].append(t.assign(regime=regime, test=test))
    return {"pilot": _pilot(study), **{k: pd.concat(v, ignore_index=True) if v else None for k, v in parts.items()}}


def _pilot(study: MysqlSlowlogStudy) -> pd.DataFrame:
    """The pilot's table (switchwindows.pilot_table) with each cell by its name, first."""
    from .. import switchwindows

    pilot = switchwindows.pilot_table(study)
    if len(pilot) and "cell" in pilot:
        pilot.insert(0, "cell", pilot.pop("cell").map(lambda i: study.cell_names[int(i)]))
    return pilot


def pilot_vs_reached(study: MysqlSlowlogStudy, summary: pd.DataFrame) -> pd.DataFrame:
    """Per cell and clients level: the pilot's prediction beside what was reached (switchwindows.pilot_vs_reached;
    empty for the block design)."""
    from .. import switchwindows

    return switchwindows.pilot_vs_reached(_pilot(study), summary.assign(cell=summary["regime"] + "/" + summary["test"]),
                                          BASELINE, study.aa_configuration, ("cell", "clients"))


def load_processed(processed_dir: Path = paths.PROCESSED) -> tuple[pd.DataFrame, pd.DataFrame]:
    return common.load_processed(NAME, "summary", "runs", processed_dir=processed_dir)


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
    """Each configuration: what it changes from the base, how it reaches the server, where it is counted; for a
    version sweep, the records due per statement and per connection on each version (10.5 logs each
    connection's end too)."""
    rows = {}
    for c in study.configurations:
        label, _, name = c.name.rpartition(runner.SplitBench.SEP)
        changed = {k: v for k, v in c.settings.items() if study.base.get(k) != v}
        row = rows.setdefault(name, {
            "configuration": name,
            "settings (over the base)": ", ".join(f"{k}={v}" for k, v in changed.items()) or "(base only)",
            "applied by": "restart" if c.settings.get("slow_query_log_file") == DEVNULL else "SET GLOBAL",
            "counted in": ", ".join(c.destinations) or ("not countable" if c.settings.get("slow_query_log_file") == DEVNULL else "–"),
            "what": CONFIGURATIONS[name][2],
        })
        if label:
            row[f"records per statement; per connection ({label})"] = (
                f"{sum(r.per_statement for r in c.records):g}; {sum(r.per_connection for r in c.records):g}"
                if c.records else "–")
    return pd.DataFrame(list(rows.values())).set_index("configuration")


def regime_table(study: MysqlSlowlogStudy) -> pd.DataFrame:
    rows = []
    for r in study.regimes:
        s = study.base_for(r)
        paced = r == "io" and study.memory_limit_mb
        rows.append({"regime": r, "innodb_buffer_pool_size": s["innodb_buffer_pool_size"],
                     "innodb_flush_method": s.get("innodb_flush_method", "(server default)"),
                     "memory limit (MB, page cache included)": study.memory_limit_mb if paced else "–",
                     "disk reads per second (limit)": (study.read_iops or "–") if paced else "–",
                     "data (estimate)": f"{study.data_bytes_estimate / 2**20:.0f} MB "
                                        f"({study.tables} x {study.table_size} rows)"})
    return pd.DataFrame(rows).set_index("regime")


def design_summary(study: MysqlSlowlogStudy) -> dict[str, object]:
    per_cell = len(study.plan())
    server = (", ".join(f"{label}: {image or f'{study.flavor} {version}'}" for label, _, image, version in study.variants)
              if study.variants else f"{study.flavor} ({study.image or study.mariadbd})")
    return {
        "profile": study.profile, "backend": study.backend, "server": server, "cells": list(study.cell_names),
        "clients": list(study.clients), "repeats": study.repeats,
        "runs planned": per_cell * len(study.cells()), "duration (s)": study.duration,
        "warm-up per run (s)": study.warmup, "sampled slow log rate": study.sample_rate, "seed": study.seed,
        "output": str(study.output_dir),
    }


def environment_table(result: common.StudyResult) -> pd.DataFrame:
    env = result.environment
    # a version sweep: the rows of its first server (the machine's sysbench and disk are the same for all)
    env = next(iter(env["variants"].values())) if "variants" in env else env
    return common.environment_table(result, {
        "sysbench": env["tools"].get("sysbench"), "data (MB)": round(env.get("data_bytes", 0) / 2**20, 1),
        "log file system": env.get("log_dir_fs")}, reload_label="SET GLOBAL")


def finding_overhead(summary: pd.DataFrame, baseline: str = BASELINE) -> str:
    return common.per_variant_text(summary, _finding_overhead, baseline)


def _finding_overhead(summary: pd.DataFrame, baseline: str) -> str:
    """Per cell and concurrency: what logging every statement costs, and what is indistinguishable from off."""
    lines = []
    for (regime, test, clients), g in stats.logging_rows(summary, baseline).groupby(
            ["regime", "test", "clients"], sort=False):
        g = g.set_index("configuration")
        parts = []
        for name in ("slow_all", "slow_all_devnull", "general_log", "slow_all_table", "slow_sampled", "slow_1s"):
            if name in g.index:
                parts.append(f"`{name}` {common.ci(g.loc[name], 'ratio')}")
        slower = [c for c in g.index if g.loc[c, "ratio_ci_high"] < 1]
        lines.append(f"- **{regime}-bound, {test}, {clients} client(s):** throughput / `off` = " + "; ".join(parts)
                     + (f". Slower than `off` with 95 % confidence: {', '.join(f'`{c}`' for c in slower)}."
                        if slower else ". None is slower than `off` with 95 % confidence."))
    return "\n".join(lines)


def finding_records(summary: pd.DataFrame) -> str:
    return common.per_variant_text(summary, _finding_records)


def _finding_records(summary: pd.DataFrame) -> str:
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
    return common.per_variant_text(summary, _finding_rates)


def _finding_rates(summary: pd.DataFrame) -> str:
    g = summary[summary["log_bytes_per_s_mean"].fillna(0) > 0]
    if not len(g):
        return "Nothing was logged."
    top = g.loc[g["log_bytes_per_s_mean"].idxmax()]
    return (f"The highest log rate was `{top['configuration']}` ({top['regime']}, {top['test']}, {top['clients']} "
            f"clients): {top['log_bytes_per_s_mean'] / 1e6:.3g} MB/s at {top['qps_mean']:,.0f} queries/s "
            f"({top['log_bytes_per_query_mean']:.0f} bytes per statement); the post saw ~10 MB/s at 20–25 k queries/s.")


# Post 001's slow log: ~10 MB/s at 20–25k queries/s (claims.csv 001-cpu-rate) = 400–500 bytes per logged query.
POST_BYTES_PER_QUERY = (400, 500)


def cores_of(environment: dict) -> int:
    """The machine's cores from a run's environment record (a version sweep's: its first server's; one machine)."""
    return int((next(iter(environment["variants"].values())) if "variants" in environment else environment)["cpu_count"])


def finding_standin(summary: pd.DataFrame, cores: int) -> str:
    return common.per_variant_text(summary, _finding_standin, cores)


def _finding_standin(summary: pd.DataFrame, cores: int) -> str:
    """What sysbench standing in for DBT2 changes, with our bytes per logged statement from the summary,
    and the post's connection counts as they map here."""
    g = summary[(summary["configuration"] == "slow_all") & summary["log_bytes_per_query_mean"].notna()]
    per_test = g.groupby("test", sort=False)["log_bytes_per_query_mean"].median()
    ours = "; ".join(f"`{t}` {b:.0f} B" for t, b in per_test.items()) or "no `slow_all` runs"
    levels = ", ".join(f"{k} → {v}" for k, v in post_levels(cores).items())
    ran = sorted(int(c) for c in summary["clients"].unique())
    return (f"Bytes per logged statement (`slow_all`, median over cells and levels): {ours}; the post's "
            f"{POST_BYTES_PER_QUERY[0]}–{POST_BYTES_PER_QUERY[1]} B (10 MB/s at 20–25k queries/s). The post's "
            f"connections on its {claim_rules.POST_CORES['001']} cores at the same connections per core on this "
            f"machine's {cores}: {levels}; this run: {', '.join(map(str, ran))} clients.")


SPEC = common.StudySpec(
    name=NAME, engine="mariadb", title="MariaDB slow query log", post=POST, baseline=BASELINE,
    # the switchback run: its intervals are the study's narrowest (notebook 04)
    headline=Headline(stem=f"{NAME}_switchback", words="sysbench's point selects on cached data",
                      arms=(("slow_all", "to the slow log (every statement, to a file)"),
                            ("general_log", "to the general log (a file)")),
                      cell={"regime": "cpu", "test": "oltp_point_select"}),
    notebook="04_mysql_slowlog.ipynb", seed=20090210, published=lambda runs: published_ratios(),
    experiment="001/cpu_bound", committed={"profile": "standard", "backend": "local", "publish": True},
    extra_committed=({"profile": "switchback", "backend": "local", "publish": True},
                     {"profile": "versions", "backend": "container", "publish": True}),
    smoke=({"profile": "smoke", "backend": "local"}, {"profile": "smoke", "backend": "container"}), paper_order=2)
