"""Study 00's noise curve: per-second throughput of long baseline runs, the CV of a w-second mean with its
interval, the autocorrelation, the runs a cell needs for a target half-width, and what the noise allows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from ...base import stats
from .. import common
from .spec import LENGTHS, SKIP_SECONDS


def series_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per measured second: control, clients, run position, second, tps."""
    measured = common.split_variant(runs)
    rows = []
    for r in measured.itertuples():
        for i, tps in enumerate(r.extra.get("progress_tps", [])):
            rows.append({"control": r.variant, "clients": r.clients, "position": r.position, "second": i + 1,
                         "tps": tps})
    return pd.DataFrame(rows, columns=["control", "clients", "position", "second", "tps"])


def cv_ci(x: np.ndarray, confidence: float = stats.CONFIDENCE) -> tuple[float, float, float]:
    """CV with the chi-square interval of its standard deviation (mean treated as known: the windows are many)."""
    n = x.size
    if n < 2 or x.mean() == 0:
        return math.nan, math.nan, math.nan
    sd, m = x.std(ddof=1), x.mean()
    lo, hi = sps.chi2.ppf([0.5 + confidence / 2, 0.5 - confidence / 2], n - 1)
    return sd / m, sd * math.sqrt((n - 1) / lo) / m, sd * math.sqrt((n - 1) / hi) / m


def cv_by_length(series: pd.DataFrame, lengths=LENGTHS, skip: int = SKIP_SECONDS) -> pd.DataFrame:
    """CV of a w-second mean throughput per control × clients: each run's steady seconds cut into
    non-overlapping w-second windows, pooled over the control's runs (so run-to-run shifts count)."""
    rows = []
    steady = series[series["second"] > skip]
    for (control, clients), g in steady.groupby(["control", "clients"], sort=False):
        for w in lengths:
            means = []
            for _, run_s in g.groupby("position"):
                tps = run_s.sort_values("second")["tps"].to_numpy()
                k = tps.size // w
                means.extend(tps[: k * w].reshape(k, w).mean(axis=1))
            cv, lo, hi = cv_ci(np.asarray(means))
            rows.append({"control": control, "clients": clients, "run_length_s": w, "windows": len(means),
                         "cv": cv, "cv_ci_low": lo, "cv_ci_high": hi})
    return pd.DataFrame(rows)


def autocorrelation(series: pd.DataFrame, nlags: int = 5, skip: int = SKIP_SECONDS) -> pd.DataFrame:
    """Mean per-second autocorrelation of tps at lags 1..nlags per control × clients (statsmodels acf)."""
    from statsmodels.tsa.stattools import acf

    rows = []
    steady = series[series["second"] > skip]
    for (control, clients), g in steady.groupby(["control", "clients"], sort=False):
        per_run = [acf(s.sort_values("second")["tps"].to_numpy(), nlags=nlags, fft=False)[1:]
                   for _, s in g.groupby("position") if len(s) > nlags + 2]
        if per_run:
            mean = np.mean(per_run, axis=0)
            rows.append({"control": control, "clients": clients, "runs": len(per_run),
                         **{f"lag {k}": float(v) for k, v in enumerate(mean, start=1)}})
    return pd.DataFrame(rows)


def runs_needed(cv: float, target_halfwidth: float, confidence: float = stats.CONFIDENCE) -> int:
    """Runs per cell so that a ratio of two cells with this CV has a CI half-width ≤ target (Student t,
    independent means of equal n: half-width ≈ t · √2 · CV / √n)."""
    if not cv > 0:
        return 2
    n = 2
    while n < 10_000:
        t = sps.t.ppf(0.5 + confidence / 2, 2 * n - 2)
        if t * math.sqrt(2) * cv / math.sqrt(n) <= target_halfwidth:
            return n
        n += 1
    return n


def run_length_table(cv: pd.DataFrame, target_halfwidth: float = 0.03, overhead_s: float = 1.5) -> pd.DataFrame:
    """For each control × clients × run length: runs per cell for the target half-width and the seconds
    that costs (each run also pays ``overhead_s`` for switching, draining and warm-up)."""
    out = cv.copy()
    out["runs_for_target"] = [runs_needed(c, target_halfwidth) for c in out["cv"]]
    out["seconds_per_cell"] = out["runs_for_target"] * (out["run_length_s"] + overhead_s)
    return out


