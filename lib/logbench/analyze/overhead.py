"""What logging costs at a given statement rate (issue 42): ``python -m logbench cost``, and the prediction that the
answer of an own-server run prints beside its measured ratio — one implementation for both.

    overhead ≈ statements/s × records per statement × cost per record ÷ (cores × 10⁶ µs)

is the share of the cores that logging takes; where the cores are saturated (CPU-bound) the throughput keeps
1 / (1 + that share) of itself. A single-threaded daemon (PostgreSQL's logging collector, a syslog daemon) takes at
most one core: it holds at most 1 / (its µs per record) × 10⁶ records per second, whatever the cores.

The cost per record comes from one of two sources, each input printed with its table, study, n and interval:

- **counted** (study 11, ``record_cost.csv`` and ``record_cost_calibration.csv``): the instructions a record costs
  each process, times the time per instruction, plus its system calls times the write() floor — the cost model's
  counted pricing (:func:`logbench.analyze.costmodel.per_record_us`). From the committed data/processed it is carried to
  the throughput studies' host as the cost model carries it (the two machines' baseline CPU per transaction); from
  a user's study 11 run it is priced on that run's own machine (its own calibration).
- **timed** (study 02, ``<stem>_per_record.csv``): the server's measured CPU per record over its baseline, and the
  syslog daemon's (:func:`logbench.analyze.daemons.daemon_cpu`), on the machine the run was made on.

The one-core ceiling is the daemon's own CPU per record as study 02 timed it wherever a run timed it
(:func:`logbench.analyze.daemons.ceilings`: at the level where it took the most records), from the committed tables
too: the counted and the fitted model's ceilings are printed beside it as a check. Its interval goes through the one
rule of :func:`logbench.analyze.daemons.one_core` (no upper end where the time's interval reaches near 0).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import costmodel as cm
from . import daemons
from ..base import paths, records
from ..base.errors import LogbenchError, ParameterError
from ..base.formatting import ci_text, rounded

ENGINES = tuple(cm.LOADER)  # postgresql, mariadb
# the configurations study 11 counts that log nothing: its baselines, and a setting with no record
_NO_RECORD_MIN = 1e-9


class NoCostTables(ParameterError):
    """A run directory without a table that prices a log record."""

    def __init__(self, run_dir: Path, looked: str):
        super().__init__("--run", str(run_dir), "a study's output directory (or its processed/ folder) holding "
                         f"{looked}: a run of study 11 (record_cost) or of study 02 (pg_destinations)")


@dataclass(frozen=True)
class Input:
    """One input of the formula with where it comes from."""

    name: str
    value: float
    unit: str
    source: str  # table, study, how it was made
    low: float = math.nan
    high: float = math.nan
    n: int | None = None

    def text(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        return f"{ci_text(self.value, self.low, self.high, n=self.n)}{unit} — {self.source}"


@dataclass(frozen=True)
class PerRecord:
    """One destination's cost of a record on one machine, with the inputs it was made of."""

    engine: str
    destination: str
    source: str  # "counted" or "timed"
    machine: str  # where the µs hold
    us: Input  # every process's µs per record, summed
    records_per_statement: Input  # what the source counted for this destination (the default of the formula)
    daemon: str = ""  # the single-threaded daemon that takes the records ("" where none does)
    daemon_us: Input | None = None  # what the one-core ceiling is 10⁶ over: timed where study 02 timed it
    inputs: tuple[Input, ...] = field(default=())  # what ``us`` was made of
    beside: tuple[Input, ...] = field(default=())  # other estimates of the same cost, printed with their prediction
    ceilings_beside: tuple[Input, ...] = field(default=())  # other models' ceilings (records/s), printed as a check


