"""The fits as tables: every model's coefficients (with the cost of a typical line per family), the fit
diagnostics, the influential runs and the main model's residuals."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...base.stats import CONFIDENCE
from .model import COV_TYPE, WEIGHTS, Fit, Model
from .observations import BYTES_PER_KB, FAMILIES, FAMILY_LABELS, family_term

TERM_UNITS = {"kb_per_tx": "µs per logged kB"}

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
