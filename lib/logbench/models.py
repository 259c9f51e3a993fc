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

Not wired into any study's summary, claim or paper yet: that changes committed verdicts and needs re-runs.
``python -m logbench.models [processed_dir]`` prints the A/A calibration over the committed runs tables.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import patsy
import statsmodels.api as sm

from . import environment, records, stats
from .design import VARIANT_SEP
from .settings import AA_SUFFIX, is_aa

TIME, BLOCK = "started_at", "repeat"
# The columns a runs table may split its levels by, besides clients: the server (variant), the backend (03),
# the phase (07), the sysbench test and regime (04). Only those with more than one value in a table split it.
LEVELS = ("variant", "backend", "phase", "test", "regime", "clients")
SMOOTH_DF = 12


def fit_level(runs: pd.DataFrame, *, arm_col: str, baseline: str, value: str = "tps", time_col: str = TIME,
              block_col: str | None = None, smooth_df: int | None = None, cluster_col: str | None = None,
              confidence: float = stats.CONFIDENCE) -> pd.DataFrame:
    """One level's runs (one clients level of one study and server): OLS of log(``value``) on the arm (treatment
    coded against ``baseline``) [+ a ``block_col`` intercept] [+ a B-spline in time with up to ``smooth_df``
    df]. One row per arm but the baseline: ratio exp(coef), its interval, and the interval with standard errors
    clustered by ``cluster_col`` (default ``block_col``; NaN without one); ``model`` names the terms fitted and
    ``resid_acf1`` is the level's residual lag-1 autocorrelation (the same on every row)."""
    d = _frame(runs, arm_col, value, time_col, block_col, cluster_col or block_col)
    if baseline not in set(d["arm"]):
        raise ValueError(f"no run of the baseline {baseline!r} among {sorted(set(d['arm']))}")
    term = f"C(arm, Treatment(reference={baseline!r}))"
    k = _smooth_df(smooth_df, len(d), d["arm"].nunique() + (d["block"].nunique() - 1 if block_col else 0))
    formula = "y ~ " + " + ".join([term] + (["C(block)"] if block_col else []) + ([f"bs(t, df={k})"] if k else []))
    y, x = patsy.dmatrices(formula, d, return_type="dataframe")  # once: the clustered fit reuses it
    fit = sm.OLS(y["y"], x).fit()
    clustered = _clustered(y["y"], x, d["cluster"]) if "cluster" in d else None
    rows = [_arm_row(arm, f"{term}[T.{arm}]", d, fit, clustered, confidence) for arm in _arms_in_order(d, baseline)]
    return pd.DataFrame(rows).assign(model=_describe(block_col, k), resid_acf1=_acf1(fit.resid))


def _acf1(resid: pd.Series) -> float:
    """The residuals' lag-1 autocorrelation in run order (the frame is sorted by time): what the block and time
    terms leave of the drift, which the interval's independent-residuals assumption ignores."""
    r = resid.to_numpy(dtype=float)
    return float(np.corrcoef(r[:-1], r[1:])[0, 1]) if r.size > 2 and r.std() > 0 else math.nan


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
              smooth_df: int | None = None, cluster_col: str | None = BLOCK) -> pd.DataFrame:
    """:func:`fit_level` per level of a study's runs table: per clients level and per each other column of
    :data:`LEVELS` with several values (by default), each level against its own ``baseline`` (by default the
    one its A/A arm repeats). A multi-server table's "variant/name" configurations are split into a variant
    level and the arm's own name. Clustered by ``cluster_col`` (the block design's ``repeat``) where present."""
    r = split_arms(records.measured(runs), arm_col)
    levels = levels if levels is not None else [c for c in LEVELS if c in r and r[c].nunique() > 1]
    cluster = cluster_col if cluster_col in r else None
    parts = []
    for key, g in (r.groupby(levels, sort=True) if levels else [((), r)]):
        key = key if isinstance(key, tuple) else (key,)
        base = baseline or aa_baseline(g["arm"])
        fit = fit_level(g, arm_col="arm", baseline=base, value=value, time_col=time_col, block_col=block_col,
                        smooth_df=smooth_df, cluster_col=cluster)
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
    runs = records.measured(pd.read_csv(path))
    if not runs["configuration"].map(is_aa).any():
        return None
    fits = [fit_study(runs, **kw).assign(method=name) for name, kw in MODELS.items()]
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


def main(argv: list[str] | None = None) -> None:
    from . import paths

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
