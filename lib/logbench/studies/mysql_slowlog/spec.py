"""Study 04's declarations: its name, regimes, workloads and cells, the configurations, the profiles, the study
type, the post's numbers under our names and the registry spec (no measuring, no analysis).

The bottom of the package: the bench, the analysis and the study's plan all read these, so none imports another's
module for a constant.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...analyze import claim_rules
from ...measure.benches import mariadb as mb
from ...measure.benches import mariadb_switchback as msw
from ...measure.benches.mariadb import BACKENDS  # noqa: F401  (the study's allowed backends)
from ...base.errors import ParameterError
from ...analyze.headline import Headline
from ...base.settings import Settings
from ...workloads.workload import Workload
from .. import common

NAME = "mysql_slowlog"
POST = "001_4609e05799603b0a.txt"  # the post this study redoes (shared/seeds)
REGIMES = ("cpu", "io")
WORKLOADS = ("oltp_read_write", "oltp_point_select")
# Each workload's load, declared (issue 39): sysbench's test, its statements as plain text, counted by sysbench
# (the records a destination is due follow its count of statements sent: SlowlogBench.expected_records).
LOADS = {w: Workload.sysbench(w) for w in WORKLOADS}
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
# less throughput (logbench.analyze.anomalies).
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
    # The switchback design (logbench.measure.switchback, by SET GLOBAL inside one sysbench load per cell x level: ~20 min):
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

# Issue 40's schedules, from the planner (logbench.analyze.planning; `python -m logbench plan` prints its numbers) on the
# committed standard (blocks) and switchback runs. The switchback design wins at every cached level it has, but it
# cannot run the io cell (the paced, memory-limited server is the block design's) and a profile cannot mix designs per
# level (the switchback design is the study's). The standard stays the block schedule it was committed with: the
# planner's pick (2 blocks, the baseline and its A/A twice, Williams order; 694 s predicted, median ±0.14-0.58 across
# the nine levels, the goal of ±0.04 far out of a 15-minute block run's reach, σ 0.05-0.23 a 2 s run) left some cells
# without a baseline next to an arm once each cell drew its own seed (for_cell), and its committed run stopped there
# (2026-11-28); no layout of 2-3 blocks with 2-3 baselines passed every cell's seed, so none is declared. The resolution run
# (<= 60 min) is switchback, 8 loads x 4 blocks of 3 s windows (2878 s predicted, kept under 3000 s: the estimate does
# not see the pilots and the set-up before a level's first window, 4-17 % of the committed switchback runs' time):
# median and A/A within ±0.04 at every level but point selects at 10 clients (5 per vCPU), whose floor here is
# ~±0.07 (σ 0.149 a window, 44 % of it drift).
PROFILES["resolution"] = {**PROFILES["switchback"], "loads": 8, "blocks": 4, "max_loads": 8}
# Post 001's "safe to log slow queries with execution time bigger than a second" on the same design (issue 40: the
# claims read the design that resolves them). slow_1s cannot share a load with slow_all: long_query_time is read by a
# session at connect (benches.mariadb_switchback), so a load takes one value; here it is 1 s for the whole load and
# the arm switches slow_query_log alone. The resolution run's schedule (8 loads x 4 blocks a level), one arm fewer:
# ~3/4 of its 50 min.
PROFILES["resolution_1s"] = {**PROFILES["resolution"], "configurations": ["off", "slow_1s"]}
# Post 001's "/dev/null" (the cost of formatting every record without the file) on the same design. A log file's
# name is read at the server's start (SET GLOBAL refuses /dev/null: benches.mariadb_switchback), so every load's
# server starts with the slow log's file at /dev/null (base_for) and the arm switches slow_query_log alone, as
# resolution_1s does; off on that server logs nothing, as off anywhere. The same schedule, ~37 min.
PROFILES["resolution_devnull"] = {**PROFILES["resolution"], "configurations": ["off", "slow_all_devnull"]}
# Post 001's IO-bound claim on the design the io regime needs (blocks: the paced, memory-limited server is held by a
# cgroup over separate runs), with the blocks its noise asks for: the io cell alone, the post's three configurations
# and the A/A. A pilot here (2026-11-29, 3 blocks of 8 s runs, n = 3 a cell) gave a pooled sd of log tps of 0.10-0.13
# a run, no lower than the committed 2 s runs' 0.02-0.15 (the pace's drift, not the count of transactions): so 2 s
# runs, and 42 blocks for a model half-width near ±0.04 (2 x (2 x 0.09 / 0.04)^2 ~ 40). 504 runs of ~3 s, ~5.4 s
# apart with each run's settle: its committed run took 46 min (estimated 22 without the settle).
PROFILES["resolution_io"] = {**PROFILES["standard"], "cells": ["io/oltp_read_write"],
                             "configurations": ["off", "slow_1s", "slow_all"], "repeats": 42,
                             "target_halfwidth": None, "time_budget_s": None, "max_repeats": 42}

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
    # The switchback design (logbench.measure.switchback; benches.mariadb_switchback), or None for blocks.
    switchback: object = None

    def base_for(self, regime: str) -> Settings:
        """The post's regimes: a buffer pool over the data; or far under it with O_DIRECT. On the switchback design,
        with the log file names its arms share (read at the server's start, not switched)."""
        start = {} if self.switchback is None else msw.start_settings(self.configurations)
        if regime == "cpu":
            return self.base.merged({"innodb_buffer_pool_size": self.buffer_pool_cpu, **start})
        return self.base.merged({"innodb_buffer_pool_size": self.buffer_pool_io, "innodb_flush_method": "O_DIRECT",
                                 **start})

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

    @property
    def load(self) -> Workload:
        """The declared load (LOADS) of a cell's study: its workload's."""
        if len(self.workloads) != 1:
            raise ValueError(f"the loads of {len(self.workloads)} workloads: one cell's study (for_cell) has one")
        return LOADS[self.workloads[0]]

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


# (here, not in the analysis: the registry's SPEC reads it, and SPEC is the package's bottom)
def published_ratios(regime: str | None = None) -> pd.DataFrame:
    """Post 001's NOTPM ratios to its own 'No logging', keyed by our configuration names (and our regime names)."""
    try:
        from ...analyze import reference
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


SPEC = common.StudySpec(
    name=NAME, engine="mariadb", title="MariaDB slow query log", post=POST, baseline=BASELINE,
    # the resolution run, the one claim 001-cpu-all (logging every statement) is judged on (issue 42: the abstract and
    # the verdicts from the same design): 8 loads x 4 blocks a level, its model intervals the study's narrowest
    headline=Headline(stem=claim_rules.RESOLUTION_04, words="sysbench's point selects on cached data",
                      arms=(("slow_all", "to the slow log (every statement, to a file)"),
                            ("general_log", "to the general log (a file)")),
                      cell={"regime": "cpu", "test": "oltp_point_select"}),
    notebook="04_mysql_slowlog.ipynb", seed=20090210, published=lambda runs: published_ratios(),
    experiment="001/cpu_bound", committed={"profile": "standard", "backend": "local", "publish": True},
    extra_committed=({"profile": "switchback", "backend": "local", "publish": True},
                     {"profile": "versions", "backend": "container", "publish": True},
                     {"profile": "resolution", "backend": "local", "publish": True},
                     {"profile": "resolution_1s", "backend": "local", "publish": True},
                     {"profile": "resolution_devnull", "backend": "local", "publish": True},
                     {"profile": "resolution_io", "backend": "local", "publish": True}),
    versions_title="MariaDB: the slow-log configurations on the CPU-bound sysbench load (study 04)",
    smoke=({"profile": "smoke", "backend": "local"}, {"profile": "smoke", "backend": "container"}), paper_order=2)
