"""The paper's discussion (issue 22 part 4): what study 02's per-core sweep says to a DBA whose machine has more
cores than this one, and what the suite could not settle.

Logging every statement costs a server in two places: each backend formats and writes every record (a cost per
line, which more cores run side by side), and one process (the logging collector for the file destinations, the
one rsyslogd for syslog) takes in every record of every backend, and a server has one of each whatever its
cores. Where the lines per second stop growing while the clients per core double, that one process sets the
pace, and more cores would not raise it. This module reads that rate per destination and clients per core from
the committed cached run of study 02 and registers every number by reference to its CSV cell, as the abstract's
are (:mod:`logbench.analyze.headline`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..base.settings import aa_name

STEM = "pg_destinations"  # the cached run; its io_bound run is paced by the disk, not by a logger
COLUMN = "log_lines_per_s"
# log_destination values whose lines pass through the logging collector (with logging_collector = on); syslog's go
# from each backend to the daemon's socket
COLLECTED = {"stderr", "csvlog", "jsonlog"}


def rate_rows(summary: pd.DataFrame, baseline: str) -> list[str]:
    """The configurations that log (lines per second above 0 at some level), in the summary's order."""
    logs = summary[summary[f"{COLUMN}_mean"].fillna(0) > 0]
    return [c for c in dict.fromkeys(logs["configuration"]) if c not in (baseline, aa_name(baseline))]


def grows(lower: pd.Series, upper: pd.Series, column: str = COLUMN) -> bool:
    """True when the higher level's interval lies wholly above the lower level's: it still grew. Overlapping
    intervals are read as 'did not grow measurably', not as a test of equality."""
    return bool(upper[f"{column}_ci_low"] > lower[f"{column}_ci_high"])


def add_estimate(nums, key: str, of, factor: float, sig: int) -> str:
    """Register ``key``.estimate/.ci_low/.ci_high: ``of(part)`` is the spec of the summary's ``_mean``, ``_ci_low``
    or ``_ci_high`` value, printed times ``factor``."""
    for part in ("mean", "ci_low", "ci_high"):
        nums.add(f"{key}.{'estimate' if part == 'mean' else part}",
                 {"kind": "scale", "factor": factor, "sig": sig, "of": of(part)})
    return key


def collector_share(nums, src: Path, seconds: dict | None, cfg: str, clients: int, row: pd.Series) -> str | None:
    """The logging collector's CPU at ``clients`` as a percentage of one core (its CPU seconds per run over the
    run's seconds, ``seconds`` their spec), registered with its CI; None where the runs did not record it (before
    2026-11-25, or no collector: the syslog destinations alone)."""
    if ("collector_cpu_s_mean" not in row.index or pd.isna(row["collector_cpu_s_mean"]) or seconds is None
            or not COLLECTED & set(cfg.split(","))):
        return None
    return add_estimate(nums, f"discussion.{cfg}.collector", lambda part: {
        "kind": "div", "b": seconds, "a": {"kind": "cell", "source": src.name, "column": f"collector_cpu_s_{part}",
                                           "where": {"configuration": cfg, "clients": clients}}}, 100, 2)


def add(doc: dict, nums, processed_dir: Path, *, baseline: str = "none") -> None:
    """``doc["discussion"]``: one row per logging destination with its lines per second (in thousands, CI) at each
    clients level, and whether it still grew between the two highest levels; None without the study's files."""
    src = Path(processed_dir) / f"{STEM}.csv"
    env_file = Path(processed_dir) / f"{STEM}_environment.json"
    doc["discussion"] = None
    if not src.exists() or not env_file.exists():
        return
    runs_file = Path(processed_dir) / f"{STEM}_runs.csv"
    summary = pd.read_csv(src)
    if f"{COLUMN}_mean" not in summary.columns:
        return
    cores = json.loads(env_file.read_text()).get("cpu_count")
    levels = sorted(int(c) for c in summary["clients"].unique())
    if not cores or len(levels) < 2:
        return
    # a run's measured seconds (the study's duration), read once
    seconds = ({"kind": "agg", "source": runs_file.name, "column": "duration_s", "agg": "max"}
               if runs_file.exists() else None)
    run_s = float(pd.read_csv(runs_file, usecols=["duration_s"])["duration_s"].max()) if seconds else None

    def cell(column: str, cfg: str, clients: int):
        return lambda part: {"kind": "cell", "source": src.name, "column": f"{column}_{part}",
                             "where": {"configuration": cfg, "clients": clients}}

    rows = []
    for cfg in rate_rows(summary, baseline):
        here = summary[summary["configuration"] == cfg].set_index("clients")
        if not all(c in here.index for c in levels):
            continue
        cells = [add_estimate(nums, f"discussion.{cfg}.at{c}", cell(COLUMN, cfg, c), 0.001, 3) for c in levels]
        top = here.loc[levels[-1]]
        key = collector_share(nums, src, seconds, cfg, levels[-1], top)
        rows.append({"configuration": cfg, "cells": cells, "grew": grows(here.loc[levels[-2]], top),
                     "collector": key,
                     # its interval reaches a whole core: the one process could have been the limit by its CPU
                     "collector_whole": bool(key) and bool(top["collector_cpu_s_ci_high"] >= run_s)})
    base = summary[summary["configuration"] == baseline].set_index("clients")
    if not rows or not all(c in base.index for c in levels):
        return
    # Whether the cores themselves were the limit: the baseline's throughput between the same two levels
    for c in levels[-2:]:
        add_estimate(nums, f"discussion.{baseline}.at{c}", cell("tps", baseline, c), 0.001, 3)
    nums.add("discussion.cores", {"kind": "env", "source": env_file.name, "key": "cpu_count"})
    doc["discussion"] = {"levels": [{"clients": c, "per_core": f"{c / cores:g}"} for c in levels],
                         "upper": [f"{c / cores:g}" for c in levels[-2:]], "rows": rows,
                         "flat": [r["configuration"] for r in rows if not r["grew"]],
                         "grew": [r["configuration"] for r in rows if r["grew"]],
                         "baseline": [f"discussion.{baseline}.at{c}" for c in levels[-2:]],
                         "baseline_grew": grows(base.loc[levels[-2]], base.loc[levels[-1]], "tps"),
                         "collector": [r for r in rows if r["collector"]],
                         "collector_whole": any(r["collector_whole"] for r in rows)}


