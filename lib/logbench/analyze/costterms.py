"""Where the cost model (:mod:`logbench.analyze.costmodel`, issue 42) misses, and what the terms its misses name
could buy and are priced at. A pure function of a :class:`~logbench.analyze.costmodel.CostModel` and
``data/processed``: nothing here changes the model's own predictions.

:func:`misses` groups the judged cells (engine, destination, clients per core, design, processor, table) beside the
median error an exact model would show on the same cells (the model's ``noise_floor``: the measured intervals' own
spread), with the term most of a group's missed cells lack (the model's ``missing_term``).

The terms the misses name (:func:`terms`) are tested one at a time and none is kept: per term, the held-out figures
if its cells were exact (the most it could buy), its price from data outside the judged cells beside what the cells
imply, and the held-out figures with it so priced. A backend's sleep and wake-up (a voluntary context switch) is
priced from the baselines' runs alone (:func:`switch_prices`, three estimators, which disagree), times the switches a
cell's runs counted above its baseline's; MariaDB's log mutex as a single-server queue at the counted hold time
(:func:`mutex_wait`). The model's own predictions carry neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..base import paths, records
from . import costmodel as cm

MISS_COLUMNS = ["model", "dimension", "group", "judged_cells", "median_abs_error", "mean_error", "in_ci_share",
                "exact_model_median_abs_error", "missed", "main_term", "main_term_cells", "modelled_added_us_per_tx",
                "measured_added_cpu_us_per_tx", "implied_added_us_per_tx", "rank", "largest"]

# How the judged cells are grouped to say where a model misses: (dimension, how a cell's group is named)
MISS_DIMENSIONS = (
    ("engine", lambda d: d["engine"].map({"postgresql": "PostgreSQL", "mariadb": "MariaDB"})),
    ("destination", lambda d: d["destination"]),
    ("clients per core", lambda d: np.select([d["clients"] < d["cores"], d["clients"] == d["cores"]],
                                             ["below 1", "1"], "above 1")),
    ("design", lambda d: d["design"]),
    ("processor", lambda d: d["cpu_model"].replace("", "?")),
    ("table", lambda d: d["stem"]),
)
# A group smaller than this is listed but not ranked
MISS_MIN_CELLS = 5


def misses(out: pd.DataFrame) -> pd.DataFrame:
    """Per model and per group of judged cells (:data:`MISS_DIMENSIONS`): cells, median |error|, mean signed error
    (predicted − measured: above 0, the model leaves out time the cells spent), share of measured CIs holding the
    prediction, the exact model's median |error| on the same cells (:func:`~logbench.analyze.costmodel.noise_floor`),
    the cells missed (outside their CI and off by more than the goal) and the term most of them lack
    (:func:`~logbench.analyze.costmodel.missing_term`), and the medians of the modelled, measured-CPU and implied µs
    per transaction (:func:`~logbench.analyze.costmodel.diagnose`). ``rank`` orders each model's
    groups of at least :data:`MISS_MIN_CELLS` cells by median |error|, the largest first (``largest``: rank 1)."""
    rows = []
    for model, g in out.groupby("model", sort=False):
        j = g[cm.is_judged(g)]
        for dim, name in MISS_DIMENSIONS:
            for group, h in j.groupby(np.asarray(name(j), dtype=object), sort=True):
                missed = h[h["missing_term"].fillna("") != ""]
                terms = missed["missing_term"].value_counts()
                mae, share, _ = cm.accuracy(h)
                rows.append({"model": model, "dimension": dim, "group": str(group), "judged_cells": len(h),
                             "median_abs_error": mae, "mean_error": float(h["error"].mean()), "in_ci_share": share,
                             "exact_model_median_abs_error": cm.noise_floor(h)[0], "missed": len(missed),
                             "main_term": str(terms.index[0]) if len(terms) else "",
                             "main_term_cells": int(terms.iloc[0]) if len(terms) else 0,
                             "modelled_added_us_per_tx": float(h["added_us_per_tx"].median()),
                             "measured_added_cpu_us_per_tx": float(h["measured_added_cpu_us_per_tx"].median()),
                             "implied_added_us_per_tx": float(h["implied_added_us_per_tx"].median())})
    t = pd.DataFrame(rows, columns=[c for c in MISS_COLUMNS if c not in ("rank", "largest")])
    big = t["judged_cells"] >= MISS_MIN_CELLS
    t["rank"] = np.nan
    t.loc[big, "rank"] = t[big].groupby("model")["median_abs_error"].rank(ascending=False, method="first")
    t["largest"] = t["rank"] == 1
    return t[MISS_COLUMNS]


# --- the terms the issue names as missing: what each could buy, and what a calibration outside the judged cells ---
# --- prices it at ------------------------------------------------------------------------------------------------

# How a backend's voluntary context switch (a sleep and a wake-up) is priced from the baselines' runs alone, which
# are never judged: the backends' CPU per transaction against their voluntary switches per transaction, PostgreSQL's
# cached tables (an IO-bound backend's switch is a disk wait). (name, formula). The first is the one the terms table
# prices with: the runs of one cell differ in nothing but their noise, so nothing else moves with their switches;
# the others also read the switches' change between client levels, where more than the switches changes.
SWITCH_ESTIMATORS = (("within a baseline cell", "cpu ~ C(cell) + vcs"),
                     ("within a table, across its client levels", "cpu ~ C(table) + vcs"),
                     ("within a table, beside each client level's mean", "cpu ~ C(table) + C(clients) + vcs"))
SWITCH_COLUMNS = ["estimator", "price_us", "price_ci_low", "price_ci_high", "runs", "model", "study",
                  "median_abs_error", "in_ci_share", "goals_met"]
TERM_COLUMNS = ["model", "term", "what", "cells", "median_abs_error", "in_ci_share", "exact_model_median_abs_error",
                "if_exact_median_abs_error", "if_exact_in_ci_share", "if_exact_goals_met", "priced", "implied", "unit",
                "priced_from", "with_term_median_abs_error", "with_term_in_ci_share", "with_term_goals_met"]


def baseline_switch_runs(processed_dir: Path | str) -> pd.DataFrame:
    """Per measured run of a PostgreSQL baseline (and its A/A repeat) in the cost model's tables, not IO-bound: the
    backends' CPU µs and voluntary context switches per transaction (the server's less the collector's), with the
    table and the cell (table, variant, clients) it belongs to."""
    processed = Path(processed_dir)
    rows = []
    for _, stem in cm.STUDIES:
        if stem.startswith("mysql") or stem in cm.IO_BOUND:
            continue
        r = records.read_measured(processed, stem)
        if r is None:
            continue
        conf = r["configuration"].astype(str)
        name = conf.str.split("/").str[-1]
        r = r[name.isin(["none", "none_again"])]
        if r.empty or "server_ctx_voluntary" not in r.columns:
            continue
        variant = conf[r.index].str.split("/").str[0].where(conf[r.index].str.contains("/"), "")
        tx = r["transactions"].astype(float)
        vcs = pd.to_numeric(r["server_ctx_voluntary"], errors="coerce")
        vcs = (vcs - cm.run_extra(r, "collector_ctx_voluntary").fillna(0)).where(vcs >= 0)
        cpu = r["server_cpu_s"].astype(float) - cm.run_extra(r, "collector_cpu_s").fillna(0)
        rows.append(pd.DataFrame({"table": stem, "variant": variant, "clients": r["clients"].astype(int),
                                  "cell": stem + "/" + variant + "/" + r["clients"].astype(str),
                                  "cpu": 1e6 * cpu / tx, "vcs": vcs / tx}))
    out = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(
        columns=["table", "variant", "clients", "cell", "cpu", "vcs"])
    return out.dropna(subset=["cpu", "vcs"])


def switch_prices(runs: pd.DataFrame) -> pd.DataFrame:
    """Per :data:`SWITCH_ESTIMATORS`: the µs of backend CPU one voluntary switch costs, with its 95 % CI and the runs
    it read (ordinary least squares, statsmodels)."""
    import statsmodels.formula.api as smf

    rows = []
    for name, formula in SWITCH_ESTIMATORS:
        if len(runs) < 3 or runs["vcs"].nunique() < 2:
            rows.append({"estimator": name, "price_us": np.nan, "price_ci_low": np.nan, "price_ci_high": np.nan,
                         "runs": len(runs)})
            continue
        fit = smf.ols(formula, runs).fit()
        lo, hi = fit.conf_int().loc["vcs"]
        rows.append({"estimator": name, "price_us": float(fit.params["vcs"]), "price_ci_low": float(lo),
                     "price_ci_high": float(hi), "runs": int(fit.nobs)})
    return pd.DataFrame(rows, columns=["estimator", "price_us", "price_ci_low", "price_ci_high", "runs"])


def added_switches(d: pd.DataFrame) -> pd.Series:
    """A PostgreSQL cell's voluntary switches per transaction above its baseline's (at least 0: the term prices
    sleeps a record added, not sleeps it spared); 0 for MariaDB and where the runs did not record them."""
    added = (d["backend_vcs_per_tx"] - d["baseline_backend_vcs_per_tx"]).clip(lower=0).fillna(0)
    return added.where(d["engine"] == "postgresql", 0.0)


def mutex_wait(d: pd.DataFrame, predicted: pd.Series) -> pd.Series:
    """µs per record a MariaDB connection waits for the log's one mutex at more than one connection, priced from the
    counted time a record holds it (the connection thread's counted µs per record, h) at the rate the model
    predicts (records per second λ): a single server queue, M/M/1, waits h·U/(1 − U) with U = λh. 0 elsewhere."""
    h = d["loader_us_per_record"].fillna(0)
    rate = predicted * d["baseline_tps"].astype(float) * d["records_per_tx"].fillna(0)
    u = (rate * h * 1e-6).clip(upper=0.99)
    wait = h * u / (1 - u)
    return wait.where((d["engine"] == "mariadb") & (d["clients"] > 1), 0.0).fillna(0.0)


def _term_masks(j: pd.DataFrame) -> dict[str, tuple[str, pd.Series]]:
    """The issue's named missing terms, as the judged cells each concerns: key -> (what it is, mask)."""
    dest = j["destination"].astype(str)
    wake = (j["engine"] == "postgresql") & dest.str.startswith("local syslog") & (j["clients"] > j["cores"])
    mutex = (j["engine"] == "mariadb") & (dest == "slow log to a file") & (j["clients"] > 1)
    table = dest == "slow log to its table"
    switchback = j["design"] == "switchback"
    return {"wake": ("a sleep and wake-up per record on /dev/log: PostgreSQL's local syslog above one client per core",
                     wake),
            "mutex": ("contention on the log's mutex: MariaDB's slow log to a file at more than one connection", mutex),
            "table": ("MariaDB's slow log to its table", table),
            "switchback": ("the switchback cells (narrow intervals; study 05's on another processor)", switchback),
            "all four": ("the four together", wake | mutex | table | switchback)}


def _overall(p: pd.DataFrame) -> tuple[float, float, bool]:
    return cm.accuracy(p[cm.is_judged(p)])


def terms(d: pd.DataFrame, out: pd.DataFrame, prices: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per model and named missing term (:func:`_term_masks`): its judged cells and their median |error| and in-CI
    share beside an exact model's there; the overall held-out figures if those cells were predicted exactly (the
    most the term can buy); what a calibration outside the judged cells prices it at and what the cells imply
    (read, never fitted); and the overall held-out figures with the term so priced, where it has a price. And the
    voluntary switch's price by each estimator with the model's held-out figures at each (per study and all)."""
    rows = []
    with_terms = {}
    vcs = added_switches(d)
    for _, pr in prices.iterrows():
        if np.isfinite(pr["price_us"]):
            w, _ = cm.evaluate(d.assign(term_us_per_tx=pr["price_us"] * vcs))
            with_terms[pr["estimator"]] = w
    price_rows = []
    for _, pr in prices.iterrows():
        w = with_terms.get(pr["estimator"])
        for _, s in (cm.summarise(w).iterrows() if w is not None else iter(())):
            price_rows.append({**pr.to_dict(), "model": s["model"], "study": s["study"],
                               "median_abs_error": s["median_abs_error"], "in_ci_share": s["in_ci_share"],
                               "goals_met": s["goals_met"]})
    first = prices.iloc[0] if len(prices) else None
    # the mutex term at the rate each model predicts without it
    base_pred = out.set_index(["model", out.groupby("model").cumcount()])["predicted_ratio"]
    mutex_out = {}
    for model in ("counted", "fitted"):
        pred = pd.Series(base_pred.loc[model].to_numpy(), index=d.index)
        wait = mutex_wait(d, pred)
        w, _ = cm.evaluate(d.assign(term_us_per_tx=wait * d["records_per_tx"].fillna(0)))
        mutex_out[model] = (w[w["model"] == model], wait)
    for model, g in out.groupby("model", sort=False):
        g = g.reset_index(drop=True)
        j = cm.is_judged(g)
        for key, (what, mask) in _term_masks(g).items():
            cells = g[j & mask]
            exact = g.copy()
            exact.loc[j & mask, "error"] = 0.0
            exact.loc[j & mask, "in_ci"] = True
            ex = _overall(exact)
            mae, share, _ = cm.accuracy(cells)
            row = {"model": model, "term": key, "what": what, "cells": len(cells),
                   "median_abs_error": mae, "in_ci_share": share,
                   "exact_model_median_abs_error": cm.noise_floor(cells)[0] if len(cells) else np.nan,
                   "if_exact_median_abs_error": ex[0], "if_exact_in_ci_share": ex[1], "if_exact_goals_met": ex[2],
                   "priced": np.nan, "implied": np.nan, "unit": "", "priced_from": "",
                   "with_term_median_abs_error": np.nan, "with_term_in_ci_share": np.nan,
                   "with_term_goals_met": np.nan}
            if key == "wake" and first is not None and len(cells):
                added = cells["backend_vcs_per_tx"] - cells["baseline_backend_vcs_per_tx"]
                beyond = (cells["backend_cpu_us_per_tx"] - cells["baseline_backend_cpu_us_per_tx"]
                          - cells["loader_us_per_tx"] * cells["loader_factor"])
                ok = added > 0.1
                row.update(priced=first["price_us"], unit="µs per added voluntary switch of a backend",
                           implied=float(np.median(beyond[ok] / added[ok])) if ok.any() else np.nan,
                           priced_from=f"the baselines' runs, {first['estimator']} ({int(first['runs'])} runs)")
                w = with_terms.get(first["estimator"])
                if w is not None:
                    row.update(zip(("with_term_median_abs_error", "with_term_in_ci_share", "with_term_goals_met"),
                                   _overall(w[w["model"] == model])))
            elif key == "mutex" and len(cells):
                w, wait = mutex_out[model]
                per_rec = (g["backend_cpu_us_per_tx"] - g["baseline_backend_cpu_us_per_tx"]) / g["records_per_tx"]
                arm = ["stem", "variant", "regime", "test", "configuration"]
                one = g[g["clients"] == 1].assign(one=per_rec[g["clients"] == 1]).drop_duplicates(arm)[[*arm, "one"]]
                rise = cells.assign(r=per_rec[cells.index]).merge(one, on=arm, how="left")
                row.update(priced=float(np.median(wait.to_numpy()[cells.index])), unit="µs per record",
                           implied=float(np.nanmedian(rise["r"] - rise["one"])) if rise["one"].notna().any()
                           else np.nan,
                           priced_from="the counted time a record holds the mutex, at the predicted rate (M/M/1)")
                row.update(zip(("with_term_median_abs_error", "with_term_in_ci_share", "with_term_goals_met"),
                               _overall(w)))
            elif key == "table" and len(cells):
                row.update(priced=float(cells["added_us_per_tx"].median()), unit="µs per transaction",
                           implied=float(cells["measured_added_cpu_us_per_tx"].median()),
                           priced_from="the counted cost of a record written to the table")
            rows.append(row)
    return (pd.DataFrame(rows, columns=TERM_COLUMNS),
            pd.DataFrame(price_rows, columns=SWITCH_COLUMNS))


@dataclass(frozen=True)
class CostTerms:
    misses: pd.DataFrame  # per model and group of judged cells: where it misses and the term it lacks
    terms: pd.DataFrame  # per model and named missing term: what it could buy, what it is priced at, what it needs
    switch_prices: pd.DataFrame  # a backend's voluntary switch priced from the baselines, and the model with it


def cost_terms(model: cm.CostModel, processed_dir: Path | str = paths.PROCESSED) -> CostTerms:
    """The misses of ``model`` (:func:`misses`), its named missing terms (:func:`terms`) and the voluntary switch's
    prices (:func:`switch_prices`, from the baselines' runs in ``processed_dir`` alone)."""
    prices = switch_prices(baseline_switch_runs(processed_dir))
    term_table, price_table = terms(model.demands, model.predictions, prices)
    return CostTerms(misses(model.predictions), term_table, price_table)