@dataclass(frozen=True)
class Prediction:
    statements_per_second: float
    cores: float
    records_per_statement: Input
    per_record: PerRecord

    @property
    def records_per_second(self) -> float:
        return self.statements_per_second * self.records_per_statement.value

    def _share(self, us: float) -> float:
        return self.records_per_second * us / (self.cores * 1e6)

    @property
    def core_share(self) -> tuple[float, float, float]:
        """(value, low, high): the share of the cores logging takes at this rate."""
        u = self.per_record.us
        return self._share(u.value), self._share(u.low), self._share(u.high)

    @property
    def ratio_cpu_bound(self) -> tuple[float, float, float]:
        """(value, low, high): the throughput kept where the cores are saturated at this rate; a dearer record
        keeps less, so the interval's ends swap."""
        v, lo, hi = self.core_share
        return 1 / (1 + v), 1 / (1 + hi), 1 / (1 + lo)

    @property
    def ceiling(self) -> tuple[float, float, float] | None:
        """(value, low, high) records per second one core of the daemon holds; None where no daemon takes them."""
        d = self.per_record.daemon_us
        if d is None or not d.value > 0:
            return None
        return daemons.one_core(d.value, d.low, d.high)

    @property
    def exceeds_ceiling(self) -> bool:
        c = self.ceiling
        return c is not None and self.records_per_second > c[0]


# --- where the tables are ------------------------------------------------------------------------------------------

def processed_of(run_dir: Path | str) -> Path:
    """A run directory's processed tables: ``DIR/processed`` where the run wrote them there, else ``DIR`` itself."""
    d = Path(run_dir)
    if not d.is_dir():
        raise ParameterError("--run", str(run_dir), "an existing directory (a study's output directory)")
    return d / "processed" if (d / "processed").is_dir() else d


def _timed_tables(processed: Path, stem: str | None = None) -> list[Path]:
    if stem is not None:
        return [processed / f"{stem}_per_record.csv"] if (processed / f"{stem}_per_record.csv").exists() else []
    return sorted(p for p in processed.glob("*_per_record.csv") if not p.name.startswith("findings"))


def _machine(processed: Path, stem: str) -> str:
    f = processed / f"{stem}_environment.json"
    if not f.exists():
        return "its machine (no environment record)"
    e = json.loads(f.read_text())
    # a version sweep keeps one record per variant, all on one host
    e = e if e.get("cpu_model") else next(iter(e.get("variants", {}).values()), e)
    return f"{e.get('cpu_model') or '?'} × {e.get('cpu_count') or '?'}, {e.get('hostname') or e.get('host') or ''}" \
        .rstrip(", ")


def _rel(p: Path) -> str:
    try:
        return str(Path(p).resolve().relative_to(paths.ROOT.resolve()))
    except ValueError:
        return str(p)


def timed_daemon(processed: Path, stem: str, destination: str) -> Input | None:
    """The CPU per record of the daemon that takes ``destination``'s records alone, timed in ``stem``'s runs at the
    level where it took the most records (:func:`logbench.analyze.daemons.ceilings`); None where none timed it."""
    c = daemons.chosen(daemons.ceilings(processed, (stem,)), stem, destination)
    if c is None or not c["us_per_record"] > 0:
        return None
    k = int(c["clients"])
    who = {"collector": "the logging collector", "syslog": "the local syslog daemon"}[c["daemon"]]
    return Input(f"{c['daemon']} CPU per record, timed", float(c["us_per_record"]), "µs",
                 f"{_rel(processed / (stem + '_runs.csv'))} (study 02: {who}'s own CPU over the records it took, "
                 f"mean [95 % CI] over runs at {k} client{'s' if k > 1 else ''}, where it took the most: "
                 f"{rounded(c['daemon_records_per_s'])} records/s)",
                 float(c["us_per_record_ci_low"]), float(c["us_per_record_ci_high"]), int(c["n"]))


# --- counted: study 11 -----------------------------------------------------------------------------------------------

def _repeats(processed: Path) -> pd.DataFrame | None:
    f = processed / "record_cost_repeats.csv"
    if not f.exists():
        return None
    r = pd.read_csv(f)
    return r[(r["metric"] == "instructions") & r["counter"].isin(["cachegrind", "callgrind"])]


def _ends(record_cost: pd.DataFrame, end: str) -> pd.DataFrame:
    """study 11's table with each process's instructions per record at one end of its 95 % interval (``low``,
    ``high``); an end the table lacks (one repeat) stays at the mean."""
    out = record_cost.copy()
    for role in (*cm.LOADER.values(), *cm.DAEMONS):
        col = f"{role}_instructions_per_record"
        if f"{col}_{end}" in out.columns:
            out[col] = out[f"{col}_{end}"].where(out[f"{col}_{end}"].notna(), out[col])
    return out