# Study 02's post000 run: the statements sampled to the collector's file (studies.pg_destinations.SAMPLED) beside the
# full log to the same file, per record (pg_destinations.per_record_cost).
SAMPLED_STEM, FULL = "pg_destinations_post000", "stderr"
PER_RECORD = ("server_cpu_us_per_record", "server_vol_per_record", "collector_vol_per_record")


def add_sampling(doc: dict, nums, processed_dir: Path) -> None:
    """``doc["sampling"]``: per clients level, each sampled arm's and the full log's server CPU and voluntary context
    switches per record (registered with their CIs), and the rates sampled; None without the per-record table."""
    src = Path(processed_dir) / f"{SAMPLED_STEM}_per_record.csv"
    doc["sampling"] = None
    if not src.exists():
        return
    table = pd.read_csv(src)
    arms = [c for c in dict.fromkeys(table["configuration"]) if c.startswith(f"{FULL}_sample_")]
    if not arms or FULL not in set(table["configuration"]):
        return
    env_file = Path(processed_dir) / f"{SAMPLED_STEM}_environment.json"
    cores = json.loads(env_file.read_text()).get("cpu_count") if env_file.exists() else None
    if not cores:
        return
    levels, above, woken = [], [], []
    for clients in sorted(int(c) for c in table["clients"].unique()):
        here = table[table["clients"] == clients].set_index("configuration")
        if FULL not in here.index:
            continue
        cells = []
        for cfg in [*arms, FULL]:
            if cfg not in here.index:
                continue
            keys = {}
            row = here.loc[cfg]
            at = {"configuration": cfg, "clients": clients, "per_core": f"{clients / cores:g}"}
            if cfg != FULL and _wholly_above(row, here.loc[FULL], "server_cpu_us_per_record"):
                above.append(at)
            if cfg != FULL and _wholly_above(row, here.loc[FULL], "collector_vol_per_record"):
                woken.append(at)
            for col in PER_RECORD:
                if f"{col}_mean" not in row.index or pd.isna(row[f"{col}_mean"]):
                    continue  # (runs before 2026-11-26 did not record the collector's switches)
                key = f"sampling.{cfg}.at{clients}.{col}"
                for part in ("mean", "ci_low", "ci_high"):
                    nums.add(f"{key}.{'estimate' if part == 'mean' else part}",
                             {"kind": "cell", "source": src.name, "column": f"{col}_{part}", "sig": 3,
                              "where": {"configuration": cfg, "clients": clients}})
                keys[col] = key
            nums.add(f"sampling.{cfg}.at{clients}.records", {"kind": "cell", "source": src.name, "sig": 2,
                                                              "column": "records_per_tx",
                                                              "where": {"configuration": cfg, "clients": clients}})
            cells.append({"configuration": cfg, "records": f"sampling.{cfg}.at{clients}.records", **keys})
        levels.append({"clients": clients, "per_core": f"{clients / cores:g}", "cells": cells})
    # an arm whose interval lies wholly above the full log's: a record cost more where fewer were logged
    # (and, the why, one whose collector slept on the pipe more often per record)
    doc["sampling"] = {"levels": levels, "full": FULL, "arms": arms, "above": above, "woken": woken,
                       "collector": any("collector_vol_per_record" in c for lv in levels for c in lv["cells"])} \
        if levels else None


def _wholly_above(row: pd.Series, other: pd.Series, col: str) -> bool:
    """``row``'s interval of ``col`` lies wholly above ``other``'s (False where either was not recorded)."""
    low, high = row.get(f"{col}_ci_low"), other.get(f"{col}_ci_high")
    return bool(pd.notna(low) and pd.notna(high) and low > high)
