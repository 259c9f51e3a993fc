"""Ratios, carryover and stopping widths of a switchback study (pure analysis: data frames in, data frames out).

Why within-unit log-ratios: the arms of one load share its slow drift, and a window's nearest baseline (same
block, or same pair) shares most of it; comparing each window with the baseline of its own unit removes what
the two have in common, and logs make the arm's effect a difference (a ratio once exponentiated).

Why an autocorrelation-robust interval: successive units of a load are not independent (the load's noise is
autocorrelated over seconds, the drift over minutes), so a plain t interval on the log-ratios would be too
narrow. Per load: the mean log-ratio in window order with the Newey–West (1987, Econometrica 55:703) HAC
standard error (statsmodels OLS on a constant, Bartlett kernel), maxlags = floor(4 (n/100)^(2/9)) (Newey &
West 1994, Rev. Econ. Stud. 61:631; statsmodels' own default rule) and the n/(n-1) factor (so that maxlags 0
is exactly the ordinary standard error of a mean).

Small samples (checked by simulation, tests/test_switchstats.py): with the 15-40 units a load holds, this
rule gives maxlags 2-3, i.e. a bandwidth that is a sizeable fraction b = (maxlags+1)/n of the sample, and the
Bartlett estimate is then biased low and noisy; Student's t(n-1) covered only 0.91-0.94 per load. So the
critical value is Kiefer & Vogelsang's fixed-b one for the Bartlett kernel (2005, Econometric Theory
21:1130, their cubic in b fitted to the fixed-b limit), never smaller than t(n-1) (which is exact for
independent normal log-ratios and what maxlags 0 uses): that covered 0.945-0.966.

Across loads (the committed run of 2026-11-24 showed why the first method, a Paule–Mandel random-effects mean
of per-load HAC intervals, does not do): with six windows per load the per-load Newey–West standard error is
itself so noisy (a negative lag-1 autocovariance shrank one load's to 0.014 where the plain one was 0.031) that
inverse-variance weights let one load decide, and the A/A control at 4 clients came out 0.931 [0.887, 0.977]
while the two arms' mean log throughputs differed by 0.3 %. So with two or more loads every window counts
equally and the loads are a random effect of a one-way ANOVA (:func:`_pooled`): its interval needs no per-load
variance, carries the between-load variance whenever the loads differ more than their windows do (Kalibera &
Jones, ISMM 2013: repetitions where the variance is), and the windows' autocorrelation inside a load enters
through the loads' means. Between-load variance is truncated at 0 (then the within-load mean square with N-k
df), the usual estimator; the coverage tests below hold it to 0.92-0.98 with a per-load shift of the effect.

All functions take one clients level at a time (the caller groups by clients; a ``clients`` column with
several values is refused).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import patsy
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats as sps

from ..base.stats import mean_ci

CONFIDENCE = 0.95
ANY_SWITCH = "any switch"

# Kiefer & Vogelsang (2005), fixed-b critical values of the Bartlett kernel's t statistic: the one-sided
# quantile q as c0 + c1 b + c2 b² + c3 b³, b = bandwidth / n (statsmodels' Bartlett weights 1 - j/(maxlags+1):
# bandwidth maxlags + 1). Two-sided levels 0.80, 0.90, 0.95, 0.98 use the 0.90, 0.95, 0.975, 0.99 rows.
# Typed from the paper, so checked against a simulation of the fixed-b limit at b = 0.02-1 (within 2 %;
# tests/test_switchstats.py::test_fixed_b_cubic_matches_the_simulated_fixed_b_limit).
_FIXED_B_BARTLETT = {
    0.90: (1.2816, 1.3040, 0.5135, -0.3386),
    0.95: (1.6449, 2.1859, 0.3142, -0.3427),
    0.975: (1.9600, 2.9694, 0.4160, -0.5324),
    0.99: (2.3263, 4.1618, 0.5368, -0.9339),
}


def _one_level(df: pd.DataFrame) -> None:
    if "clients" in df.columns and df["clients"].nunique(dropna=False) > 1:
        raise ValueError("switchstats takes one clients level at a time; group by 'clients' first")


def hac_maxlags(n: int) -> int:
    """Newey & West (1994)'s rule of thumb for the Bartlett kernel's bandwidth: floor(4 (n/100)^(2/9))."""
    return int(math.floor(4 * (n / 100) ** (2 / 9))) if n > 0 else 0


def hac_critical(n: int, maxlags: int, confidence: float = CONFIDENCE) -> float:
    """Two-sided critical value of a HAC t statistic from n observations: t(n-1) with maxlags 0, else the larger
    of t(n-1) and Kiefer–Vogelsang's fixed-b value for b = (maxlags+1)/n (see the module's docstring)."""
    q = 0.5 + confidence / 2
    t = float(sps.t.ppf(q, n - 1)) if n > 1 else math.nan
    if maxlags == 0:
        return t
    key = min(_FIXED_B_BARTLETT, key=lambda k: abs(k - q))
    if abs(key - q) > 1e-9:
        raise ValueError(f"confidence {confidence}: fixed-b critical values are tabulated for 0.8, 0.9, 0.95, 0.98")
    b = (maxlags + 1) / n
    c0, c1, c2, c3 = _FIXED_B_BARTLETT[key]
    return max(t, c0 + c1 * b + c2 * b * b + c3 * b ** 3)


# -- 1. the log-ratios --------------------------------------------------------------------------------------

def window_log_ratios(windows: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """One row per non-baseline window: load, block, unit, window, arm, log_ratio = log(tps) minus the mean log
    tps of the baseline windows with the same load and unit. Units without a baseline window are dropped (they
    have nothing to be compared with). One clients level at a time."""
    _one_level(windows)
    cols = ["load", "block", "unit", "window", "arm", "log_ratio"]
    if not len(windows):
        return pd.DataFrame(columns=cols)
    w = windows.assign(log_tps=np.log(windows["tps"].astype(float)))
    base = (w[w["arm"] == baseline].groupby(["load", "unit"], sort=False)["log_tps"].mean()
            .rename("base_log_tps").reset_index())
    out = w[w["arm"] != baseline].merge(base, on=["load", "unit"], how="inner")
    out = out.assign(log_ratio=out["log_tps"] - out["base_log_tps"])
    return out[cols].sort_values(["load", "window"], kind="stable").reset_index(drop=True)


# -- 2. the ratios ------------------------------------------------------------------------------------------

def _load_estimate(y: np.ndarray, confidence: float, maxlags: int | None) -> dict:
    """One load's log-ratios in window order: mean, Newey–West standard error, df = n-1, and the interval's
    half-width (HAC critical value x standard error)."""
    n = int(y.size)
    lags = hac_maxlags(n) if maxlags is None else min(int(maxlags), n - 1)
    if np.ptp(y) == 0:
        # No spread: the estimate is exact (statsmodels would give the same 0 standard error).
        se = 0.0
    else:
        fit = sm.OLS(y, np.ones(n)).fit(cov_type="HAC", cov_kwds={"maxlags": lags, "use_correction": True})
        se = float(fit.bse[0])
    return {"n": n, "mean": float(y.mean()), "se": se, "df": n - 1, "maxlags": lags,
            "half": hac_critical(n, lags, confidence) * se}


def _pooled(groups: list[np.ndarray], confidence: float) -> tuple[float, float, float, float, float]:
    """Every window's log-ratio with equal weight, loads as a random effect: (mean, low, high, sigma_b2, df).

    One-way random-effects ANOVA (Searle, Casella & McCulloch, Variance Components, 1992, ch. 3): within-load
    mean square MS_w (N-k df), between-load MS_b (k-1 df), sigma_b² = max(0, (MS_b - MS_w)/n0) with
    n0 = (N - sum n_i²/N)/(k-1); the variance of the equal-weight grand mean is sigma_w²/N + sigma_b² sum n_i²/N²,
    a linear combination of the two mean squares whose degrees of freedom are Satterthwaite's. Balanced, it is
    MS_b/N with k-1 df (the variance of the load means, so between-load and within-load noise both count);
    with sigma_b² truncated at 0 it is MS_w/N with N-k df."""
    y = np.concatenate(groups)
    n = np.array([g.size for g in groups], dtype=float)
    N, k = float(y.size), len(groups)
    mean = float(y.mean())
    means = np.array([g.mean() for g in groups])
    df_w, df_b = N - k, k - 1
    ms_w = float(sum(((g - g.mean()) ** 2).sum() for g in groups) / df_w) if df_w > 0 else math.nan
    ms_b = float((n * (means - mean) ** 2).sum() / df_b)
    c = float((n * n).sum() / (N * N))
    n0 = (N - (n * n).sum() / N) / df_b
    if ms_w != ms_w:  # one window per load: only the loads' spread is known
        a_b, a_w = 1.0 / N, 0.0
        ms_w = 0.0
    elif ms_b > ms_w:
        a_b, a_w = c / n0, 1.0 / N - c / n0
    else:
        a_b, a_w = 0.0, 1.0 / N
    var = a_b * ms_b + a_w * ms_w
    sigma_b2 = max(0.0, (ms_b - ms_w) / n0)
    if var <= 0:
        return mean, mean, mean, sigma_b2, math.inf
    den = (a_b * ms_b) ** 2 / df_b + ((a_w * ms_w) ** 2 / df_w if df_w > 0 else 0.0)
    df = var * var / den if den > 0 else math.inf
    half = float(sps.t.ppf(0.5 + confidence / 2, df)) * math.sqrt(var)
    return mean, mean - half, mean + half, sigma_b2, df


def _exp(x: float) -> float:
    """exp, inf past the float range: a running estimate over a few windows can have a log-scale half-width in
    the thousands (a t critical value of ~1 df), and a progress line must not end the study (math.exp raises)."""
    return math.exp(x) if x < 709.0 else math.inf


def arm_ratios(windows: pd.DataFrame, baseline: str, confidence: float = CONFIDENCE, *,
               maxlags: int | None = None) -> pd.DataFrame:
    """Per non-baseline arm: its throughput ratio to the baseline with a ``confidence`` interval.

    Columns: arm, ratio, ratio_ci_low, ratio_ci_high, halfwidth ((high-low)/(2 ratio)), n_windows, n_loads,
    method, tau2 (the between-load variance of the log ratio, one-way ANOVA; NaN with fewer than two loads), loads
    (per load: load, n, mean_log_ratio, se (Newey–West), df (n-1), maxlags, halfwidth (log scale)).

    With one load, its mean within-unit log-ratio with a Newey–West standard error and a fixed-b critical value;
    with several, every window with equal weight and the loads as a random effect (:func:`_pooled`; see the
    module's docstring for why). The per-load details are those of the single-load interval. A load with fewer than two windows of the arm contributes nothing (it has no standard
    error); an arm with no usable load gets NaN and n 0. ``maxlags`` overrides the Newey–West rule (tests).

    Coverage measured by the unit tests' simulation (AR(1) seconds, phi 0.5 and 0.8, random-walk drift,
    per-load shift sd 0.01 of each arm's effect, 2 loads x 15 blocks, both layouts): see the tests.
    """
    lr = window_log_ratios(windows, baseline)
    arms = [a for a in pd.unique(windows["arm"]) if a != baseline] if len(windows) else []
    rows = []
    for arm in arms:
        g = lr[lr["arm"] == arm]
        loads = []
        for load, gl in g.groupby("load", sort=False):
            y = gl["log_ratio"].to_numpy(dtype=float)  # window_log_ratios sorts by (load, window)
            if y.size >= 2:
                loads.append({"load": load, **_load_estimate(y, confidence, maxlags)})
        lag_text = "maxlags " + "/".join(str(x) for x in sorted({d["maxlags"] for d in loads}))
        per_load = f"within-unit log-ratios; Newey-West HAC ({lag_text}), fixed-b/t(n-1) critical value"
        tau2 = math.nan
        if not loads:
            mean = low = high = math.nan
            method = "within-unit log-ratios; no load with two or more windows"
        elif len(loads) == 1:
            d = loads[0]
            mean, low, high = d["mean"], d["mean"] - d["half"], d["mean"] + d["half"]
            method = f"{per_load}; a single load"
        else:
            ys = [gl["log_ratio"].to_numpy(dtype=float) for _, gl in g.groupby("load", sort=False) if len(gl) >= 2]
            mean, low, high, tau2, df = _pooled(ys, confidence)
            method = (f"within-unit log-ratios, equal weight per window; loads ({len(loads)}) as a random effect "
                      f"(one-way ANOVA, Satterthwaite t, {df:.3g} df)")
        ratio = _exp(mean) if mean == mean else math.nan
        lo, hi = (_exp(low), _exp(high)) if low == low else (math.nan, math.nan)
        rows.append({"arm": arm, "ratio": ratio, "ratio_ci_low": lo, "ratio_ci_high": hi,
                     "halfwidth": (hi - lo) / (2 * ratio) if lo == lo else math.nan,
                     "n_windows": int(sum(d["n"] for d in loads)), "n_loads": len(loads), "method": method,
                     "tau2": tau2,
                     "loads": [{"load": d["load"], "n": d["n"], "mean_log_ratio": d["mean"], "se": d["se"],
                                "df": d["df"], "maxlags": d["maxlags"], "halfwidth": d["half"]} for d in loads]})
    return pd.DataFrame(rows, columns=["arm", "ratio", "ratio_ci_low", "ratio_ci_high", "halfwidth", "n_windows",
                                       "n_loads", "method", "tau2", "loads"])


def relative_halfwidths(windows: pd.DataFrame, baseline: str) -> dict[str, float]:
    """Per non-baseline arm, the interval's relative half-width (inf where it is undefined): what the adaptive
    stopping rule compares with its target. It reads widths only, never the estimates' values."""
    r = arm_ratios(windows, baseline)
    return {str(a): (float(h) if h == h else math.inf) for a, h in zip(r["arm"], r["halfwidth"])}


