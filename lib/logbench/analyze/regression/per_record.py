"""What one log record costs, read off the throughput studies: throughput against the log rate in records, its
slope the machine time of one record with a CI, set beside study 11's counted figure (issue 42).

The line-cost fit of this package (:mod:`.model`) regresses wall µs per transaction on the records a configuration
declares and on the kilobytes that arrived. Its bare line coefficient is a line of zero bytes and came out negative
(−4.2 µs per line in the committed fit), and a rate-limited syslog run entered it with every record it sent and ~0 kB
arrived. This fit asks what a DBA asks — what does a log rate cost in throughput — in records, each counted:

    cores × 10⁶ / tps  =  T₀(group)  +  Σ_family  c_family × records_family per transaction

The left side is the machine time of a transaction (µs of the cores); with R = records per second it is the same
line as  1 − tps / tps₀ = R × c / (cores × 10⁶), the answer's formula, so the slope ``c`` is the machine µs one
record costs, whatever the process (backend, collector, syslog daemon) that spends it on these cores.

* **Records are counted, not assumed.** Per run, what arrived at each destination (``log_records_by_destination``,
  else ``log_records_received`` split over the run's destinations) over its transactions, less the tracers a study
  injected: the records per statement each study's configurations make (2 for a prepared statement logged with
  its duration: bind and execute; 1 in the simple protocol; whatever a MariaDB transaction's statements make) come
  from the runs, never from a configuration's name. Lines are not records: a record with a DETAIL line is two lines.
* **A run that lost records is left out** (received below ``1 − LOSS_TOLERANCE`` of the records due): rsyslog's
  rate limit drops them at its door after the backend formatted and sent them, so neither the records sent nor
  those arrived are the records the run paid for. So is a run with nowhere to count them (formatted, then
  discarded: MariaDB's slow log to /dev/null).
* **Only where the cores are busy.** Machine time per transaction is the cores' time only when every core is
  working: levels with at least as many clients as cores, on cached data. Below that a transaction's time is its
  latency, and an IO-bound transaction waits on storage; those runs are left out, counted in ``left_out``.
* **Groups, weights, errors as the line-cost fit**: one intercept per baseline group (study, cell, clients), WLS
  with 1 / the group's pooled within-configuration variance, HC3 standard errors (statsmodels); one fit per engine,
  environment and workload, never pooled across them. ``per_clients``: a slope per family and level beside the
  pooled one, where the cost of a record may grow with contention.
* **No negative cost is a finding.** Each slope carries a ``status``: ``cost per record`` (its CI above 0), ``not
  resolved`` (its CI holds 0) or ``not physical`` (a point at or below 0: a record cannot make a transaction
  cheaper; ``why`` says what that means here). Only the first is printed as a cost.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

from ...base.settings import is_aa
from ...base.stats import CONFIDENCE
from .model import COV_TYPE, _rank_ok, _varies
from .observations import (CELL_COLUMNS, DESTINATION_FAMILY, DISCARDED, FAMILIES, IO_REGIMES, _destinations,
                           _observations, _weights, fit_environment, text_column)

# A run whose destinations received fewer than this share below the records due lost records on the way.
LOSS_TOLERANCE = 0.01
MODELS = ("main", "per_clients")
COST, UNRESOLVED, NOT_PHYSICAL = "cost per record", "not resolved", "not physical"

# Study 11's counted configurations (the cost model's per-record rule, counted variant) that a family's records
# are made by in the throughput studies: the counted figure printed beside each slope is their range.
COUNTED_FOR = {
    ("postgresql", "file"): ("stderr", "csvlog", "jsonlog", "log_statement_all", "log_duration"),
    ("postgresql", "syslog"): ("syslog",),
    ("postgresql", "remote_syslog"): ("remote_syslog_udp",),
    ("mariadb", "file"): ("slow_file", "general_file"),
    ("mariadb", "table"): ("slow_table",),
}
# Where the counted figure leaves out work this fit's machine time includes.
COUNTED_NOTE = {"remote_syslog": "counted without the receiver, which runs on the same cores here"}

PREPARED_COLUMNS = ("study", "engine", "env_id", "workload", "configuration", "clients", "cores", "repeat",
                    "baseline", "cell_key", "tps", "machine_us_per_tx", "records_per_tx", "records_per_s",
                    *(f"rec_{f}" for f in FAMILIES))
COLUMNS = ("fit", "engine", "env_id", "workload", "studies", "model", "family", "clients", "n", "n_groups",
           "records_per_tx", "records_per_s_max", "estimate", "ci_low", "ci_high", "se", "p", "cov_type", "status",
           "why", "counted_low", "counted_high", "counted_configurations", "counted_note", "left_out")


def _family_records(row: pd.Series, received: float) -> dict[str, float]:
    """Records counted per family: per destination where the run recorded them, else the received total split over
    its destinations (each destination receives every record)."""
    by = row.get("log_records_by_destination")
    if isinstance(by, str) and by.strip():
        try:
            by = json.loads(by)
        except ValueError:
            by = None
    out: dict[str, float] = {}
    if isinstance(by, dict) and by:
        for dest, n in by.items():
            fam = DESTINATION_FAMILY.get(str(dest))
            if fam is not None and n == n:
                out[fam] = out.get(fam, 0.0) + float(n)
        if out:
            return out
    dests = _destinations(row.get("destinations"))
    for d in dests:
        fam = DESTINATION_FAMILY.get(d, DISCARDED)
        out[fam] = out.get(fam, 0.0) + received / len(dests)
    return out


def prepare(runs: pd.DataFrame, cores: Mapping[str, int], not_line_cost: Collection[str] = ()) -> tuple[
        pd.DataFrame, pd.DataFrame]:
    """(the fit's rows, the runs left out with their reason). ``cores``: each study's cores (its environment
    record's cpu_count), keyed as the runs' ``study``."""
    r = _observations(runs)
    r = r[~r["study"].astype(str).isin(not_line_cost) & ~r["configuration"].astype(str).map(is_aa)]
    r = r.reset_index(drop=True)
    n_cores = r["study"].astype(str).map(lambda s: cores.get(s, math.nan)).astype(float)
    expected = pd.to_numeric(r.get("log_records_expected"), errors="coerce").fillna(0.0)
    received = pd.to_numeric(r.get("log_records_received"), errors="coerce").fillna(0.0)
    tracers = (pd.to_numeric(r["tracer_sent"], errors="coerce").fillna(0.0) if "tracer_sent" in r.columns
               else pd.Series(0.0, index=r.index))
    tx = r["transactions"].astype(float)
    regime = text_column(r, "regime")
    dests = r["destinations"] if "destinations" in r.columns else pd.Series([()] * len(r), index=r.index)
    has_dest = dests.map(lambda d: bool(_destinations(d)))
    reasons = pd.Series("", index=r.index, dtype=object)

    def leave(mask: pd.Series, why: str) -> None:
        reasons[mask & (reasons == "")] = why

    leave(n_cores.isna(), "the study's environment record names no cpu_count")
    leave(regime.isin(IO_REGIMES), "IO-bound: a transaction waits on storage, the cores are not busy")
    leave(r["clients"].astype(float) < n_cores, "fewer clients than cores: a transaction's time is its latency, "
                                                "not the cores' time")
    leave((expected > 0) & ~has_dest, "nowhere to count its records (formatted, then discarded)")
    leave((expected > 0) & has_dest & (received < (1 - LOSS_TOLERANCE) * (expected + tracers)),
          "records lost before their destination (rsyslog's rate limit): neither those sent nor those arrived "
          "are the records the run paid for")
    kept = reasons == ""
    left = pd.DataFrame({"study": r["study"].astype(str), "configuration": r["configuration"].astype(str),
                         "clients": r["clients"].astype(int), "reason": reasons})[~kept].reset_index(drop=True)
    r, n_cores, received, tracers, tx = (x[kept] for x in (r, n_cores, received, tracers, tx))
    counted = (received - tracers).clip(lower=0)
    out = pd.DataFrame({
        "study": r["study"].astype(str), "engine": r["engine"].astype(str), "env_id": fit_environment(r),
        "workload": text_column(r, "test"), "configuration": r["configuration"].astype(str),
        "clients": r["clients"].astype(int), "cores": n_cores.astype(int), "repeat": r["repeat"].astype(int),
    })
    cell = pd.Series("", index=r.index, dtype=object)
    for col in CELL_COLUMNS:
        if col in r.columns:
            cell = cell + text_column(r, col).map(lambda x: "/" + x if x else "")
    out["baseline"] = out["study"] + cell + " @ " + out["clients"].astype(str)
    out["cell_key"] = out["baseline"] + " | " + out["configuration"]
    out["tps"] = r["tps"].astype(float)
    out["machine_us_per_tx"] = out["cores"] * 1e6 / out["tps"]
    fams = [_family_records(row, rec) for (_, row), rec in zip(r.iterrows(), counted)]
    scale = (counted / received.where(received > 0)).fillna(0.0)  # the tracers' share taken out of every family
    for fam in FAMILIES:
        out[f"rec_{fam}"] = [f.get(fam, 0.0) for f in fams] * scale.to_numpy() / tx.to_numpy()
    out["records_per_tx"] = out[[f"rec_{f}" for f in FAMILIES]].sum(axis=1)
    out["records_per_s"] = out["records_per_tx"] * out["tps"]
    return out.reset_index(drop=True)[list(PREPARED_COLUMNS)], left


def _level_columns(g: pd.DataFrame, families: tuple[str, ...]) -> dict[str, pd.Series]:
    """``at<k>_rec_<family>``: a family's records at one level, 0 elsewhere; only where that level logged to it (a
    pair no run has would leave the design rank-deficient and lose every level's slope)."""
    cols = {}
    for k in sorted(g["clients"].unique()):
        for f in families:
            v = g[f"rec_{f}"].where(g["clients"] == k, 0.0)
            if (v > 0).any():
                cols[f"at{k}_rec_{f}"] = v
    return cols


def _formula(terms) -> str:
    return "machine_us_per_tx ~ 0 + C(baseline) + " + " + ".join(terms)


def _status(estimate: float, low: float) -> tuple[str, str]:
    if not estimate > 0:
        return NOT_PHYSICAL, ("a record cannot make a transaction cheaper: within a group the runs that logged more "
                              "were not slower, so what separates them here is noise or other work than their "
                              "records, not a cost per record")
    if not low > 0:
        return UNRESOLVED, "its CI holds 0: these runs do not separate a record's cost from no cost"
    return COST, ""


def _counted(engine: str, family: str, counted: pd.DataFrame | None) -> dict:
    confs = COUNTED_FOR.get((engine, family), ())
    row = {"counted_low": math.nan, "counted_high": math.nan, "counted_configurations": "",
           "counted_note": COUNTED_NOTE.get(family, "")}
    if counted is None or not len(counted) or not confs:
        return row
    c = counted[(counted["engine"] == engine) & counted["configuration"].isin(confs)]
    if "model" in c.columns:
        c = c[c["model"] == "counted"]
    v = pd.to_numeric(c["us_per_record"], errors="coerce").dropna()
    if len(v):
        row.update(counted_low=float(v.min()), counted_high=float(v.max()),
                   counted_configurations=", ".join(c["configuration"].astype(str)))
    return row


def _span(x: pd.Series) -> str:
    """'2' or '1.98-2.02': the records per transaction a slope's runs counted to its family."""
    if not len(x):
        return ""
    lo, hi = f"{x.min():.3g}", f"{x.max():.3g}"
    return lo if lo == hi else f"{lo}-{hi}"


def fit(data: pd.DataFrame, counted: pd.DataFrame | None = None, left: pd.DataFrame | None = None,
        confidence: float = CONFIDENCE) -> pd.DataFrame:
    """One row per (engine, environment, workload) fit, model and family (and level, in ``per_clients``): the
    slope, its CI, its status and the counted figure beside it. ``counted``: the cost model's per-record rule
    (``findings_cost_model_rule.csv``)."""
    rows = []
    for (engine, env, workload), g in data.groupby(["engine", "env_id", "workload"], sort=True):
        g = g[_varies(g, "records_per_tx")].reset_index(drop=True)  # a group without a logging arm says nothing
        families = tuple(f for f in FAMILIES if (g[f"rec_{f}"] > 0).any()) if len(g) else ()
        if not families:
            continue
        g = g.assign(weight=_weights(g.rename(columns={"machine_us_per_tx": "us_per_tx"})))
        studies = g["study"].unique()
        drop = left[left["study"].isin(studies)] if left is not None and len(left) else None
        left_text = ("; ".join(f"{n} run(s): {why}" for why, n in drop.groupby("reason").size().items())
                     if drop is not None and len(drop) else "")
        key = f"{engine}@{env}" + (f"/{workload}" if workload else "")
        for model in MODELS:
            if model == "per_clients" and g["clients"].nunique() < 2:
                continue
            levels = _level_columns(g, families) if model == "per_clients" else {}
            data = g.assign(**levels)
            formula = _formula(list(levels) if levels else [f"rec_{f}" for f in families])
            if not _rank_ok(formula, data):
                continue
            res = smf.wls(formula, data, weights=data["weight"]).fit(cov_type=COV_TYPE)
            ci = res.conf_int(alpha=1 - confidence)
            for term in res.params.index:
                if "rec_" not in term:
                    continue
                fam = term.split("rec_", 1)[1]
                k = int(term[len("at"):term.index("_")]) if term.startswith("at") else None
                sub = g[g[f"rec_{fam}"] > 0] if k is None else g[(g[f"rec_{fam}"] > 0) & (g["clients"] == k)]
                est, low, high = float(res.params[term]), float(ci.loc[term, 0]), float(ci.loc[term, 1])
                status, why = _status(est, low)
                rows.append({"fit": key, "engine": engine, "env_id": env, "workload": workload,
                             "studies": ", ".join(sorted(studies)), "model": model, "family": fam,
                             "clients": "/".join(str(x) for x in sorted(sub["clients"].unique())) if k is None
                             else str(k), "n": int(res.nobs), "n_groups": int(g["baseline"].nunique()),
                             "records_per_tx": _span(sub[f"rec_{fam}"]),
                             "records_per_s_max": float(sub["records_per_s"].max()) if len(sub) else math.nan,
                             "estimate": est, "ci_low": low, "ci_high": high, "se": float(res.bse[term]),
                             "p": float(res.pvalues[term]), "cov_type": res.cov_type, "status": status, "why": why,
                             **_counted(engine, fam, counted), "left_out": left_text})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def record_costs(runs: pd.DataFrame, cores: Mapping[str, int], not_line_cost: Collection[str] = (),
                 counted: pd.DataFrame | None = None) -> pd.DataFrame:
    """The fits' table (:func:`fit`) from the pooled runs; empty (with its columns) where nothing can be fitted."""
    if not len(runs):
        return pd.DataFrame(columns=list(COLUMNS))
    data, left = prepare(runs, cores, not_line_cost)
    if not len(data):
        return pd.DataFrame(columns=list(COLUMNS))
    return fit(data, counted, left)


def finding_text(table: pd.DataFrame) -> list[str]:
    """One sentence per pooled slope: a cost per record beside the counted figure, or why it is not one."""
    from ...base.formatting import ci_text, number

    out = []
    for _, r in table[table["model"] == "main"].iterrows():
        head = f"{r['fit']}, records to {r['family']} ({r['clients']} clients, n = {r['n']})"
        counted = ""
        if np.isfinite(r["counted_low"]):
            span = number(r["counted_low"]) + ("" if r["counted_high"] == r["counted_low"]
                                               else f"-{number(r['counted_high'])}")
            note = f"; {r['counted_note']}" if r["counted_note"] else ""
            counted = f"; study 11 counted {span} µs ({r['counted_configurations']}{note})"
        if r["status"] == COST:
            out.append(f"{head}: {ci_text(r['estimate'], r['ci_low'], r['ci_high'])} machine µs per record{counted}.")
        else:
            out.append(f"{head}: {r['status']} — {r['why']}{counted}.")
    return out
