"""What one logged line costs: throughput regressed on log rate, across studies of one engine.

Every measured run contributes one observation: the time per transaction
``us_per_tx = 1e6 / tps`` (µs of wall time per transaction, the inverse of
throughput), the log records the server emitted per transaction and the log
bytes per transaction (kB = 1000 bytes). Each (study, cell, clients) group gets
its own intercept — the baseline cost of a transaction without logging there (a
cell is a study's regime × workload, where it has them) — so the slopes are what
logging adds:

* ``main``:        us_per_tx ~ 0 + C(baseline) + records_per_tx + kb_per_tx
* ``interaction``: ... + records_per_tx:extra_clients   (extra_clients = clients - 1)
  — does the cost of a line grow with concurrency (post 003's pipe contention)?
* ``per_clients``: us_per_tx ~ 0 + C(baseline) + C(clients):records_per_tx + kb_per_tx
  — the cost of a line at each concurrency level on its own.

Statistics come from statsmodels: OLS (formula API), Breusch–Pagan for
heteroskedasticity (Koenker's studentised form), HC3 standard errors when that
test rejects at 5 % (the rule, stated once in :data:`ROBUST_RULE`), Cook's
distance from :class:`~statsmodels.stats.outliers_influence.OLSInfluence`.

"Records" are what the server emitted: ``max(log_records_expected,
log_records_received)`` — expected counts what a lossy destination (UDP) was
still sent, received covers a study that cannot predict its records.

:func:`write_floor` measures the physical floor beside it: one ``write()`` of a
log line's size to an ``O_APPEND`` file, or into a pipe drained by another
process (the backend → logging collector hop).
"""

from __future__ import annotations

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
import statsmodels.formula.api as smf
from scipy import stats as sstats
from statsmodels.stats.diagnostic import het_breuschpagan
from statsmodels.stats.outliers_influence import OLSInfluence

from . import paths
from .stats import CONFIDENCE

FORMULAS: dict[str, str] = {
    "main": "us_per_tx ~ 0 + C(baseline) + records_per_tx + kb_per_tx",
    "interaction": "us_per_tx ~ 0 + C(baseline) + records_per_tx + records_per_tx:extra_clients + kb_per_tx",
    "per_clients": "us_per_tx ~ 0 + C(baseline) + C(clients):records_per_tx + kb_per_tx",
}
# The sensitivity refit of "main" without the runs flagged by Cook's distance.
WITHOUT_INFLUENTIAL = "main_without_influential"
BP_ALPHA = 0.05
ROBUST_RULE = (f"HC3 standard errors when the Breusch–Pagan test of the main model rejects homoskedasticity "
               f"at {BP_ALPHA:g}, classical OLS standard errors otherwise")
COOKS_FACTOR = 4  # a run is influential when its Cook's distance exceeds COOKS_FACTOR / n
COOKS_RULE = f"Cook's distance > {COOKS_FACTOR}/n"
BYTES_PER_KB = 1000

TERM_UNITS = {
    "records_per_tx": "µs per logged line",
    "kb_per_tx": "µs per logged kB",
    "records_per_tx:extra_clients": "µs per logged line per extra client",
}

# Run columns that split a study into cells with baselines of their own (mysql_slowlog: regime and workload).
# A cell has its own baseline intercept: a MariaDB regime × workload, or a backend (local or container).
CELL_COLUMNS = ("regime", "test", "backend")

PREPARED_COLUMNS = ("study", "engine", "configuration", "clients", "repeat", "baseline", "extra_clients",
                    "us_per_tx", "records_per_tx", "kb_per_tx", "bytes_per_record")


