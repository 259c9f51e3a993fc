"""The cost model (issue 42): study 11's counted cost of one log record, mapped to time on the throughput studies'
host, predicts every logging cell's throughput ratio in studies 02, 04 and 05; each prediction stands beside the
measured ratio and its 95 % interval.

A pure function of ``data/processed``. Per logging arm and clients level:

- **records per transaction** are the arm's own, counted in its runs (records the server produced, over its
  transactions); nothing is assumed from the configuration's name;
- **per record**, for each process that handles it (the backend or MariaDB's connection thread, PostgreSQL's logging
  collector, the syslog daemon and, for remote syslog, the receiver on the same host): counted user-space
  instructions × the host's time per instruction + system calls × the write() floor at the record's size;
- **each engine's time per instruction** is study 11's calibration (the baseline backend's user CPU per counted
  instruction, timed on the machine study 11 ran on) carried to the throughput studies' host by the ratio of the two
  baselines' CPU per counted instruction, the same load at one client on both: PostgreSQL's study 02 baseline
  (pgbench -S), MariaDB's own study 04 baseline (oltp_point_select, its user share taken as PostgreSQL's: study 11
  timed no MariaDB load). A calibration on baselines only, never on a judged cell. Each table's own machine was
  tried too (the committed tables ran on an Intel Xeon and on AMD EPYCs, whose baselines differ by up to 2x): the
  logging CPU the cells measured at one client did not follow their baselines' speed (stderr's was the same on both
  processors while the baseline's was a fifth lower), and it made the held-out error worse, so it is not in the
  model;
- **which records each process takes**: the loader and the collector every record the server made, the local
  syslog daemon every record it was sent (it reads each before its rate limit drops it), a remote receiver only the
  records that arrived (counted in the cell's runs);
- **concurrency**: with fewer clients than cores (or an IO-bound profile) a transaction waits for its backend, so
  the backend's added time lengthens each client's cycle; the cores bound the rate at any level, every process's
  added CPU (the daemons' included) being demand on them beside the baseline's core time per transaction (where
  the cores were saturated); a single-threaded daemon holds at most one core: its records per second are at most
  one over its time per record, whatever the clients. The least of the three bounds is the prediction.

Two models. **counted**: nothing fitted on a logging arm, judged on every cell. **fitted**: one factor per process
(the record-making thread, the collector, the syslog daemon) on its counted time, from its measured CPU per
transaction on a stated subset (:data:`FIT_SUBSET`) only, judged on the other cells: the counts are user-space
work, and what the factor carries is the kernel's time and this host's speed on that code. The subset is
PostgreSQL's, so MariaDB's connection thread keeps its counted time in both. The held-out judgement
(:func:`summarise`) sets each model's median error and coverage beside the median error an exact model would show on
the same cells (:func:`noise_floor`: the measured intervals' own spread). Where a prediction misses,
:func:`missing_term` names the term the measured CPU points to, and :func:`diagnose` sets each cell's measured CPU and
the time its measured ratio implies beside the modelled time.

Where the misses fall by group of cells, and what the terms they name could buy and are priced at, is
:mod:`logbench.analyze.costterms`: read from the :class:`CostModel` this module returns; the model's own predictions
carry none of those terms.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ..base import paths, records
from ..base.errors import LogbenchError
from .daemons import one_core

RECORD_COST = "record_cost.csv"
RECORD_FIGURES = "record_cost_figures.csv"
# A version sweep's counts (each version in its release's container), read for the throughput sweeps' variants
VERSIONS_COST, VERSIONS_FIGURES = "record_cost_versions.csv", "record_cost_versions_figures.csv"
CALIBRATION = "record_cost_calibration.csv"

# The throughput tables the model predicts: (study, processed stem)
STUDIES: tuple[tuple[str, str], ...] = (
    ("02", "pg_destinations"), ("02", "pg_destinations_post000"), ("02", "pg_destinations_post004"),
    ("02", "pg_destinations_io_bound"), ("02", "pg_destinations_versions"), ("04", "mysql_slowlog"),
    ("04", "mysql_slowlog_switchback"), ("04", "mysql_slowlog_versions"), ("05", "pg_audit_timing"),
    ("05", "pg_audit_timing_switchback"),
)
# A version sweep's variant is priced by its version's counts (study 11's versions profile); a configuration that
# profile did not count (syslog) by this machine's server's, said in the cell's match. Every version is priced at
# the one host time per instruction: the containers ran on the same host, and no calibration timed them.
VERSIONED = {"pg_destinations_versions", "mysql_slowlog_versions"}
# The host's time per instruction is carried over from study 11 by this baseline: the same pgbench -S -M prepared
# load at one client as study 11's timed calibration loads.
HOST_BASELINE = ("pg_destinations", "none", 1)
# The cells the fitted variant's factors come from; every other cell is judged
FIT_SUBSET = {"stem": "pg_destinations", "clients": 1}
FIT_SUBSET_TEXT = "study 02's standard profile at 1 client"
# The goals on the judged cells
GOAL_MEDIAN_ERROR = 0.05
GOAL_COVERAGE = 0.80
# Keys that split a study's cells beyond (configuration, clients)
EXTRA_KEYS = ("regime", "test", "variant")
# Profiles whose transactions wait on the disk, not on the cores
IO_BOUND = {"pg_destinations_io_bound"}
# MariaDB's own calibration: study 04's baseline at one connection of the load study 11 counted for MariaDB (sysbench
# oltp_point_select, cached). Study 11 timed no MariaDB load, so the user share of that CPU is taken as PostgreSQL's.
MARIADB_HOST_BASELINE = ("mysql_slowlog", "off", 1)
MARIADB_REFERENCE = {"test": "oltp_point_select", "regime": "cpu"}


class MissingInput(LogbenchError, FileNotFoundError):
    """A processed table the cost model reads is not there."""

    def __init__(self, path: Path, made_by: str):
        self.path = Path(path)
        super().__init__(f"the cost model needs {self.path.name} (in {self.path.parent}), written by {made_by}; "
                         "run that study's committed profile or point processed_dir at a directory that has it")


@dataclass(frozen=True)
class Recipe:
    """How an arm's records map onto study 11's counted configurations."""

    parts: tuple[tuple[str, float], ...]  # (study 11 configuration, its records per statement): a mix by weight
    delta: tuple[str, str] | None = None  # (to, from): the per-record difference added (a destination's format)
    per_statement: tuple[str, ...] = ()  # study 11 configurations whose extra per statement (no record) is added
    collector: bool = True  # PostgreSQL's logging collector carries the records (else the backend writes the file)
    receiver: bool = False  # a remote syslog receiver on the same cores
    match: str = "counted as is"  # how near study 11's configuration is to the arm


def _pg_prepared() -> dict[str, Recipe]:
    same = {n: Recipe(((n, 1.0),)) for n in ("stderr", "csvlog", "jsonlog", "syslog", "syslog,csvlog")}
    return {**same,
            "remote_syslog_udp": Recipe((("remote_syslog_udp", 1.0),), receiver=True,
                                        match="counted as is; the receiver as the local syslog daemon's record"),
            "remote_syslog_tcp": Recipe((("remote_syslog_udp", 1.0),), receiver=True,
                                        match="nearest: UDP forwarding counted, TCP not; the receiver as the local "
                                              "syslog daemon's record"),
            "stderr_sample_1pct": Recipe((("sample_1pct", 1.0),)),
            "stderr_sample_10pct": Recipe((("sample_10pct", 1.0),))}


def _pg_simple(statement: bool) -> dict[str, Recipe]:
    note = ("nearest: a simple-protocol duration record stands for a statement record" if statement
            else "simple protocol counted for stderr")
    base = (("stderr_simple", 1.0),)
    return {"stderr": Recipe(base, match=note),
            "csvlog": Recipe(base, delta=("csvlog", "stderr"), match=f"{note}; csvlog's format added"),
            "syslog": Recipe(base, delta=("syslog", "stderr"), match=f"{note}; syslog's path added"),
            "remote_syslog_udp": Recipe(base, delta=("remote_syslog_udp", "stderr"), receiver=True,
                                        match=f"{note}; syslog forwarding added; the receiver as the local syslog "
                                              "daemon's record")}


_AUDIT_MIX = (("log_statement_all", 1.0), ("log_duration", 2.0))
_CSV = ("csvlog", "stderr")
RECIPES: dict[str, dict[str, Recipe]] = {
    "pg_destinations": _pg_prepared(),
    "pg_destinations_post000": _pg_prepared(),
    "pg_destinations_post004": _pg_simple(statement=True),
    "pg_destinations_io_bound": _pg_simple(statement=False),
    "pg_audit_timing": {
        "log_statement_all": Recipe((("log_statement_all", 1.0),), delta=_CSV, match="counted to stderr; csvlog's "
                                    "format added"),
        "log_duration": Recipe((("log_duration", 1.0),), delta=_CSV, match="counted to stderr; csvlog's format added"),
        "log_statement_all_duration": Recipe(_AUDIT_MIX, delta=_CSV, match="the two counted records mixed 1:2; "
                                             "csvlog's format added"),
        "log_statement_all_duration_io_timing": Recipe(_AUDIT_MIX, delta=_CSV, per_statement=("track_io_timing",),
                                                       match="as log_statement_all_duration, track_io_timing added"),
        "io_timing": Recipe((), per_statement=("track_io_timing",), match="no record: track_io_timing's counted "
                            "instructions per statement"),
        "log_statement_all_duration_pipe": Recipe(_AUDIT_MIX, match="the two counted records mixed 1:2"),
        "log_statement_all_duration_direct": Recipe(_AUDIT_MIX, collector=False,
                                                    match="the two counted records mixed 1:2, without the collector "
                                                          "(not counted so: the backend's write taken as a file's)"),
    },
    "mysql_slowlog": {
        "slow_all": Recipe((("slow_file", 1.0),)),
        "slow_1s": Recipe((("slow_file", 1.0),)),
        "slow_sampled": Recipe((("slow_file", 1.0),)),
        "slow_all_devnull": Recipe((("slow_file", 1.0),), match="nearest: the same record, counted to a file (its "
                                   "write floor a file's, not /dev/null's)"),
        "slow_all_table": Recipe((("slow_table", 1.0),)),
        "general_log": Recipe((("general_file", 1.0),)),
    },
}
RECIPES["pg_destinations_versions"] = _pg_prepared()
RECIPES["pg_audit_timing_switchback"] = RECIPES["pg_audit_timing"]
RECIPES["mysql_slowlog_switchback"] = RECIPES["mysql_slowlog_versions"] = RECIPES["mysql_slowlog"]
# Per engine: the process that makes a record (study 11's role) and the daemons that take it
LOADER = {"postgresql": "backend", "mariadb": "connection"}
DAEMONS = ("logger", "rsyslogd")


def read_table(processed: Path, name: str, made_by: str) -> pd.DataFrame:
    """A processed table the cost model needs, ``processed / name``: :class:`MissingInput` naming the run that makes
    it (``made_by``) where it is not there."""
    path = processed / name
    if not path.exists():
        raise MissingInput(path, made_by)
    return pd.read_csv(path)


# --- study 11: per record, per process --------------------------------------------------------------------------

def counted_costs(record_cost: pd.DataFrame, figures: pd.DataFrame) -> pd.DataFrame:
    """Per (engine, study 11 configuration, process): user-space instructions, system calls and bytes written per
    record, and the extra instructions per statement. The loader's system calls are its write-like calls (one per
    record, deterministic); a daemon's are all its calls (the reads and wake-ups are part of taking a record)."""
    rows = []
    for _, r in record_cost.iterrows():
        for role in (*LOADER.values(), *DAEMONS):
            inst = r.get(f"{role}_instructions_per_record")
            extra = r.get(f"{role}_extra_instructions_per_statement")
            if pd.isna(inst) and pd.isna(extra):
                continue
            if role in DAEMONS:
                f = figures[(figures["engine"] == r["engine"]) & (figures["configuration"] == r["configuration"])
                            & (figures["process"] == role) & (figures["metric"] == "syscalls")
                            & (figures["call"] == "all")]
                calls = float(f["per_record"].iloc[0]) if len(f) else np.nan
            else:
                calls = r.get(f"{role}_write_calls_per_record", np.nan)
            rows.append({"engine": r["engine"], "server": str(r.get("server", "")),
                         "configuration": r["configuration"], "process": role,
                         "instructions_per_record": _num(inst), "syscalls_per_record": _num(calls),
                         "bytes_per_record": _num(r.get(f"{role}_bytes_written_per_record")),
                         "extra_instructions_per_statement": _num(extra)})
    return pd.DataFrame(rows)


