"""The regression's observations: one row per measured run that says something about the cost of a line, with
its time per transaction, the records it logged per transaction by destination family, its log bytes, its
baseline group (study, cell, clients) and its WLS weight (the package's docstring says why each)."""

from __future__ import annotations

import json
import math
from collections.abc import Collection

import pandas as pd

from ...base import records
from ...measure import switchwindows
from ...base.settings import is_aa

# Destination (as a run records it in ``destinations``) -> family. A run without a destination that still
# formats records (MariaDB's slow log to /dev/null) is "discarded".
DESTINATION_FAMILY = {
    "stderr": "file", "csvlog": "file", "jsonlog": "file", "slow_file": "file", "general_file": "file",
    "syslog": "syslog", "remote_syslog": "remote_syslog", "slow_table": "table", "general_table": "table",
    "stderr_direct": "file",  # logging_collector = off: each backend writes the server's stderr file itself
}
FAMILIES = ("file", "syslog", "remote_syslog", "table", "discarded")
DISCARDED = "discarded"
# How the paper names where a family's line goes ("one line to ...").
FAMILY_LABELS = {"file": "a file", "syslog": "the local syslog", "remote_syslog": "a remote syslog",
                 "table": "a table", "discarded": "nowhere (formatted, then discarded)"}


def family_term(family: str) -> str:
    return f"lines_{family}"


BYTES_PER_KB = 1000

# Run columns that split a study into cells with baselines of their own (mysql_slowlog: regime and workload; a
# backend; the CPU idle state a run was held in, where a study varies it).
CELL_COLUMNS = ("regime", "test", "backend", "idle_state")

# A fit's regime: a run's own regime label ("io" for MariaDB, "io_bound" for PostgreSQL) or, without one, cached.
IO_BOUND, CACHED = "io_bound", "cached"
IO_REGIMES = ("io", "io_bound")
FIT_COLUMNS = ("engine", "env_id", "regime", "workload")

PREPARED_COLUMNS = ("study", "engine", "env_id", "regime", "workload", "configuration", "clients", "repeat",
                    "baseline", "cell_key",
                    "us_per_tx", "records_per_tx", "kb_per_tx", "bytes_per_record", "weight",
                    *(family_term(f) for f in FAMILIES))


def text_column(r: pd.DataFrame, name: str) -> pd.Series:
    """A column as text, a missing value (or a missing column) as ''."""
    if name not in r.columns:
        return pd.Series("", index=r.index, dtype=object)
    return r[name].astype(object).where(r[name].notna(), "").astype(str)


def fit_environment(r: pd.DataFrame) -> pd.Series | str:
    """A run's environment for the fits: its record's id, and "+container" where its server ran in a container. The
    id names the machine and the server, not the backend, and study 03 finds the backend moves the numbers: a line's
    cost is fitted per backend, not pooled across them (study 03's container runs shared the local id once their
    image had the local server's patch level)."""
    if "env_id" not in r.columns:
        return ""
    env = r["env_id"].astype(str)
    return env + text_column(r, "backend").map(lambda b: "+container" if b == "container" else "")


def fit_regime(label: object) -> str:
    """A fit's regime from a run's or a cell's regime label."""
    return IO_BOUND if label in IO_REGIMES else CACHED


def _destinations(value) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)):
        return tuple(str(x) for x in value)
    if value is None or (isinstance(value, float) and math.isnan(value)) or not str(value).strip():
        return ()
    text = str(value)
    try:
        parsed = json.loads(text)
        return tuple(str(x) for x in parsed) if isinstance(parsed, list) else (str(parsed),)
    except ValueError:
        return tuple(x.strip() for x in text.split(",") if x.strip())


def destination_family(destination: str) -> str:
    """The family of one destination; an unknown one is refused with the known ones listed."""
    try:
        return DESTINATION_FAMILY[destination]
    except KeyError:
        raise ValueError(f"destination {destination!r} has no family; known: {sorted(DESTINATION_FAMILY)}") from None


def _family_shares(destinations: tuple[str, ...]) -> dict[str, float]:
    """Share of a run's statement records per family: each destination receives every record."""
    if not destinations:
        return {DISCARDED: 1.0}
    out: dict[str, float] = {}
    for d in destinations:
        fam = destination_family(d)
        out[fam] = out.get(fam, 0.0) + 1.0 / len(destinations)
    return out


