"""What one logged line costs: time per transaction regressed on the statement records logged per transaction.

Every measured run contributes one observation: the time per transaction
``us_per_tx = 1e6 / tps`` (µs of wall time per transaction, the inverse of
throughput), the log records the workload's statements caused per transaction,
split by **destination family** (:data:`FAMILIES`: a file, the local syslog, a
remote syslog, a table, or formatted and discarded), and the log bytes per
transaction (kB = 1000 bytes). Each (study, cell, clients) group gets its own
intercept — the baseline cost of a transaction without logging there (a cell is
a study's regime × workload × backend, where it has them) — so the slopes are
what logging adds.

* ``main``:        us_per_tx ~ 0 + C(baseline) + lines_<family> ... + kb_per_tx
  — the cost of a line per destination family, averaged over concurrency levels;
* ``per_clients``: us_per_tx ~ 0 + C(baseline) + C(clients):lines_<family> ... + kb_per_tx
  — the cost of a line per family at each concurrency level on its own. The
  levels are not forced onto a line: on a small machine the cost steps up where
  the clients saturate the cores, it does not grow by a constant per client.

**What enters.** Only the records the workload's statements caused: the records
the configuration declares (``log_records_expected``), less any tracer records a
study injected (``tracer_sent``); records received beyond that (tracers,
start-up queries) never enter the regressor, because a count that grows when
the run is slow makes the regressor a function of the outcome. Studies that
vary something other than what is logged are left out by name
(:data:`NOT_LINE_COST`), as are A/A control rows (``<baseline>_again``: the
baseline again, the study's resolution, not a logging configuration).

**Never pooled across environments, regimes or workloads.** One fit per
(engine, ``env_id``, regime, workload): runs from different machines or
backends are compared side by side, never averaged; a database larger than its
memory (``io_bound``) is fitted apart from a cached one (an IO-bound
transaction's time is dominated by reads, and its noise would set a shared
slope), and MariaDB's sysbench workloads each get their own fit (a read-write
transaction logs several statements of other shapes than a point select).

**The cost of a typical line.** With a kB term in the model, the bare line
coefficient is the cost of a line of zero bytes, an extrapolation that can come
out negative. What a DBA pays is a line of the size the family's records have:
``line + kB × bytes / 1000``, with its CI from the coefficients' covariance
(statsmodels' ``t_test`` of that linear combination), reported per family as
``typical_<family>`` with the bytes it was taken at.

**Weights and errors.** Weighted least squares with weight 1 / (the pooled
within-configuration variance of ``us_per_tx`` in the run's baseline group —
study, cell and clients): groups differ in spread by three orders of magnitude,
and unweighted OLS lets the noisiest groups set the slopes. The variance is
pooled over the group's configurations because a weight estimated from one
configuration's 3–5 repeats is itself so noisy that the intervals come out too
narrow (feasible WLS with per-configuration weights covered a known cost in 15
of 20 synthetic replications). HC3 standard errors
always (no pretest). Cook's distance from the weighted fit flags influential
runs, and the main model is refitted without them (a sensitivity check).

:func:`write_floor` measures the physical floor beside it: one ``write()`` of a
log line's size to an ``O_APPEND`` file (what a logging collector or a server
does to its log file), or into a pipe drained by another process (the backend →
logging collector hop of PostgreSQL's stderr/csvlog/jsonlog destinations).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import patsy
import statsmodels.api as sm
import statsmodels.formula.api as smf
from statsmodels.stats.outliers_influence import OLSInfluence
from scipy import stats as sstats

from . import paths, records, switchwindows
from .settings import is_aa
from .stats import CONFIDENCE

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


# Studies whose configurations vary something other than what is logged: every run logs every statement, and the
# records beyond one per statement are tracers whose count grows with the run's own slowness (the rotation study:
# records per transaction = 1 + tracer records / transactions). Their runs say nothing about the cost of a line.
NOT_LINE_COST = {
    "log_rotation": "its configurations differ in how the log is rotated, not in what is logged; the extra "
                    "records are tracer queries, whose count per transaction grows as the run slows",
    "pg_wal_level": "its configurations differ in how much WAL is written (wal_level), not in what is logged",
    "pg_idle_connections": "its configurations differ in max_connections and open sessions, not in what is logged",
    "pg_audit_timing": "besides what is logged, its configurations switch track_io_timing (a cost without a "
                       "record) and the logging collector (another path for the same line); its own notebook "
                       "sets each against none per concurrency level",
}
MODELS = ("main", "per_clients")
# The sensitivity refit of "main" without the runs flagged by Cook's distance.
WITHOUT_INFLUENTIAL = "main_without_influential"
COV_TYPE = "HC3"
WEIGHTS = "1 / pooled within-configuration variance of µs per transaction in the baseline group (WLS)"
COOKS_FACTOR = 4  # a run is influential when its Cook's distance exceeds COOKS_FACTOR / n
COOKS_RULE = f"Cook's distance > {COOKS_FACTOR}/n"
BYTES_PER_KB = 1000

TERM_UNITS = {"kb_per_tx": "µs per logged kB"}

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


def prepare(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per measured run (warm-ups, A/A rows and studies in :data:`NOT_LINE_COST` dropped) with the
    regression's variables and its WLS weight."""
    r = _observations(runs)
    r = r[~r["study"].astype(str).isin(NOT_LINE_COST) & ~r["configuration"].astype(str).map(is_aa)]
    expected = pd.to_numeric(r["log_records_expected"], errors="coerce").fillna(0)
    if "tracer_sent" in r.columns:  # tracers are queries a study adds, not the workload's statements
        expected = (expected - pd.to_numeric(r["tracer_sent"], errors="coerce").fillna(0)).clip(lower=0)
    received = pd.to_numeric(r["log_records_received"], errors="coerce").fillna(0)
    tx = r["transactions"].astype(float)
    out = pd.DataFrame({
        "study": r["study"].astype(str),
        "engine": r["engine"].astype(str),
        "env_id": r["env_id"].astype(str) if "env_id" in r.columns else "",
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


@dataclass(frozen=True)
class Model:
    """One fitted formula (or why it could not be fitted)."""

    name: str
    formula: str
    result: object | None  # statsmodels WLS results with HC3 covariance
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.result is not None


@dataclass(frozen=True)
class Fit:
    """The models of one engine in one environment."""

    engine: str
    env_id: str
    data: pd.DataFrame
    families: tuple[str, ...]
    models: dict[str, Model]
    cooks: pd.Series  # Cook's distance of the main model, indexed like data
    influential: pd.DataFrame  # runs above the threshold
    cooks_threshold: float
    notes: tuple[str, ...] = field(default_factory=tuple)
    regime: str = CACHED
    workload: str = ""

    @property
    def key(self) -> str:
        return fit_key(self.engine, self.env_id, self.regime, self.workload)

    @property
    def main(self) -> Model:
        return self.models["main"]

    @property
    def studies(self) -> tuple[str, ...]:
        return tuple(sorted(self.data["study"].unique()))


EngineFit = Fit  # the name earlier code used


def fit_key(engine: str, env_id: str, regime: str = CACHED, workload: str = "") -> str:
    """``engine@env_id``, then ``/io_bound`` for an IO-bound fit and ``/<workload>`` where the engine has several."""
    key = f"{engine}@{env_id}" if env_id else engine
    return key + ("" if regime == CACHED else f"/{regime}") + (f"/{workload}" if workload else "")


def _rank_ok(formula: str, data: pd.DataFrame) -> bool:
    y, x = patsy.dmatrices(formula, data, return_type="dataframe")
    return x.shape[0] > x.shape[1] and np.linalg.matrix_rank(x.to_numpy()) == x.shape[1]


def _fit(name: str, formula: str, data: pd.DataFrame) -> Model:
    if not _rank_ok(formula, data):
        return Model(name, formula, None, "not identifiable from these runs (design matrix rank-deficient)")
    res = smf.wls(formula, data, weights=data["weight"]).fit(cov_type=COV_TYPE)
    return Model(name, formula, res)


# A group's log rate "varies" when its range exceeds this share of its largest value.
VARY_MIN = 0.1


def _varies(data: pd.DataFrame, column: str) -> pd.Series:
    g = data.groupby("baseline")[column]
    top = g.transform("max").abs()
    return (g.transform("max") - g.transform("min")) > VARY_MIN * top.where(top > 0, np.inf)


def _cooks_distance(result) -> np.ndarray:
    """Cook's distance of a WLS fit: that of the OLS fit on the whitened variables (statsmodels' influence
    measures are defined for OLS; WLS is OLS on y·√w and X·√w)."""
    whitened = sm.OLS(result.model.wendog, result.model.wexog).fit()
    return np.asarray(OLSInfluence(whitened).cooks_distance[0])


def formulas(families: tuple[str, ...], with_kb: bool = True) -> dict[str, str]:
    lines = [family_term(f) for f in families]
    kb = " + kb_per_tx" if with_kb else ""
    return {
        "main": "us_per_tx ~ 0 + C(baseline) + " + " + ".join(lines) + kb,
        "per_clients": "us_per_tx ~ 0 + C(baseline) + " + " + ".join(f"C(clients):{t}" for t in lines) + kb,
    }


def fit(data: pd.DataFrame, engine: str | None = None, env_id: str | None = None, regime: str | None = None,
        workload: str | None = None) -> Fit:
    """Fit the models to the prepared runs of one engine in one environment, regime and workload (refuses to
    pool several)."""
    chosen = {}
    for col, want in zip(FIT_COLUMNS, (engine, env_id, regime, workload)):
        have = sorted(data[col].unique()) if col in data.columns else [CACHED if col == "regime" else ""]
        if want is None:
            if len(have) != 1:
                raise ValueError(f"fit() takes one {col} at a time; got {have}. Use fit_all().")
            want = have[0]
        if col in data.columns:
            data = data[data[col] == want]
        chosen[col] = want
    engine, env_id = chosen["engine"], chosen["env_id"]
    data = data.reset_index(drop=True)
    notes: list[str] = []
    # A group whose runs all log at the same rate says nothing about the slopes (its intercept absorbs it).
    varies = _varies(data, "records_per_tx") | _varies(data, "kb_per_tx")
    if not varies.all():
        left = data[~varies].groupby("study").size()
        notes.append("left out, their log rate does not vary within a baseline group: "
                     + ", ".join(f"{k} ({v} runs)" for k, v in left.items()))
        data = data[varies].reset_index(drop=True)
    if data["records_per_tx"].nunique() < 2:
        raise ValueError(f"{engine} @ {env_id}: every run logged the same number of records per transaction; "
                         "a per-line cost needs a baseline and at least one logging configuration")
    families = tuple(f for f in FAMILIES if (data[family_term(f)] > 0).any())
    forms = formulas(families)
    if not _rank_ok(forms["main"], data):
        forms = formulas(families, with_kb=False)
        notes.append("the cost per kB is not separable from the cost per line in these runs "
                     "(bytes per record do not vary within a family); kB term dropped")
    models = {}
    for name in MODELS:
        if name == "per_clients" and data["clients"].nunique() < 2:
            models[name] = Model(name, forms[name], None, "one concurrency level only")
            continue
        models[name] = _fit(name, forms[name], data)
    main = models["main"]
    if main.ok:
        cooks = pd.Series(_cooks_distance(main.result), index=data.index, name="cooks_d")
    else:
        cooks = pd.Series(np.nan, index=data.index, name="cooks_d")
    threshold = COOKS_FACTOR / len(data)
    flagged = data.assign(cooks_d=cooks)[cooks > threshold]
    if len(flagged):
        models[WITHOUT_INFLUENTIAL] = _fit(WITHOUT_INFLUENTIAL, forms["main"], data.drop(index=flagged.index))
    else:
        models[WITHOUT_INFLUENTIAL] = Model(WITHOUT_INFLUENTIAL, forms["main"], None,
                                            "no run exceeds the Cook's distance threshold")
    return Fit(engine=engine, env_id=env_id, data=data, families=families, models=models, cooks=cooks,
               influential=flagged, cooks_threshold=threshold, notes=tuple(notes), regime=chosen["regime"],
               workload=chosen["workload"])


def fit_all(data: pd.DataFrame) -> dict[str, Fit]:
    """One fit per (engine, environment, regime, workload) that has a logging configuration, keyed by
    :func:`fit_key`."""
    out = {}
    for group, sub in data.groupby(list(FIT_COLUMNS), sort=True):
        if not _varies(sub, "records_per_tx").any():
            continue
        f = fit(sub, *group)
        out[f.key] = f
    return out


fit_engines = fit_all  # the name earlier code used


def _term_label(term: str) -> tuple[str, str]:
    """(readable term, unit) for a model parameter name."""
    if term in TERM_UNITS:
        return term, TERM_UNITS[term]
    for fam in FAMILIES:
        t = family_term(fam)
        if term == t:
            return t, f"µs per line to {FAMILY_LABELS[fam]}"
        if term.startswith("C(clients)[") and term.endswith(f"]:{t}"):
            k = term[len("C(clients)["):-len(f"]:{t}")]
            return f"{t} @ {k} clients", f"µs per line to {FAMILY_LABELS[fam]}"
    if term.startswith("C(baseline)["):
        return "baseline " + term[len("C(baseline)["):-1], "µs per transaction"
    return term, ""


COEFFICIENT_COLUMNS = ("fit", "engine", "env_id", "regime", "workload", "studies", "model", "term", "family",
                       "clients", "unit", "estimate", "ci_low", "ci_high", "se", "p", "n", "cov_type", "bytes")
TYPICAL = "typical_"


def typical_term(family: str) -> str:
    return TYPICAL + family


def family_bytes(data: pd.DataFrame, family: str) -> float:
    """The median bytes per record of the runs that log to ``family`` (the size its typical line is taken at)."""
    b = data.loc[data[family_term(family)] > 0, "bytes_per_record"].dropna()
    return float(b.median()) if len(b) else math.nan


def typical_lines(f: Fit, model: Model, confidence: float = CONFIDENCE) -> list[dict]:
    """Per family (and, in ``per_clients``, per level): line + kB × (the family's median bytes per record) / 1000,
    with its CI from the fitted covariance (a t test of that linear combination, HC3 like the coefficients).
    Without a kB term in the model the line coefficient already carries the bytes, and the typical line is that
    coefficient."""
    res = model.result
    names = list(res.params.index)
    rows = []
    for fam in f.families:
        term = family_term(fam)
        nbytes = family_bytes(f.data, fam)
        if "kb_per_tx" in names and not math.isfinite(nbytes):
            continue
        levels = [(term, math.nan)] if term in names else [
            (n, int(n[len("C(clients)["):-len(f"]:{term}")])) for n in names
            if n.startswith("C(clients)[") and n.endswith(f"]:{term}")]
        for name, clients in levels:
            contrast = np.zeros(len(names))
            contrast[names.index(name)] = 1.0
            if "kb_per_tx" in names:
                contrast[names.index("kb_per_tx")] = nbytes / BYTES_PER_KB
            t = res.t_test(contrast)
            low, high = np.asarray(t.conf_int(alpha=1 - confidence)).ravel()
            label = typical_term(fam) + ("" if math.isnan(clients) else f" @ {clients} clients")
            rows.append({"term": label, "family": fam, "clients": clients, "bytes": nbytes,
                         "unit": f"µs per typical line to {FAMILY_LABELS[fam]}",
                         "estimate": float(np.asarray(t.effect).ravel()[0]), "ci_low": float(low),
                         "ci_high": float(high), "se": float(np.asarray(t.sd).ravel()[0]),
                         "p": float(np.asarray(t.pvalue).ravel()[0])})
    return rows


def _family_of(label: str) -> str:
    for fam in FAMILIES:
        if label.split(" @ ")[0] == family_term(fam):
            return fam
    return ""


def coefficients(fits: dict[str, Fit], confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Every model's parameters with their CI, one row per (fit, model, term)."""
    rows = []
    for key, f in fits.items():
        for name, m in f.models.items():
            if not m.ok:
                continue
            res = m.result
            ci = res.conf_int(alpha=1 - confidence)
            common = {"fit": key, "engine": f.engine, "env_id": f.env_id, "regime": f.regime, "workload": f.workload,
                      "studies": ", ".join(f.studies), "model": name, "n": int(res.nobs), "cov_type": res.cov_type}
            for term in res.params.index:
                label, unit = _term_label(term)
                clients = int(label.split(" @ ")[1].split()[0]) if " @ " in label and label.startswith("lines_") \
                    else math.nan
                rows.append({
                    **common, "term": label, "family": _family_of(label), "clients": clients, "unit": unit,
                    "estimate": float(res.params[term]), "ci_low": float(ci.loc[term, 0]),
                    "ci_high": float(ci.loc[term, 1]), "se": float(res.bse[term]), "p": float(res.pvalues[term]),
                })
            rows += [{**common, **t} for t in typical_lines(f, m, confidence)]
    return pd.DataFrame(rows, columns=list(COEFFICIENT_COLUMNS))


DIAGNOSTIC_COLUMNS = ("fit", "engine", "env_id", "regime", "workload", "studies", "model", "formula", "fitted", "note", "n", "r2", "r2_adj",
                      "cov_type", "weights", "condition_number", "n_influential", "cooks_threshold", "max_cooks_d",
                      "engine_notes")


def diagnostics(fits: dict[str, Fit]) -> pd.DataFrame:
    """One row per (fit, model): fit quality, covariance, weights, influence."""
    rows = []
    for key, f in fits.items():
        for name, m in f.models.items():
            row = {"fit": key, "engine": f.engine, "env_id": f.env_id, "regime": f.regime, "workload": f.workload,
                   "studies": ", ".join(f.studies),
                   "model": name, "formula": m.formula, "fitted": m.ok, "note": m.note,
                   "n": math.nan, "r2": math.nan, "r2_adj": math.nan, "cov_type": COV_TYPE, "weights": WEIGHTS,
                   "condition_number": math.nan,
                   "n_influential": len(f.influential) if name == "main" else math.nan,
                   "cooks_threshold": f.cooks_threshold if name == "main" else math.nan,
                   "max_cooks_d": float(f.cooks.max()) if name == "main" else math.nan,
                   "engine_notes": "; ".join(f.notes)}
            if m.ok:
                row.update(n=int(m.result.nobs), r2=float(m.result.rsquared), r2_adj=float(m.result.rsquared_adj),
                           condition_number=float(m.result.condition_number))
            rows.append(row)
    return pd.DataFrame(rows, columns=list(DIAGNOSTIC_COLUMNS))


def influential_runs(fits: dict[str, Fit]) -> pd.DataFrame:
    cols = ["fit", "engine", "env_id", "study", "configuration", "clients", "repeat", "us_per_tx", "records_per_tx",
            "kb_per_tx", "cooks_d"]
    frames = [f.influential.assign(fit=k)[cols] for k, f in fits.items() if len(f.influential)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)


def residuals(fit: Fit) -> pd.DataFrame:
    """The main model's fitted values, residuals and Cook's distance per run (for the diagnostic plots)."""
    m = fit.main
    return fit.data.assign(fitted=np.asarray(m.result.fittedvalues), residual=np.asarray(m.result.resid),
                           cooks_d=fit.cooks.to_numpy())


# --- the physical floor -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WriteFloor:
    target: str  # "file" (O_APPEND) or "pipe" (drained by another process)
    nbytes: int
    batches: int
    batch: int
    median_us: float
    ci_low: float
    ci_high: float

    def as_dict(self) -> dict:
        return dict(self.__dict__)


WRITE_TARGETS = ("file", "pipe")


def write_floor(nbytes: int, *, target: str = "file", batches: int = 200, batch: int = 100,
                directory: Path | str | None = None, confidence: float = CONFIDENCE, seed: int = 0) -> WriteFloor:
    """Time ``os.write`` of ``nbytes`` bytes: ``batches`` timed batches of ``batch`` writes each.

    Each batch gives the mean time of one write (timing a batch keeps the clock's
    own overhead out); the floor is the median over batches with a percentile
    bootstrap CI (scipy). ``file`` appends to a file opened with ``O_APPEND`` in a
    temporary directory under ``directory`` (default: the suite's on-disk scratch
    root, where the servers' logs go); ``pipe`` writes into a pipe that a ``cat``
    process drains, as a backend writes to PostgreSQL's logging collector.
    """
    if target not in WRITE_TARGETS:
        raise ValueError(f"target {target!r}; allowed: {WRITE_TARGETS}")
    if nbytes < 1 or batches < 2 or batch < 1:
        raise ValueError("nbytes >= 1, batches >= 2 and batch >= 1 are needed")
    buf = b"x" * (int(nbytes) - 1) + b"\n"
    per_write = np.empty(batches)
    root = Path(directory) if directory is not None else paths.scratch_root()
    with tempfile.TemporaryDirectory(prefix="logbench-floor-", dir=root) as tmp:
        proc = None
        if target == "file":
            fd = os.open(Path(tmp) / "floor.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        else:
            proc = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
            fd = proc.stdin.fileno()
        try:
            for _ in range(batch):  # warm the page cache / the pipe
                os.write(fd, buf)
            for i in range(batches):
                t0 = time.perf_counter_ns()
                for _ in range(batch):
                    os.write(fd, buf)
                per_write[i] = (time.perf_counter_ns() - t0) / batch / 1000.0
        finally:
            if proc is None:
                os.close(fd)
            else:
                proc.stdin.close()
                proc.wait(timeout=30)
    boot = sstats.bootstrap((per_write,), np.median, confidence_level=confidence, method="percentile",
                            n_resamples=2000, rng=np.random.default_rng(seed))
    return WriteFloor(target, int(nbytes), batches, batch, float(np.median(per_write)),
                      float(boot.confidence_interval.low), float(boot.confidence_interval.high))


def typical_record_bytes(data: pd.DataFrame, default: int = 200) -> int:
    """Median bytes per received record over the logging runs (the size the floor is measured at)."""
    b = data["bytes_per_record"].dropna()
    return int(round(float(b.median()))) if len(b) else default


# --- a synthetic study with a known cost (tests, and a dry run of the pipeline) -----------------------------


def synthetic_runs(*, line_cost_us: float | dict[str, float] = 4.0, kb_cost_us: float = 1.5,
                   line_cost_per_client_us: float = 0.0,
                   configurations: dict[str, tuple] | None = None,
                   clients: tuple[int, ...] = (1, 2, 4), base_us: dict[int, float] | None = None,
                   repeats: int = 5, noise_cv: float = 0.01, duration_s: float = 10.0, seed: int = 1,
                   study: str = "synthetic", engine: str = "postgresql", env_id: str = "synthetic",
                   cpu_count: int = 2) -> pd.DataFrame:
    """Runs shaped like :class:`logbench.records.Run` rows whose time per transaction is known exactly.

    ``configurations`` maps a name to (records per transaction, bytes per record[, destinations]); without
    destinations they are read from the name (``"syslog,csvlog"``; a name that is no destination logs to
    ``stderr``). The first configuration is the baseline and must log nothing. ``line_cost_us`` is one cost
    or a cost per destination family. Time per transaction = base(clients) + Σ over destinations of
    lines × (family cost + per_client × (clients − 1)) + kB × kb_cost, times a normal noise factor with
    coefficient of variation ``noise_cv``.
    """
    configurations = configurations or {"none": (0, 0), "stderr": (2, 120), "csvlog": (2, 260),
                                        "jsonlog": (2, 480), "syslog,csvlog": (4, 190)}
    costs = line_cost_us if isinstance(line_cost_us, dict) else {f: float(line_cost_us) for f in FAMILIES}
    base_us = base_us or {c: 60.0 / min(c, cpu_count) + 5.0 for c in clients}
    rng = np.random.default_rng(seed)
    rows = []
    position = 0
    for rep in range(repeats):
        for cfg, spec in configurations.items():
            rec, bpr = spec[0], spec[1]
            if len(spec) > 2:
                dests = tuple(spec[2])
            elif not rec:
                dests = ()
            else:
                named = tuple(cfg.split(","))
                dests = named if all(d in DESTINATION_FAMILY for d in named) else ("stderr",)
            shares = _family_shares(dests) if rec else {}
            for c in clients:
                us = (base_us[c] + sum(rec * share * (costs[fam] + line_cost_per_client_us * (c - 1))
                                       for fam, share in shares.items())
                      + rec * bpr / BYTES_PER_KB * kb_cost_us)
                us *= 1 + noise_cv * rng.standard_normal()
                tps = 1e6 / us
                tx = int(round(tps * duration_s))
                tps = tx / duration_s
                records = int(rec * tx)
                log_bytes = int(records * bpr)
                rows.append({
                    "study": study, "configuration": cfg, "engine": engine, "clients": c, "threads": c,
                    "repeat": rep, "position": position, "warmup": False, "duration_s": duration_s,
                    "wall_s": duration_s, "transactions": tx, "failed": 0, "tps": tps,
                    "latency_mean_ms": c * us / 1000.0, "latency_p95_ms": 1.5 * c * us / 1000.0,
                    "log_records_expected": records, "log_records_received": records,
                    "log_loss": math.nan if records == 0 else 0.0, "log_lines": records, "log_bytes": log_bytes,
                    "log_lines_per_s": records / duration_s, "log_bytes_per_s": log_bytes / duration_s,
                    "server_cpu_s": duration_s * min(c, cpu_count) * 0.5, "logger_cpu_s": 0.0,
                    "destinations": json.dumps(list(dests)),
                    "env_id": env_id, "scale": 10, "workload": "pgbench -S",
                })
                position += 1
    return pd.DataFrame(rows)