# -- 3. carryover after a switch ----------------------------------------------------------------------------

def carryover(seconds: pd.DataFrame, guard_s: int, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """The throughput profile after a switch: per transition ("into <arm>", and the pooled "any switch") and
    offset_s (0 = the first second after the switch), the mean of dev = log(tps at that offset) minus the mean
    log tps of the same window's seconds at offset >= ``guard_s`` (its measured level), with a Student-t
    interval over windows (stats.mean_ci), its standard error and n.

    Windows without a previous window (the first of a load) have no switch and are left out, and so are
    windows with no second at or after the guard. Each window is its own reference, so drift and load level
    cancel; a second whose interval excludes 0 is carryover the guard has to cover. One clients level at a time.
    """
    _one_level(seconds)
    cols = ["transition", "offset_s", "mean", "ci_low", "ci_high", "se", "n"]
    s = seconds[seconds["prev_arm"].notna()]
    if not len(s):
        return pd.DataFrame(columns=cols)
    s = s.assign(log_tps=np.log(s["tps"].astype(float)))
    ref = s[s["offset_s"] >= guard_s].groupby(["load", "window"])["log_tps"].mean().rename("ref").reset_index()
    s = s.merge(ref, on=["load", "window"], how="inner")
    s = s.assign(dev=s["log_tps"] - s["ref"], transition="into " + s["arm"].astype(str))
    rows = []
    for name, g in [*s.groupby("transition", sort=True), (ANY_SWITCH, s)]:
        for off, go in g.groupby("offset_s", sort=True):
            e = mean_ci(go["dev"], confidence)
            se = float(sps.sem(go["dev"])) if e.n > 1 else math.nan
            rows.append({"transition": name, "offset_s": int(off), "mean": e.value, "ci_low": e.low,
                         "ci_high": e.high, "se": se, "n": e.n})
    return pd.DataFrame(rows, columns=cols)


def guard_needed(profile: pd.DataFrame, max_guard: int, confidence: float = CONFIDENCE) -> int:
    """The shortest guard the profile supports: the smallest g in 0..max_guard such that at every offset >= g
    (to the end of the profile) the 'any switch' mean is within its interval of the level of the seconds from
    g on; max_guard + 1 if none is (the window is too short to tell).

    Two refinements of "the interval contains 0", both so that the answer does not depend on chance or on the
    guard the profile was measured with: (1) each candidate g is judged against the mean of the offsets >= g
    (the level a guard of g would measure), not against the profile's own reference (a too-short measured
    guard puts the slow seconds into the reference and shifts every later offset); (2) the intervals are
    Bonferroni-adjusted over the offsets tested (Dunn 1961, JASA 56:52), else with five offsets at 95 % one
    no-carryover profile in five would call for a guard. Offsets with n < 2 (no interval) count as consistent.
    """
    p = profile[profile["transition"] == ANY_SWITCH].sort_values("offset_s")
    if not len(p):
        return 0
    off = p["offset_s"].to_numpy(dtype=int)
    mean, se, n = (p[c].to_numpy(dtype=float) for c in ("mean", "se", "n"))
    for g in range(0, max_guard + 1):
        keep = off >= g
        if not keep.any():
            return g
        level = mean[keep].mean()
        m = int(keep.sum())
        q = 1 - (1 - confidence) / (2 * m)
        ok = True
        for mk, sk, nk in zip(mean[keep], se[keep], n[keep]):
            if nk < 2 or not sk == sk:
                continue
            if abs(mk - level) > float(sps.t.ppf(q, nk - 1)) * sk:
                ok = False
                break
        if ok:
            return g
    return max_guard + 1


# -- 4. same settings before, or a different arm ------------------------------------------------------------

def same_vs_changed(windows: pd.DataFrame, baseline: str, aa: str, confidence: float = CONFIDENCE) -> dict:
    """A carryover test on the measured windows: the baseline and A/A windows whose previous window ran the same
    settings (the baseline or its A/A control) against those after a different (logging) arm.

    difference = changed - same in mean log tps within load: OLS of log tps on a 'changed' indicator with load
    fixed effects, Newey–West standard errors within each load's window sequence (statsmodels 'hac-panel',
    maxlags by the Newey–West rule on the windows per load; cluster errors by load would have one df with two
    loads) and the same fixed-b/t critical value as ``arm_ratios``. Negative: the windows after a logging arm
    are slower, i.e. the guard lets carryover through. Needs a ``prev_arm`` column. One clients level at a time.
    """
    _one_level(windows)
    nan = {"difference": math.nan, "ci_low": math.nan, "ci_high": math.nan}
    w = windows[windows["arm"].isin((baseline, aa)) & windows["prev_arm"].notna()]
    w = w.assign(changed=(~w["prev_arm"].isin((baseline, aa))).astype(float), log_tps=np.log(w["tps"].astype(float)),
                 load_id=w["load"].astype(str)).sort_values(["load_id", "window"], kind="stable")
    n_changed = int(w["changed"].sum())
    n_same = int(len(w) - n_changed)
    per_load = int(w.groupby("load_id").size().min()) if len(w) else 0
    lags = hac_maxlags(per_load)
    method = (f"log tps ~ changed + load fixed effects; Newey-West HAC within load (maxlags {lags}), "
              "fixed-b/t critical value")
    if n_same < 1 or n_changed < 1 or len(w) < w["load_id"].nunique() + 2:
        return {**nan, "n_same": n_same, "n_changed": n_changed, "method": method}
    groups = pd.factorize(w["load_id"])[0]
    formula = "log_tps ~ changed + C(load_id)" if w["load_id"].nunique() > 1 else "log_tps ~ changed"
    fit = smf.ols(formula, data=w).fit(cov_type="hac-panel", cov_kwds={
        "groups": groups, "maxlags": lags, "use_correction": "hac", "df_correction": False})
    d, se = float(fit.params["changed"]), float(fit.bse["changed"])
    half = max(float(sps.t.ppf(0.5 + confidence / 2, fit.df_resid)),
               hac_critical(per_load, lags, confidence) if lags else 0.0) * se
    return {"difference": d, "ci_low": d - half, "ci_high": d + half, "n_same": n_same, "n_changed": n_changed,
            "method": method}


def previous_arm_term(windows: pd.DataFrame, baseline: str, aa: str, confidence: float = CONFIDENCE) -> dict:
    """The A/A control's ratio without the carryover of the arm before each baseline and A/A window: does
    carryover explain an A/A that strays from 1?

    :func:`arm_ratios` compares each window with its unit's baseline and has no term for what ran before it, so
    where the A/A windows follow another arm more (or less) often than the baseline windows do, a carryover
    that lasts into the next window's measured seconds (which :func:`carryover` cannot see, each window being its
    own reference) biases the A/A ratio. The term: OLS of log tps on the arm (treatment against ``baseline``),
    ``after_other`` (a baseline or A/A window whose previous window ran neither of the two: the baseline's
    settings after another arm's, what :func:`same_vs_changed` tests) and an intercept per unit of a load (the
    estimator's own comparison), over every window with a previous one, with Newey–West errors within each load
    and the fixed-b/t critical value, as :func:`same_vs_changed`. The other arms' windows carry no term
    (carryover into a logging arm need not be the baseline's); they pin the units' levels. Then
    :func:`arm_ratios` itself on the windows with the term's effect taken out of the baseline and A/A windows
    after another arm: the estimator's A/A as it would be without that carryover (the term's own uncertainty is
    not carried into that interval; it is small where the two arms follow other arms about equally often).
    One clients level at a time; needs ``prev_arm``.

    Returns ``plain_ratio``, ``plain_low``, ``plain_high`` (:func:`arm_ratios`' A/A on the windows as measured),
    ``aa_ratio``, ``aa_low``, ``aa_high`` (the same without the carryover), the term (``carryover``: log tps of
    the baseline's settings after another arm minus after its own, ``carryover_low``, ``carryover_high``), how
    many baseline and A/A windows ran after another arm (``base_after_other``, ``aa_after_other`` of ``n_base``,
    ``n_aa``) and ``method``. The term and the A/A without it are NaN where the schedule cannot tell carryover
    from the A/A label (no baseline or A/A window after another arm, none after the baseline's settings, or the
    term a combination of the arms and units)."""
    _one_level(windows)
    nan = dict.fromkeys(["aa_ratio", "aa_low", "aa_high", "carryover", "carryover_low", "carryover_high"], math.nan)
    r = arm_ratios(windows, baseline, confidence).set_index("arm")
    out = {k: float(r.loc[aa, c]) if aa in r.index else math.nan
           for k, c in (("plain_ratio", "ratio"), ("plain_low", "ratio_ci_low"), ("plain_high", "ratio_ci_high"))}
    w = windows.assign(prev_arm=windows["prev_arm"].where(windows["prev_arm"].notna(), None))
    pair = w["arm"].isin((baseline, aa))
    w = w.assign(after_other=(pair & w["prev_arm"].notna() & ~w["prev_arm"].isin((baseline, aa))).astype(float),
                 log_tps=np.log(w["tps"].astype(float)), load_id=w["load"].astype(str),
                 unit_id=w["load"].astype(str) + "/" + w["unit"].astype(str))
    b, a = w[w["arm"] == baseline], w[w["arm"] == aa]
    out.update(n_base=len(b), n_aa=len(a), base_after_other=int(b["after_other"].sum()),
               aa_after_other=int(a["after_other"].sum()))
    m = w[w["prev_arm"].notna()].sort_values(["load_id", "window"], kind="stable")
    per_load = int(m.groupby("load_id").size().min()) if len(m) else 0
    lags = hac_maxlags(per_load)
    out["method"] = ("the term: log tps ~ arm + baseline's settings after another arm + unit of a load, every window "
                     f"with a previous one, Newey-West HAC within load (maxlags {lags}), fixed-b/t critical value; "
                     "the A/A: arm_ratios with the term's effect taken out")
    mp = m[m["arm"].isin((baseline, aa))]
    if mp["after_other"].nunique() < 2 or not (mp["arm"] == baseline).any() or not (mp["arm"] == aa).any():
        return {**nan, **out}
    term = f"C(arm, Treatment(reference={baseline!r}))"
    units = " + C(unit_id)" if m["unit_id"].nunique() > 1 else ""
    formula = f"log_tps ~ {term} + after_other{units}"
    _, x = patsy.dmatrices(formula, m, return_type="dataframe")
    if np.linalg.matrix_rank(x.to_numpy()) < x.shape[1]:
        # e.g. every A/A window after another arm and every baseline window after its A/A control
        return {**nan, **out}
    fit = smf.ols(formula, data=m).fit(cov_type="hac-panel", cov_kwds={
        "groups": pd.factorize(m["load_id"])[0], "maxlags": lags, "use_correction": "hac", "df_correction": False})
    q = max(float(sps.t.ppf(0.5 + confidence / 2, fit.df_resid)),
            hac_critical(per_load, lags, confidence) if lags else 0.0)
    c, se = float(fit.params["after_other"]), float(fit.bse["after_other"])
    fixed = windows.assign(tps=w["tps"].astype(float) * np.exp(-c * w["after_other"]))
    r = arm_ratios(fixed, baseline, confidence).set_index("arm").loc[aa]
    return {**out, "aa_ratio": float(r["ratio"]), "aa_low": float(r["ratio_ci_low"]),
            "aa_high": float(r["ratio_ci_high"]), "carryover": c, "carryover_low": c - q * se,
            "carryover_high": c + q * se}


def predicted_halfwidth(log_tps: Sequence[float], measured_s: int, windows_per_arm: int, layout: str,
                        confidence: float = 0.95) -> dict[str, float]:
    """The relative half-width of an arm's ratio that per-second noise alone allows: the floor of the design.

    A window's mean of ``measured_s`` seconds of an AR(1) series with per-second sd ``sigma`` and lag-1
    autocorrelation ``rho`` has variance sigma^2/m * (1 + 2 sum_k (1 - k/m) rho^k) (the variance of a mean of a
    stationary series, e.g. Box, Jenkins & Reinsel, Time Series Analysis, 4th ed., eq. 2.1.15 with AR(1)
    autocorrelations); an arm's log-ratio to the baseline window of its unit has twice that (two windows),
    and the mean over ``windows_per_arm`` such log-ratios a t interval. Drift, carryover and the
    variance between loads only add to it."""
    x = np.asarray(log_tps, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < 4 or windows_per_arm < 2:
        return {"sigma_per_s": math.nan, "rho": math.nan, "halfwidth": math.nan}
    sigma = float(x.std(ddof=1))
    d = x - x.mean()
    rho = float(np.clip((d[1:] * d[:-1]).sum() / (d * d).sum(), -0.99, 0.99)) if sigma > 0 else 0.0
    return halfwidth_from_noise(sigma, rho, measured_s, windows_per_arm, confidence)


def halfwidth_from_noise(sigma: float, rho: float, measured_s: int, windows_per_arm: int,
                         confidence: float = 0.95) -> dict[str, float]:
    """:func:`predicted_halfwidth` from a per-second sd and lag-1 autocorrelation already estimated (e.g. by
    :func:`within_window_noise`, whose windows' own means are not in the way)."""
    if not (sigma == sigma and rho == rho) or windows_per_arm < 2:
        return {"sigma_per_s": sigma, "rho": rho, "halfwidth": math.nan}
    m = int(measured_s)
    inflation = 1 + 2 * sum((1 - k / m) * rho**k for k in range(1, m))
    var_window = sigma**2 / m * max(inflation, 0.0)
    var_ratio = 2 * var_window
    t = float(sps.t.ppf(0.5 + confidence / 2, windows_per_arm - 1))
    return {"sigma_per_s": sigma, "rho": rho, "halfwidth": t * math.sqrt(var_ratio / windows_per_arm)}


# -- 5. per-second noise inside windows, without the windows' own means in the way ----------------------------

def _window_traces(m: int, rho: float) -> tuple[float, float]:
    """For one window of ``m`` seconds of a stationary AR(1) series (variance 1, lag-1 correlation ``rho``):
    E[sum of squared deviations from the window's mean] and E[sum of products of successive deviations], i.e.
    tr(C R) and tr(C L C R) with C = I - J/m the centring matrix, R the AR(1) correlation matrix and L the
    symmetric lag-1 matrix (1/2 beside the diagonal)."""
    i = np.arange(m)
    r = rho ** np.abs(i[:, None] - i[None, :])
    c = np.eye(m) - 1.0 / m
    lag = (np.eye(m, k=1) + np.eye(m, k=-1)) / 2
    return float(np.trace(c @ r)), float(np.trace(c @ lag @ c @ r))


def within_window_noise(values: Sequence[float], windows: Sequence[object], model: str = "ar1") -> dict[str, float]:
    """The per-second sd ``sigma`` and lag-1 autocorrelation ``rho`` of a series measured in short windows, from
    the deviations of each second from its own window's mean (so that drift between windows is not noise).

    Why not the sd of those deviations: a window's mean is fitted from its own m seconds, so the deviations
    have m - 1 degrees of freedom per window, not m: their sd understates sigma by sqrt((m - 1)/m) (sqrt(2/3)
    with the 3 measured seconds of a 4 s window and a 1 s guard), and their lag-1 correlation is pulled
    towards -1/(m - 1) (-0.5 with m = 3) even for independent seconds. Instead a method-of-moments fit of a
    stationary AR(1) model, design-aware: the observed sums of squares S0 and of successive products S1 over
    all windows have expectations sigma^2 sum_w tr(C R(rho)) and sigma^2 sum_w tr(C L C R(rho))
    (:func:`_window_traces`); rho solves S1/S0 = their ratio (scipy's brentq; at the bound of [-0.99, 0.99]
    where the observed ratio lies beyond what the model reaches), then sigma^2 = S0 / sum_w tr(C R(rho)).
    With rho = 0 this is the pooled within-window variance on sum_w (m_w - 1) degrees of freedom.

    ``model`` "white": rho taken as 0 (white noise around each window's own level), sigma^2 = S0 / sum_w (m_w - 1):
    the per-second noise a floor may count on, since whatever is smooth over a few seconds is largely shared by
    neighbouring windows and cancels in their ratio; "ar1": the fit above (rho is then what the seconds show
    beyond their window's level, and sigma the marginal sd an AR(1) with that rho would have).

    ``windows``: the window each value belongs to, in time order within each window; windows with fewer than
    two values carry no within-window information and are left out. Returns sigma, rho, the number of windows
    used and the degrees of freedom sum_w (m_w - 1)."""
    if model not in ("ar1", "white"):
        raise ValueError(f"model {model!r}: one of 'ar1', 'white'")
    from scipy.optimize import brentq

    x = np.asarray(values, dtype=float)
    key = pd.Series(list(windows))
    ok = np.isfinite(x)
    frame = pd.DataFrame({"x": x[ok], "w": key[ok].to_numpy()})
    size = frame.groupby("w", sort=False)["x"].transform("size")
    frame = frame[size >= 2]
    by = frame.groupby("w", sort=False)["x"]
    d = frame["x"] - by.transform("mean")
    nxt = d.groupby(frame["w"], sort=False).shift(-1)  # the next second of the same window, NaN at its end
    s0, s1 = float((d * d).sum()), float((d * nxt).sum())
    sizes = [int(n) for n in by.size()]
    out = {"sigma_per_s": math.nan, "rho": math.nan, "windows": len(sizes), "df": int(sum(m - 1 for m in sizes))}
    if not sizes or s0 <= 0:
        return {**out, "sigma_per_s": 0.0 if sizes else math.nan, "rho": 0.0 if sizes else math.nan}
    counts = pd.Series(sizes).value_counts()

    def traces(rho: float) -> tuple[float, float]:
        t = [(_window_traces(int(m), rho), k) for m, k in counts.items()]
        return sum(a * k for (a, _), k in t), sum(b * k for (_, b), k in t)

    observed = s1 / s0
    if model == "white" or max(sizes) < 3:
        # two-second windows: d_2 = -d_1, so S1 = -S0/2 whatever rho is; rho cannot be read, take it as 0
        rho = 0.0
    else:
        def gap(r: float) -> float:
            a, b = traces(r)
            return b / a - observed

        lo, hi = -0.99, 0.99
        g_lo, g_hi = gap(lo), gap(hi)
        rho = lo if g_lo >= 0 else hi if g_hi <= 0 else float(brentq(gap, lo, hi, xtol=1e-10))
    a, _ = traces(rho)
    return {**out, "sigma_per_s": math.sqrt(s0 / a), "rho": rho}


# -- 6. carryover into the next window: the baseline after a logging window vs after a baseline window ----------

def carryover_by_offset(seconds: pd.DataFrame, baseline: str, aa: str, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Per second of a window (offset_s, 0 = the second the switch was made): the baseline's and its A/A
    control's log tps after a logging window minus after a window of the same settings
    (:func:`same_vs_changed` on that second of every such window: load fixed effects, Newey-West within load),
    with its interval at ``confidence`` and at the Bonferroni level over the offsets (Dunn 1961) that
    :func:`guard_from_comparison` reads.

    Why: :func:`carryover` compares a second with the same window's later seconds, so a logging arm that slows
    the *whole* next window is invisible to it by construction; here each window is compared with other
    windows of the same settings, and a difference that lasts to the window's last second is carryover no
    guard inside the window removes. One clients level at a time."""
    _one_level(seconds)
    cols = ["offset_s", "difference", "ci_low", "ci_high", "adj_ci_low", "adj_ci_high", "n_same", "n_changed"]
    if not len(seconds):
        return pd.DataFrame(columns=cols)
    offsets = sorted(int(o) for o in pd.unique(seconds["offset_s"]))
    # the fixed-b critical values exist at four levels only, so the Bonferroni interval widens the ordinary one
    # by the ratio of normal quantiles (within 1-2 % of the t ratio at the 5-30 df these tests have)
    widen = float(sps.norm.ppf(1 - (1 - confidence) / (2 * len(offsets))) / sps.norm.ppf(0.5 + confidence / 2))
    rows = []
    for off in offsets:
        t = same_vs_changed(seconds[seconds["offset_s"] == off], baseline, aa, confidence)
        d, half = t["difference"], (t["ci_high"] - t["ci_low"]) / 2
        rows.append({"offset_s": off, "difference": d, "ci_low": t["ci_low"], "ci_high": t["ci_high"],
                     "adj_ci_low": d - widen * half, "adj_ci_high": d + widen * half, "n_same": t["n_same"],
                     "n_changed": t["n_changed"]})
    return pd.DataFrame(rows, columns=cols)


def guard_from_comparison(by_offset: pd.DataFrame) -> dict[str, object]:
    """The guard :func:`carryover_by_offset` calls for, as one of three verdicts:

    - ``outlasts``: the window's last second still differs (Bonferroni interval excludes 0): the carryover lasts
      the whole window, so no guard (which can only drop a window's first seconds) fixes it; the design per
      clients level has to. ``guard_s`` None.
    - ``guard``: some earlier seconds differ, the later ones do not: ``guard_s`` is the first offset after the
      last one that differs.
    - ``unresolved``: no second differs, but the test only resolves a difference of about ``resolution`` (the
      last second's Bonferroni half-width): a carryover smaller than that may be there. ``guard_s`` 0 says only
      that these data call for none.

    ``resolution`` and ``last_difference`` (log scale) are always given (NaN without an interval)."""
    b = by_offset.dropna(subset=["adj_ci_low", "adj_ci_high"]).sort_values("offset_s")
    if not len(b):
        return {"verdict": "unresolved", "guard_s": None, "last_difference": math.nan, "resolution": math.nan}
    off = b["offset_s"].to_numpy(dtype=int)
    differs = ((b["adj_ci_low"] > 0) | (b["adj_ci_high"] < 0)).to_numpy()
    last = b.iloc[-1]
    out = {"last_difference": float(last["difference"]),
           "resolution": float((last["adj_ci_high"] - last["adj_ci_low"]) / 2)}
    if differs[-1]:
        return {"verdict": "outlasts", "guard_s": None, **out}
    hit = np.flatnonzero(differs)
    if hit.size:
        return {"verdict": "guard", "guard_s": int(off[hit[-1]] + 1), **out}
    return {"verdict": "unresolved", "guard_s": 0, **out}