def _observations(runs: pd.DataFrame) -> pd.DataFrame:
    """The fit's observations: measured runs (records.measured) that are separate runs and moved a transaction."""
    r = records.measured(runs)
    if "extra" in r.columns:
        # A switchback window is seconds of one continuous load, correlated with its neighbours: not a run the
        # pooled fit's HC3 errors can treat as independent (its own estimator, switchstats, accounts for that).
        r = r[~r["extra"].map(switchwindows.is_window)]
    return r[(r["tps"] > 0) & (r["transactions"] > 0)]


def prepare(runs: pd.DataFrame, not_line_cost: Collection[str] = ()) -> pd.DataFrame:
    """One row per measured run (warm-ups, A/A rows and the studies named in ``not_line_cost`` dropped: the findings
    pass ``findings.NOT_LINE_COST``, from the studies' specs) with the regression's variables and its WLS weight."""
    r = _observations(runs)
    r = r[~r["study"].astype(str).isin(not_line_cost) & ~r["configuration"].astype(str).map(is_aa)]
    expected = pd.to_numeric(r["log_records_expected"], errors="coerce").fillna(0)
    if "tracer_sent" in r.columns:  # tracers are queries a study adds, not the workload's statements
        expected = (expected - pd.to_numeric(r["tracer_sent"], errors="coerce").fillna(0)).clip(lower=0)
    received = pd.to_numeric(r["log_records_received"], errors="coerce").fillna(0)
    tx = r["transactions"].astype(float)
    out = pd.DataFrame({
        "study": r["study"].astype(str),
        "engine": r["engine"].astype(str),
        "env_id": fit_environment(r),
        "regime": text_column(r, "regime").map(fit_regime),
        # sysbench's test (MariaDB's workloads); pgbench's studies have one workload each
        "workload": text_column(r, "test"),
        "configuration": r["configuration"].astype(str),
        "clients": r["clients"].astype(int),
        "repeat": r["repeat"].astype(int),
    })
    # A study made of cells (mysql_slowlog: regime × workload; a backend) compares configurations within a cell only.
    cell = pd.Series("", index=r.index, dtype=object)
    for col in CELL_COLUMNS:
        if col in r.columns:
            cell = cell + text_column(r, col).map(lambda x: "/" + x if x else "")
    out["baseline"] = out["study"] + cell.to_numpy() + " @ " + out["clients"].astype(str)
    out["cell_key"] = out["baseline"] + " | " + out["configuration"]
    out["us_per_tx"] = 1e6 / r["tps"].astype(float)
    out["records_per_tx"] = expected / tx
    out["kb_per_tx"] = r["log_bytes"].astype(float).fillna(0) / BYTES_PER_KB / tx
    out["bytes_per_record"] = r["log_bytes"].astype(float) / received.where(received > 0)
    dests = r["destinations"] if "destinations" in r.columns else pd.Series([()] * len(r), index=r.index)
    shares = [_family_shares(_destinations(d)) for d in dests]
    for fam in FAMILIES:
        out[family_term(fam)] = [s.get(fam, 0.0) for s in shares] * out["records_per_tx"]
    out = out.reset_index(drop=True)
    out["weight"] = _weights(out)
    return out[list(PREPARED_COLUMNS)]


def _weights(d: pd.DataFrame) -> pd.Series:
    """1 / the pooled within-configuration variance of us_per_tx in each baseline group (study, cell, clients):
    Σ (n_i − 1) s_i² / Σ (n_i − 1) over its configurations. A group without repeats takes the median variance of
    all groups."""
    g = d.groupby("cell_key")["us_per_tx"]
    per = pd.DataFrame({"baseline": g.apply(lambda s: d.loc[s.index[0], "baseline"]),
                        "df": g.count() - 1, "ss": g.var(ddof=1) * (g.count() - 1)})
    per = per[per["df"] > 0]
    pooled = per.groupby("baseline")["ss"].sum() / per.groupby("baseline")["df"].sum()
    pooled = pooled.where(pooled > 0)
    var = d["baseline"].map(pooled).fillna(pooled.median())
    return 1.0 / var


def typical_record_bytes(data: pd.DataFrame, default: int = 200) -> int:
    """Median bytes per received record over the logging runs (the size whose write() floor a cost is set against)."""
    b = data["bytes_per_record"].dropna()
    return int(round(float(b.median()))) if len(b) else default