def counted_destinations(record_cost: pd.DataFrame) -> dict[str, list[str]]:
    """Per engine, the configurations study 11 priced a record of: those whose statements made records."""
    rps = pd.to_numeric(record_cost["records_per_statement"], errors="coerce")
    priced = record_cost[rps > _NO_RECORD_MIN]
    return {e: list(dict.fromkeys(priced.loc[priced["engine"] == e, "configuration"])) for e in ENGINES}


def counted(processed: Path, engine: str, destination: str, *, carried: bool) -> PerRecord:
    """The counted cost of one record of ``destination`` (study 11's configuration). ``carried``: priced on the
    throughput studies' host as the cost model does (the committed data); else on study 11's own machine."""
    rc = cm.read_table(processed, cm.RECORD_COST, "study 11 (record_cost)")
    _check(engine, destination, counted_destinations(rc), "study 11's record_cost.csv")
    figures = processed / cm.RECORD_FIGURES
    figs = pd.read_csv(figures) if figures.exists() else pd.DataFrame(
        columns=["engine", "configuration", "process", "metric", "call", "per_record"])
    cal_table = cm.read_table(processed, cm.CALIBRATION, "study 11 (record_cost) with its calibration")
    cal = cm.calibration(cal_table)
    q = cal_table.set_index("quantity")
    tpi_row = q.loc["time_per_instruction"]
    # each engine carried by its own baseline on the host: PostgreSQL's study 02, MariaDB's study 04
    speed, host_us = cm.host_speed(processed, cal, engine) if carried else (1.0, cal.cpu_per_transaction_us)
    host_stem = cm.HOST_BASELINE[0] if engine == "postgresql" else cm.MARIADB_HOST_BASELINE[0]
    tpi = {"value": cal.us_per_instruction, "low": float(tpi_row["ci_low"]), "high": float(tpi_row["ci_high"])}
    recipe = cm.Recipe(((destination, 1.0),))
    per = {}
    for end in ("value", "low", "high"):
        table = rc if end == "value" else _ends(rc, end)
        costs = cm.counted_costs(table, figs)
        us = cm.per_record_us(recipe, engine, costs, cal, tpi[end] * speed, speed)
        per[end] = us
    total = {e: sum(per[e][p] for p in ("loader", "collector", "syslog")) for e in per}
    row = rc[(rc["engine"] == engine) & (rc["configuration"] == destination)].iloc[0]
    reps = _repeats(processed)

    def n_of(role: str) -> int | None:
        if reps is None:
            return None
        k = reps[(reps["engine"] == engine) & (reps["configuration"] == destination) & (reps["process"] == role)]
        return int(len(k)) or None

    src11 = f"{_rel(processed / cm.RECORD_COST)} (study 11, counted under valgrind, mean [95 % CI] over starts)"
    inputs = []
    roles = {cm.LOADER[engine]: "loader", "logger": "collector", "rsyslogd": "syslog"}
    for role, part in roles.items():
        col = f"{role}_instructions_per_record"
        v = row.get(col)
        if pd.isna(v) or not (part == "loader" or per["value"][part] > 0.01):
            continue
        inputs.append(Input(f"{role} instructions per record", float(v), "instructions", src11,
                            float(row.get(f"{col}_low", np.nan)), float(row.get(f"{col}_high", np.nan)), n_of(role)))
    inputs.append(Input("time per instruction", cal.us_per_instruction, "µs",
                        f"{_rel(processed / cm.CALIBRATION)} (study 11's calibration: its baseline's user CPU per "
                        "counted instruction, Fieller interval)", tpi["low"], tpi["high"], int(tpi_row["n"])))
    if carried:
        own = ("study 02's baseline at 1 client" if engine == "postgresql" else
               "study 04's baseline at 1 connection, oltp_point_select: MariaDB's own, its user share taken as "
               "PostgreSQL's (study 11 timed no MariaDB load)")
        inputs.append(Input("host speed", speed, "× study 11's time",
                            f"{_rel(processed / (host_stem + '_runs.csv'))} ({own}, {host_us:.3g} µs CPU per "
                            "statement, per counted instruction) over study 11's "
                            f"{cal.cpu_per_transaction_us:.3g} µs per its count: the cost model's carry-over, a point "
                            "value"))
    calls = float(row.get(f"{cm.LOADER[engine]}_write_calls_per_record", np.nan))
    if np.isfinite(calls):
        inputs.append(Input(f"{cm.LOADER[engine]} write() calls per record", calls, "",
                            f"{_rel(processed / cm.RECORD_COST)} (study 11, counted under strace), each at "
                            f"{_rel(processed / cm.CALIBRATION)}'s write() floor for its size"))
    else:
        # a run without the strace counter (study 11's smoke profile) counted instructions only
        inputs.append(Input(f"{cm.LOADER[engine]} write() calls per record", 0.0, "",
                            "not counted (the run had no strace counter): the record's system calls are left out, "
                            "the cost is its user-space instructions only"))
    daemon = "syslog" if per["value"]["syslog"] > 0.01 else "collector" if per["value"]["collector"] > 0.01 else ""
    machine = (f"the throughput studies' host ({records.processor_of(processed, host_stem) or '?'}), carried from "
               f"study 11's ({records.processor_of(processed, 'record_cost') or '?'})" if carried
               else f"study 11's machine ({_machine(processed, 'record_cost')})")
    how = ("instructions × time per instruction + write() calls × the write floor; interval: the counts' and the "
           "time per instruction's 95 % ends taken together")
    n_rec = n_of(cm.LOADER[engine])
    beside, ceilings = (), ()
    daemon_us = (Input(f"{daemon} µs per record, counted", per["value"][daemon], "µs", how, per["low"][daemon],
                       per["high"][daemon]) if daemon else None)
    rule_file = processed / "findings_cost_model_rule.csv"
    if carried and rule_file.exists():
        # the cost model's fitted variant: the counted time scaled by each process's measured CPU on study 02
        rule = pd.read_csv(rule_file)
        f = rule[(rule["engine"] == engine) & (rule["configuration"] == destination) & (rule["model"] == "fitted")]
        if len(f):
            x = f.iloc[0]
            beside = (Input("cost per record, fitted", float(x["us_per_record"]), "µs",
                            f"{_rel(rule_file)} (the cost model's fitted variant: each process's counted time × its "
                            "factor from its measured CPU in study 02 at 1 client)", float(x["us_per_record_ci_low"]),
                            float(x["us_per_record_ci_high"])),)
            if daemon and pd.notna(x["daemon_records_per_s"]):
                ceilings = (Input("fitted model", float(x["daemon_records_per_s"]), "records/s", _rel(rule_file),
                                  float(x.get("daemon_records_per_s_ci_low", np.nan)),
                                  float(x.get("daemon_records_per_s_ci_high", np.nan))),)
    timed_us = timed_daemon(processed, host_stem, destination) if carried and daemon else None
    if timed_us is not None:
        # the daemon's own CPU timed on the host prices its ceiling; the counted model's stands beside it
        c = daemons.one_core(daemon_us.value, daemon_us.low, daemon_us.high)
        ceilings = (Input("counted model", c[0], "records/s", how, c[1], c[2]), *ceilings)
        daemon_us = timed_us
    return PerRecord(
        engine, destination, "counted", machine,
        Input("cost per record", total["value"], "µs", how, total["low"], total["high"]),
        Input("records per statement", float(row["records_per_statement"]), "",
              f"{_rel(processed / cm.RECORD_COST)} (study 11, counted in the server's log per statement)", n=n_rec),
        {"syslog": "the syslog daemon (rsyslogd)", "collector": "PostgreSQL's logging collector"}.get(daemon, ""),
        daemon_us, tuple(inputs), beside, ceilings)