def _num(x) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return 0.0
    # a figure below its counting noise (a process that takes no record) is no cost
    return 0.0 if np.isnan(v) else v


@dataclass(frozen=True)
class Calibration:
    """Study 11's machine: time per instruction (µs) and the write() floor (µs per call) by target and size."""

    us_per_instruction: float
    cpu_per_transaction_us: float  # its baseline's user + system CPU per transaction, the same load as HOST_BASELINE
    floors: pd.DataFrame  # target, nbytes, value
    # the user-space instructions per statement counted for that baseline (NaN: record_cost.csv's ``none`` is read)
    instructions_per_statement: float = float("nan")

    def floor(self, target: str, nbytes: float) -> float:
        g = self.floors[self.floors["target"] == target]
        if g.empty:
            raise MissingInput(Path(CALIBRATION), f"study 11's calibration (no write floor for {target!r})")
        nb = 0.0 if not np.isfinite(nbytes) else nbytes
        return float(g.iloc[int((g["nbytes"] - nb).abs().to_numpy().argmin())]["value"])


def calibration(table: pd.DataFrame) -> Calibration:
    q = table.set_index("quantity")["value"]
    for need in ("time_per_instruction", "cpu_per_transaction"):
        if need not in q.index:
            raise MissingInput(Path(CALIBRATION), f"study 11's calibration (no {need!r} row)")
    floors = table[table["part"] == "write_floor"][["target", "nbytes", "value"]].astype({"nbytes": float})
    inst = float(q["instructions_per_statement"]) if "instructions_per_statement" in q.index else float("nan")
    return Calibration(float(q["time_per_instruction"]), float(q["cpu_per_transaction"]), floors, inst)


