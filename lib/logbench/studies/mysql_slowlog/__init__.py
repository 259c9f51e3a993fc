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

The study is a package (issue 24): ``spec`` (its declarations, profiles, study type, the post's numbers under our
names), ``bench`` (the runner's bench, a run's numbers, the IO-bound evidence, the settling before each run, the
io regime's memory limit), ``analysis`` (from recorded runs to tables and findings), ``study`` (define / run and
the plan's tables). Layered spec <- bench <- analysis <- study, no cycle. Its whole package is the workflow's input
for the study (``studies.sources``). What the registry, the notebook, the tests and other modules call is
re-exported here, every name the single module had.
"""

from __future__ import annotations

from ...servers.process import tree_cpu_seconds  # noqa: F401  (the tests read the server's CPU through it)
from .analysis import (POST_BYTES_PER_QUERY, between_versions, cores_of, environment_table, expand, finding_overhead,
                       finding_pace, finding_rates, finding_records, finding_standin, load_processed, pace_table,
                       pilot_vs_reached, processed_tables, summary, switchback_tables)
from .bench import (HISTORY_SHOWS_PURGE_FROM, PAGE_BYTES, SETTLE_STEP_S, SETTLE_TIMEOUT_S, SETTLED_CPU_SHARE,
                    SETTLED_HISTORY, SETTLED_READ_SHARE, SlowlogBench, SlowlogNumbers, connections,
                    expected_statement_records, history_shows_purge, hold, io_evidence, loss_defined)
from .spec import (BACKENDS, BASE, BASELINE, BYTES_PER_ROW, CELLS, CONFIGURATIONS, DEVNULL, NAME, PHYSICAL_ORDER,
                   POST, POST_CLIENTS, PROFILES, REFERENCE_EXPERIMENTS, REFERENCE_KEYS, REGIMES, SPEC, WORKLOADS,
                   MysqlSlowlogStudy, post_levels, published_ratios, size_bytes)
from .study import SERVER_OVERHEAD_MB, configuration_table, define, design_summary, regime_table, run

__all__ = [
    "BACKENDS", "BASE", "BASELINE", "BYTES_PER_ROW", "CELLS", "CONFIGURATIONS", "DEVNULL", "HISTORY_SHOWS_PURGE_FROM",
    "MysqlSlowlogStudy", "NAME", "PAGE_BYTES", "PHYSICAL_ORDER", "POST", "POST_BYTES_PER_QUERY", "POST_CLIENTS",
    "PROFILES", "REFERENCE_EXPERIMENTS", "REFERENCE_KEYS", "REGIMES", "SERVER_OVERHEAD_MB", "SETTLED_CPU_SHARE",
    "SETTLED_HISTORY", "SETTLED_READ_SHARE", "SETTLE_STEP_S", "SETTLE_TIMEOUT_S", "SPEC", "SlowlogBench",
    "SlowlogNumbers", "WORKLOADS", "between_versions", "configuration_table", "connections", "cores_of", "define",
    "design_summary", "environment_table", "expand", "expected_statement_records", "finding_overhead",
    "finding_pace", "finding_rates", "finding_records", "finding_standin", "history_shows_purge", "hold",
    "io_evidence", "load_processed", "loss_defined", "pace_table", "pilot_vs_reached", "processed_tables",
    "post_levels", "published_ratios", "regime_table", "run", "size_bytes", "summary", "switchback_tables",
    "tree_cpu_seconds",
]