# --- timed: study 02 -------------------------------------------------------------------------------------------------

def _timed_keys(table: pd.DataFrame) -> pd.Series:
    """A timed table's destinations: its configurations, named ``<variant>/<configuration>`` where a version sweep
    timed each server version apart (never pooled)."""
    conf = table["configuration"].astype(str)
    return table["variant"].astype(str) + "/" + conf if "variant" in table.columns else conf


def timed_destinations(processed: Path, stem: str | None = None) -> dict[str, list[str]]:
    confs: list[str] = []
    for t in _timed_tables(processed, stem):
        confs += list(_timed_keys(pd.read_csv(t)))
    return {"postgresql": list(dict.fromkeys(confs)), "mariadb": []}


def timed(processed: Path, engine: str, destination: str, stem: str | None = None) -> PerRecord:
    """The timed cost of one record of ``destination`` on the machine of a study 02 run: the server's CPU per
    record over its baseline (the collector included) and the syslog daemon's, at the run's lowest clients level;
    the daemon's one-core ceiling from its CPU per record at the level where it took the most records
    (:func:`timed_daemon`)."""
    _check(engine, destination, timed_destinations(processed, stem), "the run's *_per_record.csv")
    for t in _timed_tables(processed, stem):
        tab = pd.read_csv(t)
        rows = tab[_timed_keys(tab) == destination]
        if len(rows):
            break
    stem = t.name[: -len("_per_record.csv")]
    r = rows.sort_values("clients").iloc[0]
    k = int(r["clients"])
    src = f"{_rel(t)} (study 02, timed, mean [95 % CI] over blocks at {k} client{'s' if k > 1 else ''})"
    server = Input("server CPU per record (the collector included)", float(r["server_cpu_us_per_record_mean"]), "µs",
                   src, float(r["server_cpu_us_per_record_ci_low"]), float(r["server_cpu_us_per_record_ci_high"]),
                   int(r["server_cpu_us_per_record_n"]))
    coll = Input("collector CPU per record", float(r["collector_cpu_us_per_record_mean"]), "µs", src,
                 float(r["collector_cpu_us_per_record_ci_low"]), float(r["collector_cpu_us_per_record_ci_high"]),
                 int(r["collector_cpu_us_per_record_n"]))
    inputs = [server, coll]
    total = [server.value, server.low, server.high]
    daemon, daemon_us = "collector", coll
    if "syslog" in destination:
        d = daemons.daemon_cpu(processed)
        d = d[(d["stem"] == stem) & (d["configuration"] == destination) & (d["clients"] == k)]
        if len(d) and pd.notna(d["local_us_per_record"].iloc[0]):
            x = d.iloc[0]
            sys_in = Input("syslog daemon CPU per record", float(x["local_us_per_record"]), "µs",
                           f"{_rel(processed / (stem + '_runs.csv'))} (study 02, the local daemon's CPU over the "
                           f"records sent, {k} client{'s' if k > 1 else ''})", float(x["local_us_per_record_ci_low"]),
                           float(x["local_us_per_record_ci_high"]), int(x["n"]))
            inputs.append(sys_in)
            total = [a + b for a, b in zip(total, (sys_in.value, sys_in.low, sys_in.high))]
            daemon, daemon_us = "syslog", sys_in
        else:
            inputs.append(Input("syslog daemon CPU per record", math.nan, "µs", "not recorded apart in this run: "
                                "the cost is the server's alone and no ceiling is known"))
            daemon, daemon_us = "syslog", None
    rps = float(r["records_per_tx"])
    # the ceiling: the daemon's own CPU per record where it took the most records, not at the lowest level
    at_most = timed_daemon(processed, stem, destination) if daemon_us is not None else None
    daemon_us = at_most if at_most is not None else daemon_us
    return PerRecord(
        engine, destination, "timed", f"the run's machine ({_machine(processed, stem)})",
        Input("cost per record", total[0], "µs", "the timed CPU per record of the server (and the syslog daemon), "
              "summed; interval: the ends taken together", total[1], total[2]),
        Input("records per statement", rps, "", f"{_rel(t)} (study 02, records the log received per transaction "
              "of pgbench -S: one statement)"),
        {"syslog": "the syslog daemon", "collector": "PostgreSQL's logging collector"}[daemon],
        daemon_us if daemon_us is not None and daemon_us.value > 0 else None,
        tuple(inputs))