def baseline_counts(record_cost: pd.DataFrame, versions: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (engine, server, baseline configuration): the user-space instructions per statement study 11 counted for
    the loader of a load that logs nothing (this machine's servers and, where given, the version sweep's)."""
    rows = []
    for table in (record_cost, versions):
        if table is None:
            continue
        for _, r in table[pd.to_numeric(table["records_per_statement"], errors="coerce") == 0].iterrows():
            v = pd.to_numeric(pd.Series([r.get(f"{LOADER[r['engine']]}_instructions_per_statement")]),
                              errors="coerce").iloc[0] if r["engine"] in LOADER else np.nan
            if pd.notna(v) and v > 0:
                rows.append({"engine": r["engine"], "server": str(r.get("server", "")),
                             "configuration": r["configuration"], "instructions": float(v)})
    return pd.DataFrame(rows, columns=["engine", "server", "configuration", "instructions"])


def baseline_instructions(counts: pd.DataFrame, engine: str, configuration: str, variant: str = "") -> float:
    """The counted instructions per statement of a baseline: the variant's version where the sweep counted it, else
    this machine's server's; NaN where study 11 counted none."""
    c = counts[(counts["engine"] == engine) & (counts["configuration"] == configuration)]
    if variant:
        own = c[c["server"].map(_version) == _version(variant)]
        if len(own):
            return float(own["instructions"].iloc[0])
    local = c[c["server"].str.contains("local")] if len(c) else c
    return float((local if len(local) else c)["instructions"].iloc[0]) if len(c) else np.nan


def speed_of(cpu_per_statement_us: float, instructions: float, cal: Calibration) -> float:
    """A machine's time per instruction over study 11's: its baseline's CPU (user + system) per counted instruction
    over the calibration's, the same quantity on both machines (NaN where either is missing)."""
    ref = cal.cpu_per_transaction_us / cal.instructions_per_statement
    if not (np.isfinite(cpu_per_statement_us) and np.isfinite(instructions) and instructions > 0
            and np.isfinite(ref) and ref > 0):
        return np.nan
    return (cpu_per_statement_us / instructions) / ref


def per_record_us(recipe: Recipe, engine: str, costs: pd.DataFrame, cal: Calibration, us_per_instruction: float,
                  speed: float) -> dict[str, float]:
    """µs per record of each process on the host, and µs per statement that no record carries. ``speed`` scales
    the write floor from study 11's machine to the host, as the time per instruction is scaled."""
    c = costs[costs["engine"] == engine].set_index(["configuration", "process"])

    def fig(conf: str, role: str, col: str) -> float:
        return float(c.loc[(conf, role), col]) if (conf, role) in c.index else 0.0

    def mix(role: str, col: str) -> float:
        w = sum(wt for _, wt in recipe.parts)
        v = sum(wt * fig(conf, role, col) for conf, wt in recipe.parts) / w if w else 0.0
        if recipe.delta:
            v += fig(recipe.delta[0], role, col) - fig(recipe.delta[1], role, col)
        return v

    loader = LOADER[engine]
    out = {}
    into = "pipe" if engine == "postgresql" and recipe.collector else "file"
    out["loader"] = (mix(loader, "instructions_per_record") * us_per_instruction
                     + mix(loader, "syscalls_per_record") * cal.floor(into, mix(loader, "bytes_per_record")) * speed)
    for role, name in (("logger", "collector"), ("rsyslogd", "syslog")):
        n = mix(role, "instructions_per_record") if (role != "logger" or recipe.collector) else 0.0
        calls = mix(role, "syscalls_per_record") if (role != "logger" or recipe.collector) else 0.0
        out[name] = n * us_per_instruction + calls * cal.floor("file", mix(role, "bytes_per_record")) * speed
    # the receiver takes a forwarded record as the local daemon takes one: received and written to a file
    out["receiver"] = ((fig("syslog", "rsyslogd", "instructions_per_record") * us_per_instruction
                        + fig("syslog", "rsyslogd", "syscalls_per_record")
                        * cal.floor("file", fig("syslog", "rsyslogd", "bytes_per_record")) * speed)
                       if recipe.receiver else 0.0)
    out["per_statement"] = sum(fig(conf, loader, "extra_instructions_per_statement")
                               for conf in recipe.per_statement) * us_per_instruction
    return out


# --- the throughput studies: cells, their records and CPU ------------------------------------------------------

def run_extra(runs: pd.DataFrame, key: str) -> pd.Series:
    if "extra" not in runs.columns:
        return pd.Series(np.nan, index=runs.index)

    def get(x):
        try:
            return float(json.loads(x).get(key, np.nan)) if isinstance(x, str) else np.nan
        except (ValueError, TypeError, AttributeError):
            return np.nan
    return runs["extra"].map(get)


def cell_counts(runs: pd.DataFrame, extra_keys: tuple[str, ...] = ()) -> pd.DataFrame:
    """Per (configuration, clients, regime, test) of a study's measured runs: records per transaction (those the
    server produced: expected where the runner declared them, else received), the servers' CPU per transaction
    split into the backend (every server process but the collector), the collector and the syslog daemons. And the
    records received per transaction: what arrived at the destinations (a remote receiver takes only these)."""
    d = records.measured(runs).copy()
    # a version sweep's runs name their configuration "<variant>/<configuration>"
    conf = d["configuration"].astype(str)
    if "variant" in extra_keys and conf.str.contains("/").any():
        d["variant"] = conf.str.split("/").str[0]
    d["configuration"] = conf.str.split("/").str[-1]
    keys = ["configuration", "clients", *extra_keys]
    expected = pd.to_numeric(d["log_records_expected"], errors="coerce").fillna(0)
    received = pd.to_numeric(d["log_records_received"], errors="coerce").fillna(0)
    d["records"] = expected.where(expected > 0, received)
    d["received"] = received
    d["collector_s"] = run_extra(d, "collector_cpu_s")
    d["daemon_s"] = pd.to_numeric(d.get("logger_cpu_s"), errors="coerce")
    # the backends' voluntary context switches: the server's less its collector's (a run that recorded none: NaN)
    vcs = pd.to_numeric(d.get("server_ctx_voluntary", pd.Series(np.nan, index=d.index)), errors="coerce")
    d["backend_vcs"] = (vcs - run_extra(d, "collector_ctx_voluntary").fillna(0)).where(vcs >= 0)
    g = d.groupby(keys, dropna=False)
    out = pd.DataFrame({
        "records_per_tx": g["records"].sum() / g["transactions"].sum(),
        "received_per_tx": g["received"].sum() / g["transactions"].sum(),
        "server_cpu_us_per_tx": g["server_cpu_s"].sum() / g["transactions"].sum() * 1e6,
        "collector_cpu_us_per_tx": g["collector_s"].sum(min_count=1) / g["transactions"].sum() * 1e6,
        "daemon_cpu_us_per_tx": g["daemon_s"].sum(min_count=1) / g["transactions"].sum() * 1e6,
        "loss": g["log_loss"].mean() if "log_loss" in d.columns else np.nan,
        "backend_vcs_per_tx": g["backend_vcs"].sum(min_count=1) / g["transactions"].sum(),
    }).reset_index()
    out["backend_cpu_us_per_tx"] = out["server_cpu_us_per_tx"] - out["collector_cpu_us_per_tx"].fillna(0)
    return out


def _env_of(env: dict, variant: str) -> dict:
    """A table's environment record; a version sweep's, its variant's (every variant on one host)."""
    variants = env.get("variants", {})
    return variants.get(variant, next(iter(variants.values()), {})) if variants else env


def _baseline_name(summary: pd.DataFrame) -> str:
    return "off" if "off" in set(summary["configuration"]) else "none"


def study_cells(processed: Path, study: str, stem: str) -> pd.DataFrame:
    """Every cell of one processed table beside its baseline: measured ratio and CI, baseline tps, the counted
    records and the measured CPU per transaction of arm and baseline."""
    summary = read_table(processed, f"{stem}.csv", f"study {study}'s committed run")
    runs = read_table(processed, f"{stem}_runs.csv", f"study {study}'s committed run")
    env_file = processed / f"{stem}_environment.json"
    env = json.loads(env_file.read_text()) if env_file.exists() else {}
    # a version sweep keeps one record per variant, all on this host
    cores = int(env.get("cpu_count") or max([v.get("cpu_count", 0) for v in env.get("variants", {}).values()],
                                            default=0))
    if cores <= 0:
        raise MissingInput(env_file, f"study {study}'s committed run (its cpu_count)")
    keys = ["clients", *[k for k in EXTRA_KEYS if k in summary.columns]]
    counts = cell_counts(runs, tuple(keys[1:]))
    base_name = _baseline_name(summary)
    s = summary.merge(counts, on=["configuration", *keys], how="left")
    base = s[s["configuration"] == base_name][[*keys, "tps_mean", "server_cpu_us_per_tx", "backend_cpu_us_per_tx",
                                               "backend_vcs_per_tx"]]
    base = base.rename(columns={"tps_mean": "baseline_tps", "server_cpu_us_per_tx": "baseline_server_cpu_us_per_tx",
                                "backend_cpu_us_per_tx": "baseline_backend_cpu_us_per_tx",
                                "backend_vcs_per_tx": "baseline_backend_vcs_per_tx"})
    s = s.merge(base, on=keys, how="left")
    s = s[s["configuration"] != base_name].copy()
    s["study"], s["stem"], s["cores"] = study, stem, cores
    s["engine"] = "mariadb" if stem.startswith("mysql") else "postgresql"
    s["role"] = np.where(s["configuration"].str.endswith("_again"), "A/A control", "logging arm")
    for k in EXTRA_KEYS:
        s[k] = s[k].fillna("").astype(str) if k in s.columns else ""
    design = "switchback" if stem.endswith("_switchback") else "blocks"
    s["design"] = s["design"].fillna(design).astype(str) if "design" in s.columns else design
    s["cpu_model"] = s["variant"].map(lambda v: _env_of(env, v).get("cpu_model", "") or "")
    s["io_bound"] = (stem in IO_BOUND) | (s["regime"] == "io")
    # the cores' time per transaction where they were saturated: the highest baseline tps at a level with at least
    # as many clients as cores (same regime and test); what a level with fewer clients would cost them, too
    sat = base[base["clients"] >= cores].groupby([k for k in EXTRA_KEYS if k in base.columns], dropna=False)[
        "baseline_tps"].max() if any(k in base.columns for k in EXTRA_KEYS) else None
    if sat is None:
        top = base.loc[base["clients"] >= cores, "baseline_tps"]
        s["saturated_tps"] = top.max() if len(top) else np.nan
    else:
        s = s.merge(sat.rename("saturated_tps").reset_index(), on=list(sat.index.names), how="left")
    return s


# --- the model --------------------------------------------------------------------------------------------------

def with_instructions(cal: Calibration, counts: pd.DataFrame) -> Calibration:
    """The calibration with its baseline's counted instructions per statement: its own row where the calibration
    table has one, else record_cost.csv's PostgreSQL ``none`` (the load it timed)."""
    if np.isfinite(cal.instructions_per_statement):
        return cal
    return replace(cal, instructions_per_statement=baseline_instructions(counts, "postgresql", "none"))


def host_speed(processed: Path, cal: Calibration, engine: str = "postgresql") -> tuple[float, float]:
    """(speed, baseline CPU µs per statement) of an engine on the throughput studies' host: PostgreSQL's
    :data:`HOST_BASELINE` (study 02), MariaDB's own :data:`MARIADB_HOST_BASELINE` (study 04, oltp_point_select), each
    its baseline's CPU per counted instruction over study 11's (:func:`speed_of`). What the DBA's table and the
    command price a record at, and what every cell of that engine is priced at."""
    stem, conf, clients = HOST_BASELINE if engine == "postgresql" else MARIADB_HOST_BASELINE
    study = "02" if engine == "postgresql" else "04"
    runs = read_table(processed, f"{stem}_runs.csv", f"study {study}'s committed run")
    keys = tuple(k for k in MARIADB_REFERENCE if k in runs.columns) if engine == "mariadb" else ()
    c = cell_counts(runs, keys)
    row = c[(c["configuration"] == conf) & (c["clients"] == clients)]
    for k in keys:
        row = row[row[k].astype(str) == MARIADB_REFERENCE[k]]
    if row.empty:
        raise MissingInput(processed / f"{stem}_runs.csv",
                           f"study {study}'s committed run (its {conf} at {clients} client)")
    host = float(row["server_cpu_us_per_tx"].iloc[0])
    counts = baseline_counts(read_table(processed, RECORD_COST, "study 11's committed run"))
    speed = speed_of(host, baseline_instructions(counts, engine, "none"), with_instructions(cal, counts))
    if not np.isfinite(speed):
        raise MissingInput(processed / RECORD_COST, f"study 11's committed run (its {engine} baseline's count)")
    return speed, host


def _version(label: str) -> str:
    """'pg13' -> '13', 'mariadb10.5' -> '10.5', '13 (bullseye container)' -> '13'."""
    head = str(label).split()[0] if str(label).strip() else ""
    return head.lstrip("abcdefghijklmnopqrstuvwxyz")


def version_costs(costs: pd.DataFrame, versioned: pd.DataFrame | None, engine: str, variant: str
                  ) -> tuple[pd.DataFrame, set[str]]:
    """The counts a cell is priced by: its variant's version where the version sweep counted the configuration,
    else this machine's; with the configurations the version's own counts cover."""
    mine = costs[costs["engine"] == engine]
    if not variant or versioned is None:
        return mine, set()
    v = versioned[(versioned["engine"] == engine) & (versioned["server"].map(_version) == _version(variant))]
    own = set(v["configuration"])
    return pd.concat([v, mine[~mine["configuration"].isin(own)]], ignore_index=True), own


def demands(cells: pd.DataFrame, costs: pd.DataFrame, cal: Calibration, speed: float,
            versioned: pd.DataFrame | None = None, speeds: dict[str, float] | None = None) -> pd.DataFrame:
    """Each cell's µs per transaction of each process (factor 1), from its recipe and counted records, at its own
    engine's time per instruction on the host (``speeds``: :func:`host_speed`; ``speed`` for an engine it lacks,
    and for every cell when it is None). The loader and the collector take every
    record the server made, a remote receiver the records that arrived (counted in the cell's runs): a record the
    local daemon's rate limit dropped never leaves it. The local daemon is charged every record it was sent: it
    reads each before its limit drops it, and what a dropped record costs it was not counted (an upper bound where
    it drops)."""
    rows = []
    for _, c in cells.iterrows():
        recipe = RECIPES.get(c["stem"], {}).get(c["configuration"])
        if recipe is None or c["role"] != "logging arm":
            rows.append({"match": "" if recipe is None and c["role"] != "logging arm" else "no counted recipe"})
            continue
        sp = (speeds or {}).get(c["engine"], speed)
        mine, own = version_costs(costs, versioned, c["engine"], c["variant"])
        per = per_record_us(recipe, c["engine"], mine, cal, cal.us_per_instruction * sp, sp)
        r = float(c["records_per_tx"]) if pd.notna(c["records_per_tx"]) else 0.0
        got = float(c.get("received_per_tx", np.nan))
        arrived = min(r, got) if np.isfinite(got) else r
        used = {conf for conf, _ in recipe.parts} | set(recipe.delta or ()) | set(recipe.per_statement)
        said = "" if recipe.match == Recipe.match else f"{recipe.match}; "
        match = recipe.match if not c["variant"] else (
            f"{said}{c['variant']}'s own counts" if used <= own else
            f"{said}{', '.join(sorted(used - own))} counted on this machine's server, not {c['variant']}")
        rows.append({"match": match, "speed": sp,
                     "loader_us_per_tx": r * per["loader"] + per["per_statement"],
                     "collector_us_per_tx": r * per["collector"], "syslog_us_per_tx": r * per["syslog"],
                     "receiver_us_per_tx": arrived * per["receiver"],
                     "loader_us_per_record": per["loader"], "collector_us_per_record": per["collector"],
                     "syslog_us_per_record": per["syslog"]})
    return pd.concat([cells.reset_index(drop=True), pd.DataFrame(rows)], axis=1)


PROCESSES = ("loader", "collector", "syslog")  # the receiver is a syslog daemon: it takes the syslog factor
UNFITTED = {p: 1.0 for p in PROCESSES}


def predict(d: pd.DataFrame, factors: dict[str, float] = UNFITTED) -> pd.DataFrame:
    """The predicted ratio of each cell: the least of the latency bound (fewer clients than cores, or IO-bound),
    the cores' bound (not IO-bound) and each daemon's one-core ceiling. ``factors`` scale each process's time."""
    d = d.copy()
    k, cores, tps0 = d["clients"].astype(float), d["cores"].astype(float), d["baseline_tps"].astype(float)
    # the factors are fitted on PostgreSQL's processes (FIT_SUBSET): what one says of a backend says nothing of
    # MariaDB's connection thread, whose time stays the counted one
    engine = d["engine"] if "engine" in d.columns else pd.Series("postgresql", index=d.index)
    loader_factor = pd.Series(np.where(engine == "mariadb", 1.0, factors["loader"]), index=d.index)
    loader = d["loader_us_per_tx"].fillna(0) * loader_factor
    # a term priced apart (costterms.terms), added to the backend's time as it is: no factor was fitted on it
    if "term_us_per_tx" in d.columns:
        loader = loader + d["term_us_per_tx"].fillna(0)
    daemons = {"collector": d["collector_us_per_tx"].fillna(0) * factors["collector"],
               "syslog": d["syslog_us_per_tx"].fillna(0) * factors["syslog"],
               "receiver": d["receiver_us_per_tx"].fillna(0) * factors["syslog"]}
    total = loader + sum(daemons.values())
    io = d["io_bound"].astype(bool)
    latency_bound = (d["clients"] < d["cores"]) | io
    # a client's cycle is the baseline's (clients / tps) plus its backend's added time
    lat = pd.Series(np.where(latency_bound, k / (k / tps0 + loader * 1e-6), np.inf), index=d.index)
    # the cores' time per transaction at the baseline (cores / tps where they are saturated; below that level, the
    # saturated level's) plus every process's added CPU; an IO-bound baseline says nothing of its core time
    core_us = np.where(d["clients"] >= d["cores"], cores / tps0, cores / d["saturated_tps"].astype(float)) * 1e6
    cpu = pd.Series(np.where(io, np.inf, cores / ((core_us + total) * 1e-6)), index=d.index).fillna(np.inf)
    bound = np.minimum(lat, cpu)
    ceiling = pd.Series(np.inf, index=d.index)
    which = pd.Series("", index=d.index, dtype=object)
    for n, us in daemons.items():
        cap = pd.Series(np.where(us > 0, 1e6 / us.where(us > 0, 1.0), np.inf), index=d.index)
        which = which.where(cap >= ceiling, n)
        ceiling = np.minimum(ceiling, cap)
    tps = np.minimum(bound, ceiling)
    d["binding"] = np.where(ceiling < bound, "ceiling: one core of the " + which.astype(str),
                            np.where(lat <= cpu, "latency: the backend's added time", "CPU: the cores"))
    d["predicted_ratio"] = np.where(d["role"] == "logging arm", tps / tps0, np.nan)
    d["predicted_ratio"] = d["predicted_ratio"].where(d["match"] != "no counted recipe")
    d["added_us_per_tx"] = total
    for p in PROCESSES:
        d[f"{p}_factor"] = factors[p]
    d["loader_factor"] = loader_factor
    return d


def in_fit_subset(d: pd.DataFrame) -> pd.Series:
    m = pd.Series(True, index=d.index)
    for k, v in FIT_SUBSET.items():
        m &= d[k] == v
    return m & (d["role"] == "logging arm")


def measured_added(d: pd.DataFrame) -> pd.DataFrame:
    """Each process's measured added CPU per transaction (µs): the backend's (the server less its collector) over
    the baseline's, the collector's, the syslog daemons' (local and receiver)."""
    return pd.DataFrame({"loader": d["backend_cpu_us_per_tx"] - d["baseline_backend_cpu_us_per_tx"],
                         "collector": d["collector_cpu_us_per_tx"], "syslog": d["daemon_cpu_us_per_tx"]})


def fit_factors(d: pd.DataFrame) -> pd.DataFrame:
    """Per process, the factor on its counted time that its measured CPU per transaction says, fitted on the fit
    subset's cells only (least squares through the origin: measured = factor × counted); with its 95 % CI and n.
    The counts are user-space work: what the factor adds is the host's kernel time and its speed on this code."""
    import statsmodels.api as sm

    sub = d[in_fit_subset(d)]
    if sub.empty:
        raise LogbenchError(f"the cost model's fit subset ({FIT_SUBSET_TEXT}) has no logging cell")
    measured = measured_added(sub)
    if "term_us_per_tx" in sub.columns:
        # the backend's time a separately priced term accounts for is not the factor's to carry
        measured["loader"] = measured["loader"] - sub["term_us_per_tx"].fillna(0)
    model = {"loader": sub["loader_us_per_tx"], "collector": sub["collector_us_per_tx"],
             "syslog": sub["syslog_us_per_tx"] + sub["receiver_us_per_tx"]}
    rows = []
    for p in PROCESSES:
        x, y = model[p].astype(float), measured[p].astype(float)
        ok = (x > 0) & y.notna()
        if ok.sum() < 2:
            rows.append({"process": p, "factor": 1.0, "ci_low": np.nan, "ci_high": np.nan, "n": int(ok.sum())})
            continue
        fit = sm.OLS(y[ok].to_numpy(), x[ok].to_numpy()).fit()
        lo, hi = fit.conf_int()[0]
        rows.append({"process": p, "factor": float(fit.params[0]), "ci_low": float(lo), "ci_high": float(hi),
                     "n": int(ok.sum())})
    return pd.DataFrame(rows)


# Names of the terms a prediction can miss, by the process whose measured CPU the model falls short of (the paper
# explains each: kernel time and contention beyond the counted user-space work, the collector's pipe reads and
# wake-ups, the syslog daemon's kernel time and threads)
TERMS = {"backend": "backend CPU beyond the counted", "collector": "collector CPU beyond the counted",
         "syslog": "syslog daemon CPU beyond the counted"}
TERM_WAIT = "waiting, not CPU (pipe, socket, lock)"
TERM_OVER = "counted cost above the timed"
TERM_LOSS = "syslog rate limit dropped records"


def missing_term(row: pd.Series) -> str:
    """The term that the measured CPU says the prediction lacks, where the prediction misses (outside the measured
    CI and off by more than the goal); empty where it does not."""
    p, m, lo, hi = row["predicted_ratio"], row["ratio"], row["ratio_ci_low"], row["ratio_ci_high"]
    if pd.isna(p) or pd.isna(m):
        return ""
    if lo <= p <= hi or abs(p - m) <= GOAL_MEDIAN_ERROR:
        return ""
    if pd.notna(row.get("loss")) and row["loss"] > 0.5:
        return TERM_LOSS
    if p < m:
        return TERM_OVER
    gaps = {"backend": row["backend_cpu_us_per_tx"] - row["baseline_backend_cpu_us_per_tx"]
            - row["loader_us_per_tx"] * row["loader_factor"],
            "collector": row["collector_cpu_us_per_tx"] - row["collector_us_per_tx"] * row["collector_factor"],
            "syslog": row["daemon_cpu_us_per_tx"] - (row["syslog_us_per_tx"] + row["receiver_us_per_tx"])
            * row["syslog_factor"]}
    gaps = {k: v for k, v in gaps.items() if pd.notna(v)}
    needed = row["added_us_per_tx"] * (p / m - 1) if m > 0 else np.nan
    worst = max(gaps, key=gaps.get) if gaps else None
    if worst is None or not gaps[worst] > 0 or (pd.notna(needed) and gaps[worst] < 0.25 * needed):
        return TERM_WAIT
    return TERMS[worst]


COLUMNS = ["study", "stem", "regime", "test", "variant", "configuration", "clients", "cores", "model", "judged",
           "records_per_tx", "baseline_tps", "loader_us_per_record", "collector_us_per_record",
           "syslog_us_per_record", "loader_us_per_tx", "collector_us_per_tx", "syslog_us_per_tx",
           "receiver_us_per_tx", "loader_factor", "collector_factor", "syslog_factor", "binding", "predicted_ratio",
           "ratio", "ratio_ci_low", "ratio_ci_high", "error", "in_ci", "missing_term", "match", "env_id",
           "engine", "n", "design", "cpu_model", "speed", "destination", "received_per_tx", "added_us_per_tx",
           "measured_added_cpu_us_per_tx", "implied_added_us_per_tx"]
SUMMARY_COLUMNS = ["model", "fitted_on", "study", "judged_cells", "median_abs_error", "in_ci_share",
                   "goal_median_abs_error", "goal_in_ci_share", "goals_met", "exact_model_median_abs_error",
                   "exact_model_ci_low", "exact_model_ci_high"]
FACTOR_COLUMNS = ["process", "factor", "ci_low", "ci_high", "n", "fitted_on", "us_per_instruction", "host_speed",
                  "host_cpu_per_statement_us", "calibration_us_per_instruction", "calibration_cpu_per_statement_us",
                  "calibration_instructions_per_statement", "host_cpu", "calibration_cpu",
                  "mariadb_us_per_instruction", "mariadb_host_speed", "mariadb_cpu_per_statement_us",
                  "mariadb_instructions_per_statement", "mariadb_cpu"]
# The destinations a DBA chooses between, as study 11 counted them: (engine, configuration, what it is)
RULE_ROWS = (("postgresql", "stderr", "PostgreSQL, stderr to a file through the collector"),
             ("postgresql", "csvlog", "PostgreSQL, csvlog"), ("postgresql", "jsonlog", "PostgreSQL, jsonlog"),
             ("postgresql", "syslog", "PostgreSQL, local syslog (rsyslogd to a file)"),
             ("postgresql", "remote_syslog_udp", "PostgreSQL, syslog forwarded over UDP (receiver not counted)"),
             ("postgresql", "log_statement_all", "PostgreSQL, log_statement = all (stderr)"),
             ("postgresql", "log_duration", "PostgreSQL, log_duration (stderr)"),
             ("mariadb", "slow_file", "MariaDB, slow log to a file"), ("mariadb", "slow_table", "MariaDB, slow log to "
                                                                                                "its table"),
             ("mariadb", "general_file", "MariaDB, general log to a file"))
RULE_COLUMNS = ["engine", "configuration", "what", "loader_instructions_per_record",
                "collector_instructions_per_record", "syslog_instructions_per_record", "loader_syscalls_per_record",
                "daemon_syscalls_per_record", "model", "loader_us_per_record", "collector_us_per_record",
                "syslog_us_per_record", "us_per_record", "us_per_record_ci_low", "us_per_record_ci_high",
                "daemon_records_per_s", "daemon_records_per_s_ci_low", "daemon_records_per_s_ci_high"]


@dataclass(frozen=True)
class CostModel:
    cells: pd.DataFrame  # every logging cell, predicted by each model, beside the measured ratio
    summary: pd.DataFrame  # held-out accuracy per model, study and overall
    factors: pd.DataFrame  # the fitted variant's factors, with the host's time per instruction
    rule: pd.DataFrame  # per destination: instructions and µs per record, a daemon core's records per second
    # what the model's misses are read from (logbench.analyze.costterms): the logging cells with their counted
    # demands, as evaluate() takes them, and both models' predictions with every column (``cells`` is COLUMNS of it)
    demands: pd.DataFrame
    predictions: pd.DataFrame


def cost_model(processed_dir: Path | str = paths.PROCESSED) -> CostModel:
    """Every logging cell of :data:`STUDIES` predicted by the counted model (nothing fitted: judged on every cell)
    and by the fitted one (each process's factor from its measured CPU on :data:`FIT_SUBSET`: judged on the other
    cells), their held-out accuracy, the factors and the per-record rule; where they miss, and the terms that
    might close it, are :mod:`logbench.analyze.costterms`'s, read from the cells and predictions kept here.
    MissingInput names the first processed table that is not there."""
    processed = Path(processed_dir)
    cal = calibration(read_table(processed, CALIBRATION, "study 11's committed run (its calibration)"))
    record_cost = read_table(processed, RECORD_COST, "study 11's committed run")
    costs = counted_costs(record_cost, read_table(processed, RECORD_FIGURES, "study 11's committed run"))
    cells = pd.concat([study_cells(processed, study, stem) for study, stem in STUDIES], ignore_index=True)
    versioned = versions = None
    if (cells["stem"].isin(VERSIONED)).any():
        versions = read_table(processed, VERSIONS_COST, "study 11's versions run")
        versioned = counted_costs(versions, read_table(processed, VERSIONS_FIGURES, "study 11's versions run"))
    baselines = baseline_counts(record_cost, versions)
    cal = with_instructions(cal, baselines)
    speed, host_us = host_speed(processed, cal)
    speeds = {"postgresql": speed}
    mariadb = (np.nan, np.nan)
    if (cells["engine"] == "mariadb").any():
        mariadb = host_speed(processed, cal, "mariadb")
        speeds["mariadb"] = mariadb[0]
    d = demands(cells, costs, cal, speed, versioned, speeds)
    d = d[d["role"] == "logging arm"].reset_index(drop=True)
    out, factors = evaluate(d)
    fitted = dict(zip(factors["process"], factors["factor"]))
    # study 11 and the throughput studies may have run on different processors: said beside the carried-over time
    factors = factors.assign(fitted_on=FIT_SUBSET_TEXT, us_per_instruction=cal.us_per_instruction * speed,
                             host_speed=speed, host_cpu_per_statement_us=host_us,
                             calibration_us_per_instruction=cal.us_per_instruction,
                             calibration_cpu_per_statement_us=cal.cpu_per_transaction_us,
                             calibration_instructions_per_statement=cal.instructions_per_statement,
                             host_cpu=records.processor_of(processed, HOST_BASELINE[0]),
                             calibration_cpu=records.processor_of(processed, "record_cost"),
                             mariadb_us_per_instruction=cal.us_per_instruction * mariadb[0],
                             mariadb_host_speed=mariadb[0], mariadb_cpu_per_statement_us=mariadb[1],
                             mariadb_instructions_per_statement=baseline_instructions(baselines, "mariadb", "none"),
                             mariadb_cpu=records.processor_of(processed, MARIADB_HOST_BASELINE[0]))
    return CostModel(out[COLUMNS], summarise(out), factors[FACTOR_COLUMNS], rule(costs, cal, speeds, fitted, factors),
                     d, out)


def evaluate(d: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both models' predictions of the logging cells ``d`` (counted: nothing fitted, judged on every cell with a
    recipe; fitted: its factors from :data:`FIT_SUBSET`, judged on the other cells), each with its error, whether the
    measured CI holds it, the term a miss lacks and the diagnosis; and the fitted factors. A ``term_us_per_tx``
    column in ``d`` (a term priced apart) is added to the backend's time of both models."""
    factors = fit_factors(d)
    fitted = dict(zip(factors["process"], factors["factor"]))
    counted_ok = d["match"].ne("no counted recipe")
    tables = []
    for model, f, judged in (("counted", UNFITTED, counted_ok), ("fitted", fitted, counted_ok & ~in_fit_subset(d))):
        p = predict(d, f).assign(model=model, judged=judged)
        p["error"] = p["predicted_ratio"] - p["ratio"]
        p["in_ci"] = (p["predicted_ratio"] >= p["ratio_ci_low"]) & (p["predicted_ratio"] <= p["ratio_ci_high"])
        p["missing_term"] = p.apply(missing_term, axis=1)
        tables.append(diagnose(p))
    return pd.concat(tables, ignore_index=True), factors


def diagnose(p: pd.DataFrame) -> pd.DataFrame:
    """Beside each prediction, what the cell's own runs say of the time logging added (read, never fitted): the
    destination's family; the CPU per transaction the servers and the syslog daemons added over the baseline's
    (measured); and the time the measured ratio implies a transaction gained: the cores' µs where they bound it
    (at least as many clients as cores), a client's wait where it waits (fewer clients, or IO-bound). Measured
    CPU above the modelled is a CPU term the model lacks; the implied time above the measured CPU is waiting."""
    p = p.copy()
    p["destination"] = [destination_family(c, e, r) for c, e, r in
                        zip(p["configuration"], p["engine"], p["records_per_tx"])]
    daemon = p["daemon_cpu_us_per_tx"].fillna(0) if "daemon_cpu_us_per_tx" in p.columns else 0.0
    p["measured_added_cpu_us_per_tx"] = p["server_cpu_us_per_tx"] - p["baseline_server_cpu_us_per_tx"] + daemon
    waits = (p["clients"] < p["cores"]) | p["io_bound"].astype(bool)
    per_tx = np.where(waits, p["clients"], p["cores"]).astype(float) / p["baseline_tps"].astype(float) * 1e6
    p["implied_added_us_per_tx"] = per_tx * (1 / p["ratio"].astype(float) - 1)
    return p


def destination_family(configuration: str, engine: str, records_per_tx: float) -> str:
    """The kind of destination an arm logs to, for grouping the cells (an arm that made no record: "no record")."""
    c = str(configuration)
    if not (pd.notna(records_per_tx) and records_per_tx > 1e-9):
        return "no record"
    if engine == "mariadb":
        return ("slow log to its table" if "table" in c else "slow log to /dev/null" if "devnull" in c
                else "general log to a file" if c.startswith("general") else "slow log to a file")
    if c.startswith("remote_syslog"):
        return "remote syslog (receiver on the same cores)"
    if "syslog" in c:
        return "local syslog and a file" if "," in c else "local syslog"
    if "sample" in c:
        return "a sampled file"
    return "a file, written by the backend" if c.endswith("_direct") else "a file through the collector"


# The expected median |error| of an exact model: draws of each judged cell's measured ratio about its truth
NOISE_DRAWS, NOISE_SEED = 4000, 42


def noise_floor(g: pd.DataFrame) -> tuple[float, float, float]:
    """(mean, 2.5 %, 97.5 %) over draws of the median |error| that a model predicting every cell's true ratio
    exactly would show on the cells of ``g``, from the measured intervals alone: each measured ratio drawn about its
    truth (taken as the measured value) with its own interval's spread, on the log scale where the ratios' intervals
    are made, with Student's t at the cell's n − 1 degrees of freedom (the fewest its interval can have: a smaller
    spread, so the floor is not overstated). A goal below it asks the measurement, not the model, to be better."""
    from scipy import stats

    lo, hi, m = (pd.to_numeric(g[c], errors="coerce").to_numpy(float)
                 for c in ("ratio_ci_low", "ratio_ci_high", "ratio"))
    n = pd.to_numeric(g["n"], errors="coerce").to_numpy(float) if "n" in g.columns else np.full(len(g), np.nan)
    t = np.where(np.isfinite(n) & (n > 1), stats.t.ppf(0.975, np.maximum(n - 1, 1)), stats.norm.ppf(0.975))
    ok = np.isfinite(lo) & np.isfinite(hi) & (lo > 0) & (hi > lo) & np.isfinite(m) & (m > 0)
    if not ok.any():
        return np.nan, np.nan, np.nan
    se = (np.log(hi[ok]) - np.log(lo[ok])) / (2 * t[ok])
    z = np.random.default_rng(NOISE_SEED).standard_normal((NOISE_DRAWS, int(ok.sum())))
    med = np.median(np.abs(m[ok] * np.expm1(z * se)), axis=1)
    return float(med.mean()), float(np.quantile(med, 0.025)), float(np.quantile(med, 0.975))


def is_judged(out: pd.DataFrame) -> pd.Series:
    """The cells a model is judged on: marked judged, with both a prediction and a measured ratio."""
    return out["judged"] & out["predicted_ratio"].notna() & out["ratio"].notna()


def accuracy(j: pd.DataFrame) -> tuple[float, float, bool]:
    """(median |predicted − measured|, share of measured CIs that hold the prediction, whether both of the issue's
    goals are met) over the judged cells ``j``; NaN, NaN, False where there are none."""
    mae = float(np.median(np.abs(j["error"]))) if len(j) else np.nan
    share = float(j["in_ci"].mean()) if len(j) else np.nan
    return mae, share, bool(mae <= GOAL_MEDIAN_ERROR and share >= GOAL_COVERAGE)


def summarise(out: pd.DataFrame) -> pd.DataFrame:
    """Per model, per study and overall: judged cells, median |predicted − measured|, share of measured CIs that
    contain the prediction, whether the issue's goals are met, and the median |error| an exact model would show on
    the same cells (:func:`noise_floor`)."""
    rows = []
    for model, g in out.groupby("model", sort=False):
        j = g[is_judged(g)]
        for study, h in [*j.groupby("study"), ("all", j)]:
            mae, share, met = accuracy(h)
            floor, floor_lo, floor_hi = noise_floor(h) if len(h) else (np.nan, np.nan, np.nan)
            rows.append({"model": model,
                         "fitted_on": FIT_SUBSET_TEXT if model == "fitted" else "nothing (counts and calibration)",
                         "study": study, "judged_cells": len(h), "median_abs_error": mae, "in_ci_share": share,
                         "goal_median_abs_error": GOAL_MEDIAN_ERROR, "goal_in_ci_share": GOAL_COVERAGE,
                         "goals_met": met,
                         "exact_model_median_abs_error": floor, "exact_model_ci_low": floor_lo,
                         "exact_model_ci_high": floor_hi})
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)