def per_run_controls(runs: pd.DataFrame) -> pd.DataFrame:
    """Steal, context switches and server CPU per control × clients (mean ± CI)."""
    measured = common.split_variant(runs)
    cols = [c for c in ("tps", "steal_s", "server_ctx_involuntary", "server_cpu_s") if c in measured]
    rows = []
    for (control, clients), g in measured.groupby(["variant", "clients"], sort=False):
        row = {"control": control, "clients": clients, "n": len(g)}
        for c in cols:
            e = stats.mean_ci(g[c].astype(float))
            row.update({f"{c}_mean": e.value, f"{c}_ci_low": e.low, f"{c}_ci_high": e.high})
        rows.append(row)
    return pd.DataFrame(rows)


def cv_figure(cv: pd.DataFrame):
    """CV of a w-second mean against w, per control and clients, with 95 % error bars (log-log)."""
    import matplotlib.pyplot as plt

    from ...analyze import plots

    plots.theme()
    levels = sorted(cv["clients"].unique())
    fig, axes = plt.subplots(1, len(levels), figsize=(4.2 * len(levels), 3.4), sharey=True, squeeze=False)
    for ax, clients in zip(axes[0], levels):
        for control, g in cv[cv["clients"] == clients].groupby("control", sort=False):
            g = g.sort_values("run_length_s")
            err = [(g["cv"] - g["cv_ci_low"]).clip(lower=0), (g["cv_ci_high"] - g["cv"]).clip(lower=0)]
            ax.errorbar(g["run_length_s"], 100 * g["cv"], yerr=[100 * e for e in err], marker="o", capsize=3,
                        label=control)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("run length (s)")
        ax.set_title(f"{clients} client(s)")
    axes[0][0].set_ylabel("CV of mean tps (%)")
    axes[0][-1].legend(title="control")
    fig.tight_layout()
    return fig

def finding_run_length(table: pd.DataFrame, target_halfwidth: float = 0.03) -> str:
    """Which run length reaches the target half-width cheapest, per control × clients."""
    lines = []
    for (control, clients), g in table.groupby(["control", "clients"], sort=False):
        g = g[g["windows"] >= 4]
        if g.empty:
            continue
        best = g.loc[g["seconds_per_cell"].idxmin()]
        lines.append(f"- `{control}`, {clients} client(s): cheapest at {int(best.run_length_s)} s runs "
                     f"(CV {100 * best.cv:.2g} %, 95 % CI {100 * best.cv_ci_low:.2g}–{100 * best.cv_ci_high:.2g} %, "
                     f"from {int(best.windows)} windows): {int(best.runs_for_target)} runs per cell for a "
                     f"±{100 * target_halfwidth:.0f} % ratio interval, {best.seconds_per_cell:.0f} s per cell.")
    return "\n".join(lines)


def finding_floor(cv: pd.DataFrame, run_length_s: int = 4, control: str = "hold",
                  target_halfwidth: float = 0.03, overhead_s: float = 1.5, cells: int = 27) -> str:
    """What the noise allows: the ratio half-width a cell reaches with n runs of this length, and what the
    target would cost a study of ``cells`` cells (study 02's standard profile: 9 configurations x 3 levels)."""
    at = cv[(cv["run_length_s"] == run_length_s) & (cv["control"] == control)]
    if at.empty:
        return ""
    c = float(at["cv"].max())
    def hw(n: int) -> float:
        return sps.t.ppf(0.5 + stats.CONFIDENCE / 2, 2 * n - 2) * math.sqrt(2) * c / math.sqrt(n)
    need = runs_needed(c, target_halfwidth)
    hours = need * (run_length_s + overhead_s) * cells / 3600
    return (f"**The floor.** With the idle state `{control}`, a {run_length_s} s run's mean varies by CV "
            f"{100 * c:.2g} % (the larger of the levels measured). A ratio's 95 % half-width is then "
            f"about ±{100 * hw(5):.0f} % with 5 runs per cell, ±{100 * hw(10):.0f} % with 10 and ±{100 * hw(20):.0f} % "
            f"with 20; ±{100 * target_halfwidth:.0f} % needs {need} runs per cell, {hours:.1f} h for a study of "
            f"{cells} cells. A 15-minute standard profile cannot reach ±{100 * target_halfwidth:.0f} % on this "
            "machine; its adaptive blocks spend the budget on the widest cells, and every ratio is printed with "
            "the half-width it reached.")