# --- the one entry point ---------------------------------------------------------------------------------------------

def _check(engine: str, destination: str, allowed: dict[str, list[str]], where: str) -> None:
    if engine not in ENGINES:
        raise ParameterError("--engine", engine, ENGINES)
    if destination not in allowed.get(engine, []):
        raise ParameterError("--destination", destination, (f"one that {where} prices for {engine}: "
                                                            + ", ".join(allowed[engine])) if allowed.get(engine)
                             else f"none: {where} prices no {engine} record")


def source_of(run_dir: Path | str | None) -> tuple[str, Path]:
    """(kind, processed dir): the committed data/processed counted, a study 11 run counted, a study 02 run timed."""
    if run_dir is None:
        return "committed", paths.PROCESSED
    processed = processed_of(run_dir)
    if (processed / cm.RECORD_COST).exists():
        if not (processed / cm.CALIBRATION).exists():
            raise NoCostTables(Path(run_dir), f"{cm.CALIBRATION} beside {cm.RECORD_COST} (a study 11 run with "
                               "calibration_repeats > 0)")
        return "counted", processed
    if _timed_tables(processed):
        return "timed", processed
    if any(processed.glob("own_*_runs.csv")):
        # the own-server studies time the whole server, not a record: no table of theirs prices one
        raise NoCostTables(Path(run_dir), f"{cm.RECORD_COST} + {cm.CALIBRATION} or a *_per_record.csv — an "
                           "own-server run writes neither (its answer sets the committed price's prediction beside "
                           "its measured ratio; python -m logbench.publish.answer DIR)")
    raise NoCostTables(Path(run_dir), f"{cm.RECORD_COST} + {cm.CALIBRATION} or a *_per_record.csv")


