"""One model per study level instead of one interval per cell (issue 40).

Today each cell's ratio to the baseline gets its own interval from its own n runs (stats.cell_ratio). Within one
study and clients level the runs share the host, and their log tps has one variance (Levene p = 0.78 on 02's),
so one OLS of log tps on the arm, with sigma pooled over every arm of the level, spends all the level's runs on
that variance. The residuals drift with time (lag-1 autocorrelation 0.52 on 02's), which the model can absorb
with a block intercept (the block design's ``repeat``) and/or a smooth term in the run's start time (a B-spline,
patsy's ``bs``). The A/A arm (``<baseline>_again``) is an ordinary arm here: its interval is the check.

Each arm's ratio is exp(coefficient) with the t interval on the residual degrees of freedom; beside it the same
fit with standard errors clustered by block (statsmodels' cov_type="cluster", t on blocks - 1 df), as a check
that does not lean on the residuals being independent.

The findings step (:func:`model_findings`, a function of ``data/processed`` alone) fits :data:`MAIN` to every
committed runs table of :data:`MODEL_STUDIES` and every committed A/A, beside the per-cell intervals; the claims
and the study summaries still read the per-cell intervals (switching them changes committed verdicts).
``python -m logbench.publish.models [processed_dir]`` prints the A/A calibration of every variant over the committed runs
tables.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import patsy
import statsmodels.api as sm
from scipy import stats as sps

from ..base import environment, records, stats
from ..base.paths import stem
from ..measure import switchwindows
from ..measure.design import VARIANT_SEP
from ..base.settings import AA_SUFFIX, is_aa

TIME, BLOCK = "started_at", "repeat"
# The columns a runs table may split its levels by, besides clients: the server (variant), the backend (03),
# the phase (07), the sysbench test and regime (04). Only those with more than one value in a table split it.
LEVELS = ("variant", "backend", "phase", "test", "regime", "clients")
SMOOTH_DF = 12
# A spline with one df per block (or load) of the level: the drift moves on a block's time scale (block 2 of 02
# ran +0.10 at every level at once), so it follows that much without spending more df than a block intercept would,
# where a level of 3 blocks cannot spare SMOOTH_DF.
PER_GROUP = "per_group"


def fit_level(runs: pd.DataFrame, *, arm_col: str, baseline: str, value: str = "tps", time_col: str = TIME,
              block_col: str | None = None, smooth_df: int | str | None = None, cluster_col: str | None = None,
              confidence: float = stats.CONFIDENCE) -> pd.DataFrame:
    """One level's runs (one clients level of one study and server): OLS of log(``value``) on the arm (treatment
    coded against ``baseline``) [+ a ``block_col`` intercept] [+ a B-spline in time with up to ``smooth_df``
    df; :data:`PER_GROUP`: one per cluster, at least 3]. One row per arm but the baseline: ratio exp(coef), its
    interval, and the interval with standard errors clustered by ``cluster_col`` (default ``block_col``; NaN
    without one) and how many clusters; ``model`` names the terms fitted, ``resid_acf1`` is the level's residual
    lag-1 autocorrelation and ``levene_p`` the test of one variance across its arms (the same on every row)."""
    d = _frame(runs, arm_col, value, time_col, block_col, cluster_col or block_col)
    if baseline not in set(d["arm"]):
        raise ValueError(f"no run of the baseline {baseline!r} among {sorted(set(d['arm']))}")
    term, formula, k = level_formula(d, baseline=baseline, blocks=block_col is not None, smooth_df=smooth_df)
    y, x = patsy.dmatrices(formula, d, return_type="dataframe")  # once: the clustered fit reuses it
    fit = sm.OLS(y["y"], x).fit()
    clustered = _clustered(y["y"], x, d["cluster"]) if "cluster" in d else None
    rows = [_arm_row(arm, f"{term}[T.{arm}]", d, fit, clustered, confidence) for arm in _arms_in_order(d, baseline)]
    return pd.DataFrame(rows).assign(model=_describe(block_col, k), resid_acf1=_acf1(fit.resid),
                                     sigma=math.sqrt(fit.scale) if fit.df_resid > 0 else math.nan,
                                     levene_p=_levene(fit.resid, d["arm"]),
                                     clusters=d["cluster"].nunique() if "cluster" in d else 0)


def level_formula(d: pd.DataFrame, *, baseline: str, blocks: bool, smooth_df: int | str | None) -> tuple[str, str, int]:
    """(the arm term, the formula, the spline's df) :func:`fit_level` fits to a level's frame ``d`` (columns arm, t
    [, block, cluster]); the planner (logbench.analyze.planning) builds a candidate schedule's design matrix from the same
    formula, so what it predicts is this model's interval and no other."""
    term = f"C(arm, Treatment(reference={baseline!r}))"
    if smooth_df == PER_GROUP:
        smooth_df = max(3, d["cluster"].nunique()) if "cluster" in d else SMOOTH_DF
    k = _smooth_df(smooth_df, len(d), d["arm"].nunique() + (d["block"].nunique() - 1 if blocks else 0))
    formula = "y ~ " + " + ".join([term] + (["C(block)"] if blocks else []) + ([f"bs(t, df={k})"] if k else []))
    return term, formula, k


def _acf1(resid: pd.Series) -> float:
    """The residuals' lag-1 autocorrelation in run order (the frame is sorted by time): what the block and time
    terms leave of the drift, which the interval's independent-residuals assumption ignores."""
    r = resid.to_numpy(dtype=float)
    return float(np.corrcoef(r[:-1], r[1:])[0, 1]) if r.size > 2 and r.std() > 0 else math.nan


def _levene(resid: pd.Series, arm: pd.Series) -> float:
    """Brown–Forsythe's test (scipy's levene, median-centred) that the arms' residuals share one variance, which
    the common sigma assumes: a small p says a noisy arm widens every other arm's interval (and narrows its own)."""
    groups = [g.to_numpy(dtype=float) for _, g in resid.groupby(arm.to_numpy()) if len(g) > 1]
    if len(groups) < 2:
        return math.nan
    # two runs per arm lie equally far from their median: no spread about it to compare, hence no test
    with np.errstate(divide="ignore", invalid="ignore"):
        p = float(sps.levene(*groups, center="median").pvalue)
    return p if math.isfinite(p) else math.nan


def _frame(runs: pd.DataFrame, arm_col: str, value: str, time_col: str, block_col: str | None,
           cluster_col: str | None) -> pd.DataFrame:
    """The measured runs with a positive ``value``, as the columns the formula names (patsy needs plain names):
    y (log value), arm, t (seconds since the level's first run, or the run order as recorded), block, cluster."""
    r = records.measured(runs)
    if "env_id" in r.columns:
        environment.check_poolable(r)  # never one model over two hosts, as summaries refuse too
    r = r[pd.to_numeric(r[value], errors="coerce") > 0]
    d = pd.DataFrame({"y": np.log(r[value].astype(float)), "arm": r[arm_col].astype(str), "t": _clock(r[time_col])})
    for name, col in (("block", block_col), ("cluster", cluster_col)):
        if col is not None:
            d[name] = r[col].astype(str)
    return d.sort_values("t", kind="stable").reset_index(drop=True)


def _clock(col: pd.Series) -> pd.Series:
    """Seconds since the first run for a start-time column, the numbers as they are for a run-order one."""
    if pd.api.types.is_numeric_dtype(col):
        return col.astype(float)
    t = pd.to_datetime(col, utc=True, format="ISO8601")
    return (t - t.min()).dt.total_seconds()


def _smooth_df(wanted: int | None, n: int, p: int) -> int:
    """The spline's df: at most ``wanted`` and at most half the residual df the model has without it (a level
    of 20 runs cannot carry 12 df of time and still estimate sigma); 0 (no spline) below a cubic's 3."""
    if not wanted:
        return 0
    k = min(int(wanted), (n - p) // 2)
    return k if k >= 3 else 0


def _clustered(y: pd.Series, x: pd.DataFrame, cluster: pd.Series):
    """The same fit with cluster-robust standard errors; None with fewer than two clusters (no variance)."""
    groups = pd.factorize(cluster)[0]
    if len(set(groups)) < 2:
        return None
    return sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)


def _arms_in_order(d: pd.DataFrame, baseline: str) -> list[str]:
    return [a for a in dict.fromkeys(sorted(d["arm"])) if a != baseline]


def _arm_row(arm: str, name: str, d: pd.DataFrame, fit, clustered, confidence: float) -> dict:
    alpha = 1 - confidence
    df = float(fit.df_resid)
    low, high = (np.exp(fit.conf_int(alpha).loc[name]) if df >= 1 else (math.nan, math.nan))
    c_low, c_high = (np.exp(clustered.conf_int(alpha).loc[name]) if clustered is not None and df >= 1
                     else (math.nan, math.nan))
    return {"arm": arm, "ratio": float(np.exp(fit.params[name])), "low": float(low), "high": float(high),
            "halfwidth": (float(high) - float(low)) / 2, "n": int((d["arm"] == arm).sum()), "df_resid": df,
            "se": float(fit.bse[name]), "cluster_low": float(c_low), "cluster_high": float(c_high)}


def _describe(block_col: str | None, k: int) -> str:
    return "log y ~ arm" + (f" + block({block_col})" if block_col else "") + (f" + bs(time, df={k})" if k else "")


def fit_study(runs: pd.DataFrame, *, baseline: str | None = None, levels: list[str] | None = None,
              arm_col: str = "configuration", value: str = "tps", time_col: str = TIME, block_col: str | None = None,
              smooth_df: int | str | None = None, cluster_col: str | None = BLOCK,
              always: tuple[str, ...] = (), confidence: float = stats.CONFIDENCE) -> pd.DataFrame:
    """:func:`fit_level` per level of a study's runs table: per clients level and per each other column of
    :data:`LEVELS` with several values or named in ``always`` (by default), each level against its own
    ``baseline`` (by default the one its A/A arm repeats). A multi-server table's "variant/name" configurations
    are split into a variant level and the arm's own name. Clustered by ``cluster_col`` (the block design's
    ``repeat``) where present."""
    r = split_arms(records.measured(runs), arm_col)
    levels = levels if levels is not None else [c for c in LEVELS if c in r and (r[c].nunique() > 1 or c in always)]
    cluster = cluster_col if cluster_col in r else None
    parts = []
    for key, g in (r.groupby(levels, sort=True) if levels else [((), r)]):
        key = key if isinstance(key, tuple) else (key,)
        base = baseline or aa_baseline(g["arm"])
        fit = fit_level(g, arm_col="arm", baseline=base, value=value, time_col=time_col, block_col=block_col,
                        smooth_df=smooth_df, cluster_col=cluster, confidence=confidence)
        parts.append(fit.assign(**dict(zip(levels, key)), baseline=base))
    out = pd.concat(parts, ignore_index=True)
    return out[[*levels, "baseline", *[c for c in out.columns if c not in levels and c != "baseline"]]]


def split_arms(runs: pd.DataFrame, arm_col: str = "configuration") -> pd.DataFrame:
    """``runs`` with ``arm``: the configuration without a multi-server schedule's "variant/" prefix; and with
    a ``variant`` column holding the prefix where no level column (backend, phase) already does."""
    head, sep, tail = runs[arm_col].astype(str).str.partition(VARIANT_SEP).T.to_numpy()
    has = sep != ""
    out = runs.assign(arm=np.where(has, tail, runs[arm_col].astype(str)))
    prefix = pd.Series(np.where(has, head, ""), index=runs.index)
    known = any(c in out and (out[c].astype(str) == prefix).all() for c in LEVELS)
    return out if not has.any() or known else out.assign(variant=prefix)


def aa_baseline(arms: pd.Series) -> str:
    """The baseline a level's A/A arm repeats (``<baseline>_again``)."""
    aa = sorted({a for a in arms if is_aa(a)})
    if len(aa) != 1:
        raise ValueError(f"cannot tell the baseline: {len(aa)} A/A arms ({aa}); pass baseline=")
    return aa[0][: -len(AA_SUFFIX)]


# The calibration's models: (a) the per-cell interval the summaries carry, then one model per level, adding the
# block intercept and the smooth time term; smooth alone shows what the spline does without the blocks.
MODELS = {"pooled": {}, "block": {"block_col": BLOCK}, "smooth": {"smooth_df": SMOOTH_DF},
          "block+smooth": {"block_col": BLOCK, "smooth_df": SMOOTH_DF}}
PER_CELL = "per_cell"


def aa_calibration(processed_dir: Path | str) -> pd.DataFrame:
    """Every A/A interval of every committed runs table in ``processed_dir``: one row per study, level and
    method (the per-cell interval of the committed summary, then :data:`MODELS`), with whether it holds 1.
    Reads only."""
    parts = [_study_aa(p) for p in sorted(Path(processed_dir).glob("*_runs.csv"))]
    parts = [p for p in parts if p is not None and len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _study_aa(path: Path) -> pd.DataFrame | None:
    study = path.name[: -len("_runs.csv")]
    runs, design = model_frame(pd.read_csv(path))
    if not runs["configuration"].map(is_aa).any():
        return None
    # the design's own block (a switchback load's) and clusters
    block, cluster = DESIGNS[design]["block_col"] or BLOCK, DESIGNS[design]["cluster_col"]
    fits = [fit_study(runs, cluster_col=cluster, time_col=_time_col(runs),
                      **{k: block if v == BLOCK else v for k, v in kw.items()}).assign(method=name)
            for name, kw in MODELS.items()]
    aa = pd.concat(fits, ignore_index=True)
    aa = aa[aa["arm"].map(is_aa)]
    levels = [c for c in LEVELS if c in aa]
    cell = _per_cell(path.with_name(f"{study}.csv"), runs, aa[levels + ["arm", "baseline"]].drop_duplicates())
    out = pd.concat([cell, aa], ignore_index=True).assign(study=study).sort_values(levels, kind="stable")
    out["level"] = out[levels].astype(str).apply(lambda r: ", ".join(f"{k}={v}" for k, v in r.items()), axis=1)
    out["contains_1"] = (out["low"] <= 1) & (out["high"] >= 1)
    return out[["study", "level", "arm", "method", "ratio", "low", "high", "halfwidth", "df_resid",
                "cluster_low", "cluster_high", "resid_acf1", "contains_1"]]


def _per_cell(summary_path: Path, runs: pd.DataFrame, aa: pd.DataFrame) -> pd.DataFrame:
    """The A/A's per-cell interval as the committed summary carries it (the study's own method: paired by block,
    Fieller, or the switchback estimator); recomputed with stats.ratio_ci where the summary lacks it."""
    s = pd.read_csv(summary_path) if summary_path.exists() else pd.DataFrame()
    keys = [c for c in aa.columns if c not in ("arm", "baseline")]
    if {"ratio_ci_low", "ratio_ci_high", "configuration"} <= set(s.columns) and set(keys) <= set(s.columns):
        s = s.rename(columns={"configuration": "arm", "ratio_ci_low": "low", "ratio_ci_high": "high"})
        got = aa.merge(s[keys + ["arm", "ratio", "low", "high"]].astype({k: aa[k].dtype for k in keys}),
                       on=keys + ["arm"], how="left")
    else:
        got = aa.assign(**_recomputed(runs, aa, keys))
    return got.assign(halfwidth=(got["high"] - got["low"]) / 2, method=PER_CELL)


def _recomputed(runs: pd.DataFrame, aa: pd.DataFrame, keys: list[str]) -> dict:
    r = split_arms(runs)
    est = []
    for _, row in aa.iterrows():
        g = r[(r[keys] == row[keys]).all(axis=1)] if keys else r
        est.append(stats.ratio_ci(g.loc[g["arm"] == row["arm"], "tps"], g.loc[g["arm"] == row["baseline"], "tps"]))
    return {"ratio": [e.value for e in est], "low": [e.low for e in est], "high": [e.high for e in est]}


def calibration_table(cal: pd.DataFrame) -> pd.DataFrame:
    """Per study: how many A/A intervals, the median A/A half-width under each method, the share of the A/A
    intervals holding 1 under each method, and the models' median residual lag-1 autocorrelation; a last row
    over every study."""
    methods = [PER_CELL, *MODELS]
    rows = [_calibration_row(study, g, methods) for study, g in cal.groupby("study", sort=True)]
    rows.append(_calibration_row("all", cal, methods))
    return pd.DataFrame(rows)


def _calibration_row(study: str, g: pd.DataFrame, methods: list[str]) -> dict:
    row = {"study": study, "n_aa": int((g["method"] == PER_CELL).sum())}
    for m in methods:
        row[f"hw_{m}"] = g.loc[g["method"] == m, "halfwidth"].median()
    for m in methods:
        row[f"hold1_{m}"] = g.loc[g["method"] == m, "contains_1"].mean()
    for m in MODELS:
        row[f"acf1_{m}"] = g.loc[g["method"] == m, "resid_acf1"].median()
    return row


# --- the findings step: the main model on the committed data ------------------------------------------------

# The studies whose every committed runs table (the committed profile and the further ones) gets the model in the
# findings: issue 40's three, whose A/A controls set the targets of the next committed runs.
MODEL_STUDIES = ("pg_destinations", "mysql_slowlog", "pg_audit_timing")
LOAD = "load"
LOAD_BLOCK = "load_block"
ORDER = "table_order"
# The main model per design: arm + a smooth time term (PER_GROUP df) [+ an intercept per block], clustered beside
# it. A block design's blocks follow each other on one running host, so its drift is continuous: the spline follows
# it where block intercepts would step, and the blocks are the clusters. A switchback load's blocks are seconds
# long and each holds every arm, so an intercept per block of a load compares each window with its neighbours
# (what the switchback estimator's within-unit ratios do) and absorbs the jump between loads, each a freshly
# started server; the loads are the clusters.
DESIGNS = {"blocks": {"block_col": None, "cluster_col": BLOCK},
           "switchback": {"block_col": LOAD_BLOCK, "cluster_col": LOAD}}
MAIN = "main"


def model_frame(runs: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """(the measured runs the model reads, their design: a key of :data:`DESIGNS`). A switchback table keeps
    only its windows whose switch took effect within the guard, as its estimator does
    (:func:`logbench.measure.switchwindows.windows_frame`), with ``load`` and ``load_block`` (a block of one load)."""
    runs = records.measured(runs).reset_index(drop=True)
    runs = runs.assign(**{ORDER: np.arange(len(runs), dtype=float)})
    if not switchwindows.is_switchback(runs):
        return runs, "blocks"
    runs = runs.assign(extra=runs["extra"].map(lambda e: json.loads(e) if isinstance(e, str) else e))
    w = switchwindows.windows_frame(runs)
    # the frame's own arm column would shadow split_arms' (the same values, but the CSV's would win)
    w = w.drop(columns=["arm"]).assign(**{LOAD_BLOCK: w[LOAD].astype(str) + "/" + w["block"].astype(str)})
    return w.reset_index(drop=True), "switchback"


def _time_col(runs: pd.DataFrame) -> str:
    """The start time where recorded, else the position in the schedule, else the table's order (synthetic and
    old tables): :data:`ORDER`, which :func:`model_frame` adds to every frame."""
    for col in (TIME, "position"):
        if col in runs and runs[col].notna().all():
            return col
    return ORDER


def fit_main(runs: pd.DataFrame, baseline: str | None = None, confidence: float = stats.CONFIDENCE) -> pd.DataFrame:
    """:data:`MAIN` on one runs table (as read from ``data/processed``): :func:`fit_study` per level with the
    smooth time term and the design's block intercept and clusters (:data:`DESIGNS`)."""
    frame, design = model_frame(runs)
    return fit_study(frame, baseline=baseline, time_col=_time_col(frame), smooth_df=PER_GROUP, always=("clients",),
                     confidence=confidence, **DESIGNS[design]).assign(design=design)


# what the findings step writes model_table to (logbench.publish.findings: findings_<name>.csv, name "models");
# the paper's abstract and its method section read it
FINDINGS_TABLE = "findings_models.csv"
MODEL_COLUMNS = ["study", "profile", "design", "level", "clients", "arm", "baseline", "ratio", "ci_low", "ci_high",
                 "halfwidth", "n", "df", "method", "cluster_low", "cluster_high", "cluster_halfwidth", "clusters",
                 "resid_acf1", "levene_p", "cell_ratio", "cell_low", "cell_high", "cell_halfwidth"]


def model_stems(processed_dir: Path | str, committed: Mapping[str, tuple[str, tuple[str, ...]]]
                ) -> list[tuple[str, str, str]]:
    """(processed stem, study, profile) of every committed run of ``committed`` (study -> (baseline, its committed
    runs' profiles), what :func:`logbench.studies.committed_profiles` gives for :data:`MODEL_STUDIES`) found in
    ``processed_dir``, in that order."""
    out = []
    for name, (_, profiles) in committed.items():
        for profile in profiles:
            s = stem(name, profile)
            if (Path(processed_dir) / f"{s}_runs.csv").exists():
                out.append((s, name, profile))
    return out


def model_table(processed_dir: Path | str, committed: Mapping[str, tuple[str, tuple[str, ...]]]) -> pd.DataFrame:
    """Every arm of every level of :func:`model_stems`: the model's ratio and interval, its clustered interval,
    and the committed summary's per-cell interval of the same arm beside them (``cell_*``). Half-widths are
    absolute, (high - low) / 2."""
    parts = []
    for s, name, profile in model_stems(processed_dir, committed):
        path = Path(processed_dir) / f"{s}_runs.csv"
        fit = fit_main(pd.read_csv(path), baseline=committed[name][0])
        parts.append(_with_cells(fit, path.with_name(f"{s}.csv")).assign(study=name, profile=profile))
    if not parts:
        return pd.DataFrame(columns=MODEL_COLUMNS)
    out = pd.concat(parts, ignore_index=True)
    out = out if "clients" in out else out.assign(clients=math.nan)  # a table without a clients column
    out = out.rename(columns={"low": "ci_low", "high": "ci_high", "df_resid": "df", "model": "method"})
    out["cluster_halfwidth"] = (out["cluster_high"] - out["cluster_low"]) / 2
    levels = [c for c in LEVELS if c in out]
    return out[MODEL_COLUMNS + [c for c in levels if c not in MODEL_COLUMNS]]


def _level_text(frame: pd.DataFrame, levels: list[str]) -> pd.Series:
    return frame[levels].apply(lambda r: ", ".join(f"{k}={v}" for k, v in r.items() if pd.notna(v)), axis=1) \
        if levels else pd.Series("", index=frame.index)


def _with_cells(fit: pd.DataFrame, summary_path: Path) -> pd.DataFrame:
    """``fit`` with ``level`` (its level columns in words) and the summary's per-cell ratio and interval of each
    arm (NaN where the summary has no interval for it)."""
    levels = [c for c in LEVELS if c in fit]
    fit = fit.assign(level=_level_text(fit, levels))
    s = pd.read_csv(summary_path) if summary_path.exists() else pd.DataFrame()
    keys = [k for k in levels if k in s]
    if not {"configuration", "ratio", "ratio_ci_low", "ratio_ci_high"} <= set(s.columns) or keys != levels:
        return fit.assign(cell_ratio=math.nan, cell_low=math.nan, cell_high=math.nan, cell_halfwidth=math.nan)
    s = s.rename(columns={"configuration": "arm", "ratio": "cell_ratio", "ratio_ci_low": "cell_low",
                          "ratio_ci_high": "cell_high"})
    s = s[keys + ["arm", "cell_ratio", "cell_low", "cell_high"]].astype({k: fit[k].dtype for k in keys})
    out = fit.merge(s, on=keys + ["arm"], how="left", validate="one_to_one")
    return out.assign(cell_halfwidth=(out["cell_high"] - out["cell_low"]) / 2)


COVERAGE_COLUMNS = ["study", "n_aa", "model_hold", "model_hold_share", "model_hold_ci_low", "model_hold_ci_high",
                    "cluster_hold_share", "cell_hold_share", "model_hw_median", "cluster_hw_median", "cell_hw_median"]
ALL = "all"


def aa_table(processed_dir: Path | str) -> pd.DataFrame:
    """Every committed A/A control in ``processed_dir`` (every ``*_runs.csv`` with a ``<baseline>_again`` arm,
    not only :data:`MODEL_STUDIES`'): :data:`MAIN`'s interval, the clustered one and the summary's per-cell one,
    with whether each holds 1."""
    parts = []
    for path in sorted(Path(processed_dir).glob("*_runs.csv")):
        if path.name.startswith("findings_"):
            continue
        runs = pd.read_csv(path)
        if "configuration" not in runs or not records.measured(runs)["configuration"].map(is_aa).any():
            continue
        fit = fit_main(runs)
        aa = _with_cells(fit[fit["arm"].map(is_aa)], path.with_name(f"{path.name[: -len('_runs.csv')]}.csv"))
        parts.append(aa.assign(study=path.name[: -len("_runs.csv")]))
    if not parts:
        return pd.DataFrame(columns=["study", "level", "arm", "low", "high", "cluster_low", "cluster_high",
                                     "cell_low", "cell_high"])
    return pd.concat(parts, ignore_index=True)


def _holds(low: pd.Series, high: pd.Series) -> pd.Series:
    """Whether [low, high] holds 1; NaN where there is no interval (too few runs or clusters)."""
    return ((low <= 1) & (high >= 1)).where(low.notna() & high.notna())


def coverage_table(aa: pd.DataFrame) -> pd.DataFrame:
    """Per study (processed stem) and over all of them: how many A/A intervals, how many and which share of the
    model's hold 1 (goal: the confidence level), the same share for the clustered and the per-cell intervals
    (each over the A/A that have one), and the median absolute half-width of each. The model's share has its exact
    (Clopper-Pearson) 95 % binomial interval beside it: whether the count could come from intervals that hold 1 at
    the confidence level (the A/A controls of one run share its noise, so it reads as a guide, not a test)."""
    if not len(aa):
        return pd.DataFrame(columns=COVERAGE_COLUMNS)
    aa = aa.assign(model=_holds(aa["low"], aa["high"]), cluster=_holds(aa["cluster_low"], aa["cluster_high"]),
                   cell=_holds(aa["cell_low"], aa["cell_high"]),
                   hw=(aa["high"] - aa["low"]) / 2, chw=(aa["cluster_high"] - aa["cluster_low"]) / 2,
                   cellhw=(aa["cell_high"] - aa["cell_low"]) / 2)

    def row(study: str, g: pd.DataFrame) -> dict:
        held = g["model"].dropna()
        ci = sps.binomtest(int(held.sum()), len(held)).proportion_ci(0.95, method="exact") if len(held) else None
        return {"study": study, "n_aa": len(g), "model_hold": int(g["model"].sum()),
                "model_hold_share": g["model"].mean(), "model_hold_ci_low": ci.low if ci else math.nan,
                "model_hold_ci_high": ci.high if ci else math.nan, "cluster_hold_share": g["cluster"].mean(),
                "cell_hold_share": g["cell"].mean(), "model_hw_median": g["hw"].median(),
                "cluster_hw_median": g["chw"].median(), "cell_hw_median": g["cellhw"].median()}

    rows = [row(s, g) for s, g in aa.groupby("study", sort=True)] + [row(ALL, aa)]
    return pd.DataFrame(rows, columns=COVERAGE_COLUMNS)


def model_findings(processed_dir: Path | str, committed: Mapping[str, tuple[str, tuple[str, ...]]]
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(:func:`model_table`, :func:`coverage_table` over :func:`aa_table`): the findings' ``models`` and
    ``models_coverage``, a function of ``processed_dir`` and the registry's committed runs (``committed``)."""
    return model_table(processed_dir, committed), coverage_table(aa_table(processed_dir))


def main(argv: list[str] | None = None) -> None:
    from ..base import paths

    argv = sys.argv[1:] if argv is None else argv
    cal = aa_calibration(Path(argv[0]) if argv else paths.ROOT / "data" / "processed")
    with pd.option_context("display.width", 200, "display.max_rows", 500, "display.max_columns", 30,
                           "display.float_format", "{:.3f}".format):
        wide = cal.pivot_table(index=["study", "level"], columns="method", values="halfwidth")
        wide = wide.reindex(pd.MultiIndex.from_frame(cal[["study", "level"]].drop_duplicates()))
        print("A/A half-width ((high - low) / 2 of the ratio) per study level and method\n")
        print(wide[[PER_CELL, *MODELS]].to_string())
        print("\nPer study: median A/A half-width (hw_), share of A/A intervals holding 1 (hold1_), median residual "
              "lag-1 autocorrelation (acf1_)\n")
        print(calibration_table(cal).to_string(index=False))


if __name__ == "__main__":
    main()