def rule(costs: pd.DataFrame, cal: Calibration, speeds: dict[str, float], fitted: dict[str, float],
         factors: pd.DataFrame | None = None) -> pd.DataFrame:
    """The DBA's table: per destination, the counted instructions and system calls per record (they transfer to
    another machine), the µs per record on this host (counted; fitted) and the records per second one core of its
    daemon holds (a single-threaded collector or syslog daemon). The fitted model's µs carry an interval: each
    process's counted time times the ends of its factor's 95 % interval, summed (conservative: the ends taken
    together), the daemon's ceiling from its ends by :func:`logbench.analyze.daemons.one_core` (no upper end where
    the factor's interval reaches near 0); the counted model fits nothing and has none. Each engine is priced at its
    own speed on this host (``speeds``: :func:`host_speed`); MariaDB's connection thread keeps its counted time in
    the fitted model (no factor of it was fitted)."""
    ends = {}
    if factors is not None and len(factors):
        f = factors.set_index("process")
        ends = {e: {p: float(f.loc[p, col]) if p in f.index and pd.notna(f.loc[p, col]) else fitted[p]
                    for p in PROCESSES} for e, col in (("low", "ci_low"), ("high", "ci_high"))}
    c = costs.set_index(["engine", "configuration", "process"])
    rows = []
    for engine, conf, what in RULE_ROWS:
        if engine not in speeds or not any((engine, conf, p) in c.index for p in (*LOADER.values(), *DAEMONS)):
            continue

        def get(proc, col):
            return float(c.loc[(engine, conf, proc), col]) if (engine, conf, proc) in c.index else 0.0

        loader, daemon = LOADER[engine], "rsyslogd" if get("rsyslogd", "instructions_per_record") > 0 else "logger"
        recipe = Recipe(((conf, 1.0),))
        speed = speeds[engine]
        per = per_record_us(recipe, engine, costs, cal, cal.us_per_instruction * speed, speed)
        own = {p: 1.0 if engine == "mariadb" and p == "loader" else None for p in PROCESSES}
        base = {"engine": engine, "configuration": conf, "what": what,
                "loader_instructions_per_record": get(loader, "instructions_per_record"),
                "collector_instructions_per_record": get("logger", "instructions_per_record"),
                "syslog_instructions_per_record": get("rsyslogd", "instructions_per_record"),
                "loader_syscalls_per_record": get(loader, "syscalls_per_record"),
                "daemon_syscalls_per_record": get(daemon, "syscalls_per_record")}
        for model, f in (("counted", UNFITTED), ("fitted", fitted)):
            f = {p: own[p] if own[p] is not None else f[p] for p in PROCESSES}
            us = {p: per[p] * f[p] for p in PROCESSES}
            daemon_us = max(us["collector"], us["syslog"])
            interval = {}
            if model == "fitted" and ends:
                lo = {p: per[p] * (f[p] if own[p] is not None else ends["low"][p]) for p in PROCESSES}
                hi = {p: per[p] * (f[p] if own[p] is not None else ends["high"][p]) for p in PROCESSES}
                d_lo, d_hi = max(lo["collector"], lo["syslog"]), max(hi["collector"], hi["syslog"])
                _, c_lo, c_hi = one_core(daemon_us, d_lo, d_hi) if daemon_us > 0.01 else (np.nan,) * 3
                interval = {"us_per_record_ci_low": sum(lo.values()), "us_per_record_ci_high": sum(hi.values()),
                            "daemon_records_per_s_ci_low": c_lo, "daemon_records_per_s_ci_high": c_hi}
            rows.append({**base, "model": model, **{f"{p}_us_per_record": us[p] for p in PROCESSES},
                         "us_per_record": sum(us.values()),
                         "daemon_records_per_s": 1e6 / daemon_us if daemon_us > 0.01 else np.nan, **interval})
    return pd.DataFrame(rows, columns=RULE_COLUMNS)