def destinations(run_dir: Path | str | None = None) -> dict[str, list[str]]:
    """Per engine, the destinations the source prices."""
    kind, processed = source_of(run_dir)
    if kind == "timed":
        return timed_destinations(processed)
    return counted_destinations(cm.read_table(processed, cm.RECORD_COST, "study 11 (record_cost)"))


def per_record(engine: str, destination: str, run_dir: Path | str | None = None) -> PerRecord:
    kind, processed = source_of(run_dir)
    if kind == "timed":
        return timed(processed, engine, destination)
    return counted(processed, engine, destination, carried=kind == "committed")


def check_rate(statements_per_second: float, cores: float, records_per_statement: float | None = None) -> None:
    """ParameterError naming the first of the formula's given numbers that is not a positive (R: ≥ 0) number."""
    if not (isinstance(statements_per_second, (int, float)) and statements_per_second > 0
            and math.isfinite(statements_per_second)):
        raise ParameterError("--statements-per-second", statements_per_second, "a positive number")
    if not (isinstance(cores, (int, float)) and cores > 0 and math.isfinite(cores)):
        raise ParameterError("--cores", cores, "a positive number")
    if records_per_statement is not None and not (records_per_statement >= 0 and math.isfinite(records_per_statement)):
        raise ParameterError("--records-per-statement", records_per_statement, "a number ≥ 0")


def predict(statements_per_second: float, cores: float, rec: PerRecord,
            records_per_statement: float | None = None) -> Prediction:
    """The formula at one rate. ``records_per_statement`` None: the source's own count for the destination."""
    check_rate(statements_per_second, cores, records_per_statement)
    r = rec.records_per_statement if records_per_statement is None else Input(
        "records per statement", float(records_per_statement), "", "given")
    return Prediction(float(statements_per_second), float(cores), r, rec)


# --- beside a measured ratio: a run on a user's own server ----------------------------------------------------------

BESIDE_COLUMNS = ["configuration", "clients", "destination_priced", "statements_per_s", "records_per_statement",
                  "us_per_record", "cores", "core_share", "predicted_ratio", "predicted_ratio_ci_low",
                  "predicted_ratio_ci_high", "ceiling_records_per_s", "exceeds_ceiling", "ratio", "ratio_ci_low",
                  "ratio_ci_high", "n"]