def prepare(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per measured run (warm-ups dropped) with the regression's variables."""
    r = runs
    if "warmup" in r.columns:
        r = r[~r["warmup"].astype(str).str.lower().isin(("true", "1"))]
    r = r[(r["tps"] > 0) & (r["transactions"] > 0)]
    expected = pd.to_numeric(r["log_records_expected"], errors="coerce").fillna(0)
    received = pd.to_numeric(r["log_records_received"], errors="coerce").fillna(0)
    records = np.maximum(expected, received)
    out = pd.DataFrame({
        "study": r["study"].astype(str),
        "engine": r["engine"].astype(str),
        "configuration": r["configuration"].astype(str),
        "clients": r["clients"].astype(int),
        "repeat": r["repeat"].astype(int),
    })
    # A study made of cells (mysql_slowlog: regime × workload) compares configurations within a cell only.
    cell = pd.Series("", index=r.index, dtype=object)
    for col in CELL_COLUMNS:
        if col in r.columns:  # pooled with studies without cells: their rows have no value here
            v = r[col].astype(object).where(r[col].notna(), "").astype(str)
            cell = cell + v.map(lambda x: "/" + x if x else "")
    out["baseline"] = out["study"] + cell.to_numpy() + " @ " + out["clients"].astype(str)
    out["extra_clients"] = out["clients"] - 1
    out["us_per_tx"] = 1e6 / r["tps"].astype(float)
    out["records_per_tx"] = records / r["transactions"].astype(float)
    out["kb_per_tx"] = r["log_bytes"].astype(float) / BYTES_PER_KB / r["transactions"].astype(float)
    received_pos = received.where(received > 0)
    out["bytes_per_record"] = r["log_bytes"].astype(float) / received_pos
    return out.reset_index(drop=True)[list(PREPARED_COLUMNS)]


@dataclass(frozen=True)
class Model:
    """One fitted formula (or why it could not be fitted)."""

    name: str
    formula: str
    result: object | None  # statsmodels RegressionResults with the chosen covariance
    ols: object | None  # the same fit with classical covariance (influence needs it)
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.result is not None


@dataclass(frozen=True)
class EngineFit:
    engine: str
    data: pd.DataFrame
    cov_type: str  # "HC3" or "nonrobust", by ROBUST_RULE
    bp_pvalue: float
    models: dict[str, Model]
    cooks: pd.Series  # Cook's distance of the main model, indexed like data
    influential: pd.DataFrame  # runs above the threshold
    cooks_threshold: float
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def main(self) -> Model:
        return self.models["main"]


def _rank_ok(formula: str, data: pd.DataFrame) -> bool:
    y, x = patsy.dmatrices(formula, data, return_type="dataframe")
    return x.shape[0] > x.shape[1] and np.linalg.matrix_rank(x.to_numpy()) == x.shape[1]


def _fit(name: str, formula: str, data: pd.DataFrame, cov_type: str) -> Model:
    if not _rank_ok(formula, data):
        return Model(name, formula, None, None, "not identifiable from these runs (design matrix rank-deficient)")
    ols = smf.ols(formula, data).fit()
    res = ols if cov_type == "nonrobust" else smf.ols(formula, data).fit(cov_type=cov_type)
    return Model(name, formula, res, ols)


def _drop_term(formula: str, term: str) -> str:
    return formula.replace(f" + {term}", "")


# A group's log rate "varies" when its range exceeds this share of its largest value (received records
# wobble by a few in ten thousand; a logging configuration against its baseline differs by 100 %).
VARY_MIN = 0.1


def _varies(data: pd.DataFrame, column: str) -> pd.Series:
    g = data.groupby("baseline")[column]
    top = g.transform("max").abs()
    return (g.transform("max") - g.transform("min")) > VARY_MIN * top.where(top > 0, np.inf)


def fit(data: pd.DataFrame, engine: str | None = None) -> EngineFit:
    """Fit the three models to prepared runs of one engine; the covariance type follows ROBUST_RULE."""
    if engine is None:
        engines = sorted(data["engine"].unique())
        if len(engines) != 1:
            raise ValueError(f"fit() pools one engine at a time; got {engines}. Use fit_engines().")
        engine = engines[0]
    data = data[data["engine"] == engine].reset_index(drop=True)
    notes: list[str] = []
    # A (study, cell, clients) group whose runs all log at the same rate says nothing about the slopes
    # (its intercept absorbs it) and only adds its own noise: e.g. a study that varies something else.
    varies = _varies(data, "records_per_tx") | _varies(data, "kb_per_tx")
    if not varies.all():
        left = data[~varies].groupby("study").size()
        notes.append("left out, their log rate does not vary within a baseline group: "
                     + ", ".join(f"{k} ({v} runs)" for k, v in left.items()))
        data = data[varies].reset_index(drop=True)
    formulas = dict(FORMULAS)
    if data["records_per_tx"].nunique() < 2:
        raise ValueError(f"{engine}: every run logged the same number of records per transaction; "
                         "a per-line cost needs a baseline and at least one logging configuration")
    if not _rank_ok(formulas["main"], data):
        # Typically: every logging configuration writes the same bytes per record, so lines and kB coincide.
        formulas = {k: _drop_term(v, "kb_per_tx") for k, v in formulas.items()}
        notes.append("the cost per kB is not separable from the cost per line in these runs "
                     "(bytes per record do not vary); kB term dropped")
    if data["clients"].nunique() < 2:
        notes.append("one concurrency level only: no interaction with clients")
    main_ols = smf.ols(formulas["main"], data).fit()
    het_x = patsy.dmatrix(formulas["main"].split("~")[1].replace("0 +", "1 +"), data, return_type="dataframe")
    try:
        bp_p = float(het_breuschpagan(main_ols.resid, het_x)[1])
    except ValueError:
        bp_p = math.nan
    cov_type = "HC3" if (not math.isnan(bp_p) and bp_p < BP_ALPHA) else "nonrobust"
    models = {}
    for name, formula in formulas.items():
        if name != "main" and data["clients"].nunique() < 2:
            models[name] = Model(name, formula, None, None, "one concurrency level only")
            continue
        models[name] = _fit(name, formula, data, cov_type)
    infl = OLSInfluence(main_ols)
    cooks = pd.Series(np.asarray(infl.cooks_distance[0]), index=data.index, name="cooks_d")
    threshold = COOKS_FACTOR / len(data)
    flagged = data.assign(cooks_d=cooks)[cooks > threshold]
    if len(flagged):
        models[WITHOUT_INFLUENTIAL] = _fit(WITHOUT_INFLUENTIAL, formulas["main"], data.drop(index=flagged.index),
                                           cov_type)
    else:
        models[WITHOUT_INFLUENTIAL] = Model(WITHOUT_INFLUENTIAL, formulas["main"], None, None,
                                            "no run exceeds the Cook's distance threshold")
    return EngineFit(engine=engine, data=data, cov_type=cov_type, bp_pvalue=bp_p, models=models, cooks=cooks,
                     influential=flagged, cooks_threshold=threshold, notes=tuple(notes))


def fit_engines(data: pd.DataFrame) -> dict[str, EngineFit]:
    """One fit per engine that has at least one logging configuration; engines that cannot be fitted are skipped."""
    out = {}
    for engine in sorted(data["engine"].unique()):
        sub = data[data["engine"] == engine]
        if not _varies(sub, "records_per_tx").any():
            continue
        out[engine] = fit(sub, engine)
    return out


def _term_label(term: str) -> tuple[str, str]:
    """(readable term, unit) for a model parameter name."""
    if term in TERM_UNITS:
        return term, TERM_UNITS[term]
    if term.startswith("C(clients)[") and term.endswith("]:records_per_tx"):
        k = term[len("C(clients)["):-len("]:records_per_tx")]
        return f"records_per_tx @ {k} clients", "µs per logged line"
    if term.startswith("C(baseline)["):
        return "baseline " + term[len("C(baseline)["):-1], "µs per transaction"
    return term, ""


def coefficients(fits: dict[str, EngineFit], confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Every model's parameters with their CI, one row per (engine, model, term)."""
    rows = []
    for engine, f in fits.items():
        for name, m in f.models.items():
            if not m.ok:
                continue
            res = m.result
            ci = res.conf_int(alpha=1 - confidence)
            for term in res.params.index:
                label, unit = _term_label(term)
                rows.append({
                    "engine": engine, "model": name, "term": label, "unit": unit,
                    "estimate": float(res.params[term]), "ci_low": float(ci.loc[term, 0]),
                    "ci_high": float(ci.loc[term, 1]), "se": float(res.bse[term]), "p": float(res.pvalues[term]),
                    "n": int(res.nobs), "cov_type": res.cov_type,
                })
    return pd.DataFrame(rows, columns=["engine", "model", "term", "unit", "estimate", "ci_low", "ci_high", "se",
                                       "p", "n", "cov_type"])


def diagnostics(fits: dict[str, EngineFit]) -> pd.DataFrame:
    """One row per (engine, model): fit quality, covariance rule, influence."""
    rows = []
    for engine, f in fits.items():
        for name, m in f.models.items():
            row = {"engine": engine, "model": name, "formula": m.formula, "fitted": m.ok, "note": m.note,
                   "n": math.nan, "r2": math.nan, "r2_adj": math.nan, "cov_type": f.cov_type,
                   "bp_pvalue": f.bp_pvalue, "condition_number": math.nan,
                   "n_influential": len(f.influential) if name == "main" else math.nan,
                   "cooks_threshold": f.cooks_threshold if name == "main" else math.nan,
                   "max_cooks_d": float(f.cooks.max()) if name == "main" else math.nan,
                   "engine_notes": "; ".join(f.notes)}
            if m.ok:
                row.update(n=int(m.result.nobs), r2=float(m.ols.rsquared), r2_adj=float(m.ols.rsquared_adj),
                           condition_number=float(m.ols.condition_number))
            rows.append(row)
    return pd.DataFrame(rows, columns=list(DIAGNOSTIC_COLUMNS))


DIAGNOSTIC_COLUMNS = ("engine", "model", "formula", "fitted", "note", "n", "r2", "r2_adj", "cov_type", "bp_pvalue",
                      "condition_number", "n_influential", "cooks_threshold", "max_cooks_d", "engine_notes")


def influential_runs(fits: dict[str, EngineFit]) -> pd.DataFrame:
    cols = ["engine", "study", "configuration", "clients", "repeat", "us_per_tx", "records_per_tx", "kb_per_tx",
            "cooks_d"]
    frames = [f.influential.assign(engine=e)[cols] for e, f in fits.items() if len(f.influential)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)


def residuals(fit: EngineFit) -> pd.DataFrame:
    """The main model's fitted values, residuals and Cook's distance per run (for the diagnostic plots)."""
    m = fit.main
    return fit.data.assign(fitted=np.asarray(m.ols.fittedvalues), residual=np.asarray(m.ols.resid),
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


def synthetic_runs(*, line_cost_us: float = 4.0, kb_cost_us: float = 1.5,
                   line_cost_per_client_us: float = 0.0,
                   configurations: dict[str, tuple[float, float]] | None = None,
                   clients: tuple[int, ...] = (1, 2, 4), base_us: dict[int, float] | None = None,
                   repeats: int = 5, noise_cv: float = 0.01, duration_s: float = 10.0, seed: int = 1,
                   study: str = "synthetic", engine: str = "postgresql", cpu_count: int = 2) -> pd.DataFrame:
    """Runs shaped like :class:`logbench.records.Run` rows whose time per transaction is known exactly.

    ``configurations`` maps a name to (records per transaction, bytes per record);
    the first is the baseline and must log nothing. Time per transaction =
    base(clients) + lines × (line_cost + per_client × (clients − 1)) + kB × kb_cost,
    times a normal noise factor with coefficient of variation ``noise_cv``.
    """
    configurations = configurations or {"none": (0, 0), "stderr": (2, 120), "csvlog": (2, 260),
                                        "jsonlog": (2, 480), "syslog,csvlog": (4, 190)}
    base_us = base_us or {c: 60.0 / min(c, cpu_count) + 5.0 for c in clients}
    rng = np.random.default_rng(seed)
    rows = []
    position = 0
    for rep in range(repeats):
        for cfg, (rec, bpr) in configurations.items():
            for c in clients:
                us = (base_us[c] + rec * (line_cost_us + line_cost_per_client_us * (c - 1))
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
                    "env_id": "synthetic", "scale": 10, "workload": "pgbench -S",
                })
                position += 1
    return pd.DataFrame(rows)
