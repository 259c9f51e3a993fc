"""Study 07: how much WAL does each wal_level write? (post 004, Cybertec, wal_level part, redone)

Two phases in one interleaved schedule (runner.SplitBench labels ``import/…`` and ``oltp/…``):

- **import** — a fresh instance per run at the level (the post's "freshly created test instance"), then
  ``pgbench -i -F 70`` one step at a time: WAL bytes (LSN difference and ``pg_stat_wal``), full-page images,
  import time per step, and whether the WAL-skip path was taken;
- **oltp** — one server restarted to change the level, a checkpoint before each run, a fixed number of
  transactions of pgbench's TPC-B-like default script: WAL bytes per transaction and tps.

Ratios replica/minimal and logical/replica (Fieller CIs, :mod:`logbench.base.stats`) stand beside the post's 35×.
The post's ``archive`` and ``hot_standby`` are both ``replica`` since PostgreSQL 9.6; ``logical`` is newer than
the post.

The study is a package (issue 24, the first one moved): ``spec`` (its declarations: what each level sets and the
load each phase runs, ``loads``), ``analysis`` (from recorded runs to tables and findings), ``study`` (define /
run). Layered spec <- analysis <- study, no cycle. It has no bench of its own (issue 39): it declares its loads (an
``Import`` on a fresh server per run, a counted TPC-B-like ``Workload``, WAL counted around both) and the shared
PostgreSQL bench runs them (``measure.benches.postgres``: ``load``, ``imports``, ``wal``). Its whole package is
the workflow's input for the study (``studies.sources``). What the registry, the notebook and the tests call is
re-exported here.
"""

from __future__ import annotations

from .analysis import (PAIRS, POST_IMPORT_RATIO, RATIO_METRICS, WalNumbers, environment_table, findings,
                       load_processed, measured, per_level, processed_tables, ratios, skip_path, steps, summary)
from .spec import BASELINE, LEVELS, NAME, PHASES, POST, PROFILES, SPEC, WalLevelStudy
from .study import define, design_summary, level_table, run

__all__ = [
    "BASELINE", "LEVELS", "NAME", "PAIRS", "PHASES", "POST", "POST_IMPORT_RATIO", "PROFILES", "RATIO_METRICS",
    "SPEC", "WalLevelStudy", "WalNumbers", "define", "design_summary", "environment_table", "findings",
    "level_table", "load_processed", "measured", "per_level", "processed_tables", "ratios", "run", "skip_path",
    "steps", "summary",
]