def beside_measured(summary: pd.DataFrame, runs: pd.DataFrame, cores: float, engine: str, priced_as,
                    baseline: str = "none", run_dir: Path | str | None = None) -> pd.DataFrame:
    """Per logging arm and clients level of a run (its summary and runs tables): the formula's prediction at the
    rate the baseline ran (its tps × statements per transaction, the runs' own count) with the arm's own records per
    statement (received, counted in the run), beside the measured ratio and its CI. ``priced_as(arm, destinations)``
    names the destination the tables price for an arm (None: not priced). An arm without records (the A/A) is
    left out."""
    r = runs[~runs["warmup"].astype(bool)] if "warmup" in runs.columns else runs
    r = r.assign(statements=r["extra"].map(lambda e: (json.loads(e) if isinstance(e, str) else e or {})
                                           .get("statements", np.nan)).astype(float))
    rows = []
    priced: dict[str, PerRecord] = {}
    for (arm, k), g in r.groupby(["configuration", "clients"], sort=False):
        if arm == baseline:
            continue
        got = float(g["log_records_received"].sum())
        per_stmt = got / float(g["statements"].sum()) if g["statements"].sum() > 0 else math.nan
        if not got > 0:
            continue
        dests = g["destinations"].iloc[0] if "destinations" in g.columns else []
        dests = json.loads(dests) if isinstance(dests, str) else list(dests or [])
        dest = priced_as(arm, dests)
        base = r[(r["configuration"] == baseline) & (r["clients"] == k)]
        if dest is None or base.empty or not base["statements"].sum() > 0:
            continue
        if dest not in priced:
            priced[dest] = per_record(engine, dest, run_dir)
        rate = float(base["statements"].sum() / base["duration_s"].astype(float).sum())
        p = predict(rate, cores, priced[dest], per_stmt)
        s = summary[(summary["configuration"] == arm) & (summary["clients"] == k)]
        m = s.iloc[0] if len(s) else pd.Series(dtype=float)
        ceiling = p.ceiling
        rows.append({"configuration": arm, "clients": int(k), "destination_priced": dest, "statements_per_s": rate,
                     "records_per_statement": per_stmt, "us_per_record": priced[dest].us.value, "cores": cores,
                     "core_share": p.core_share[0], "predicted_ratio": p.ratio_cpu_bound[0],
                     "predicted_ratio_ci_low": p.ratio_cpu_bound[1], "predicted_ratio_ci_high": p.ratio_cpu_bound[2],
                     "ceiling_records_per_s": ceiling[0] if ceiling else math.nan,
                     "exceeds_ceiling": p.exceeds_ceiling, "ratio": m.get("ratio", math.nan),
                     "ratio_ci_low": m.get("ratio_ci_low", math.nan), "ratio_ci_high": m.get("ratio_ci_high", math.nan),
                     "n": m.get("n", math.nan)})
    return pd.DataFrame(rows, columns=BESIDE_COLUMNS)


def _pct(v: float) -> str:
    return "–" if not np.isfinite(v) else f"{100 * v:.3g} %"


def text(p: Prediction) -> str:
    """What ``python -m logbench cost`` prints."""
    rec = p.per_record
    share, ratio = p.core_share, p.ratio_cpu_bound
    lines = ["overhead ≈ statements/s × records per statement × cost per record ÷ (cores × 10⁶ µs)", "",
             f"{rec.engine}, destination {rec.destination}: {rec.source} cost on {rec.machine}",
             f"  statements/s           {p.statements_per_second:g} — given",
             f"  records per statement  {p.records_per_statement.text()}",
             f"  cost per record        {rec.us.text()}"]
    lines += [f"    {i.name:<34} {i.text()}" for i in rec.inputs]
    lines += [f"  cores                  {p.cores:g} — given", "",
              f"= {p.records_per_second:,.0f} records/s × {ci_text(rec.us.value, rec.us.low, rec.us.high)} µs "
              f"÷ ({p.cores:g} × 10⁶ µs)",
              f"  predicted share of the cores:        {_pct(share[0])}"
              + (f" [{_pct(share[1])}, {_pct(share[2])}]" if np.isfinite(share[1]) else ""),
              f"  predicted throughput kept, CPU-bound: {ratio[0]:.3f}"
              + (f" [{ratio[1]:.3f}, {ratio[2]:.3f}]" if np.isfinite(ratio[1]) else "")
              + " (1 / (1 + share): where the cores are saturated at this rate)"]
    for b in rec.beside:
        lo, hi = (p._share(b.low), p._share(b.high))
        lines.append(f"  beside it, {b.name}: {b.text()}\n    -> share {_pct(p._share(b.value))}"
                     + (f" [{_pct(lo)}, {_pct(hi)}]" if np.isfinite(lo) else "")
                     + f", CPU-bound {1 / (1 + p._share(b.value)):.3f}")
    c = p.ceiling
    if c is None:
        lines.append(f"  one-core ceiling: none — no single-threaded daemon takes {rec.engine}'s {rec.destination} "
                     "records (the connection threads write them)" if rec.engine == "mariadb" else
                     f"  one-core ceiling of {rec.daemon}: not known (its CPU per record was not measured)"
                     if rec.daemon else "  one-core ceiling: none counted for this destination")
    else:
        d = rec.daemon_us
        lines.append(f"  one-core ceiling of {rec.daemon}: {daemons.ceiling_text(*c)} records/s "
                     f"(10⁶ / {d.name}: {d.text()})")
        lines += [f"    beside it, the {b.name}'s: {daemons.ceiling_text(b.value, b.low, b.high)} records/s"
                  for b in rec.ceilings_beside]
        if p.exceeds_ceiling:
            lines.append(f"  EXCEEDS it: {p.records_per_second:,.0f} records/s > {rounded(c[0], daemons.CEILING_SIG)}; "
                         "one core of the daemon holds at most "
                         f"{rounded(c[0] / p.records_per_statement.value, daemons.CEILING_SIG)} statements/s "
                         f"(throughput ≤ {c[0] / p.records_per_second:.3f} of this rate whatever the cores), or "
                         "records queue and backends wait")
        else:
            lines.append(f"  below it: this rate uses {_pct(p.records_per_second / c[0])} of that daemon's core")
    return "\n".join(lines)


def cost_main(argv: list[str] | None = None) -> int:
    """``python -m logbench cost``: exit 2 with the parameter named on bad input."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(
        prog="python -m logbench cost", description="What logging adds at a statement rate: statements/s × records "
        "per statement × cost per record ÷ (cores × 10⁶ µs), each input with its table, study, n and 95 % interval; "
        "the throughput kept where the cores are saturated; the one-core ceiling of a single-threaded collector or "
        "syslog daemon. Bad input: exit 2, the parameter and what it allows named.")
    ap.add_argument("--statements-per-second", type=float, required=True, metavar="N",
                    help="the server's statement rate (> 0)")
    ap.add_argument("--cores", type=float, required=True, metavar="C", help="the server's cores (> 0)")
    ap.add_argument("--destination", required=True, metavar="D",
                    help="a destination the tables price (an unknown one lists them)")
    ap.add_argument("--engine", default="postgresql", help=f"one of {', '.join(ENGINES)} (default postgresql)")
    ap.add_argument("--records-per-statement", type=float, metavar="R",
                    help="default: what the source counted for the destination")
    ap.add_argument("--run", type=Path, metavar="DIR",
                    help="a study 11 or 02 run's output directory: its machine's cost instead of the committed one")
    args = ap.parse_args(argv)
    try:
        if args.engine not in ENGINES:
            raise ParameterError("--engine", args.engine, ENGINES)
        # the rate and cores first: refused before any table is read
        check_rate(args.statements_per_second, args.cores, args.records_per_statement)
        rec = per_record(args.engine, args.destination, args.run)
        print(text(predict(args.statements_per_second, args.cores, rec, args.records_per_statement)))
    except ParameterError as e:
        print(f"python -m logbench cost: {e}", file=sys.stderr)
        return 2
    except LogbenchError as e:  # a table missing or incomplete: named by the error
        print(f"python -m logbench cost: {e}", file=sys.stderr)
        return 2
    return 0
