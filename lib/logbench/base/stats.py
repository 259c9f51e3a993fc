"""Summaries with their uncertainty: mean ± 95 % CI with n, and the overhead ratio with a Fieller CI.

Means use Student's t interval (scipy). The ratio of two independent means uses
Fieller's theorem (Fieller 1954, J. R. Stat. Soc. B 16:175; as given by
Franz 2007, "Ratios: A short guide to confidence limits and proper use",
arXiv:0710.2024; here with zero covariance), with Welch–Satterthwaite degrees
of freedom. Fieller is exact for normal means and, unlike the delta method,
says honestly when the denominator is too uncertain for a bounded interval
(then the limits are infinite). Neither scipy nor statsmodels provides it.

In the block design every block runs every configuration once, the baseline among them, in a random order, so
a configuration's ratio is estimated within blocks (:func:`paired_ratio_ci`): the mean of the per-block
log-ratios with a t interval, which removes what moves a whole block (the host's drift between blocks) and
keeps the order's randomization as the interval's justification. A declared block layout that runs the baseline
(or its A/A control) more than once per block gives each block one log-ratio, of the geometric means of its runs
(:func:`block_levels`): the blocks stay the units, so the degrees of freedom stay the blocks'. It narrows an interval where drift between
blocks dominates and widens it where it does not (its t has n - 1 degrees of freedom, Welch's more): on study
02's runs of 2026-11-24/25 the A/A half-width at 1 client went from 12.8 % (Fieller) to 3.9 %, on the re-run of
the evening of 2026-11-25 the median A/A half-width of 02 went from 9.0 % to 10.7 % and of study 05 (3 blocks)
from 28.6 % to 38.5 %. A block intercept with the residual variance pooled over a level's configurations would
keep the pairing with more degrees of freedom (not done).

A ratio is read as an effect only beyond its study's A/A spread (:func:`effect_reading`, issue 22): its interval
excludes 1 and it lies farther from 1 than the A/A's interval reaches at the same study, cell and clients level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from . import environment
from .formatting import CONFIDENCE, ci_text
from .settings import aa_name, is_aa


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float
    n: int

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def __str__(self) -> str:
        return ci_text(self.value, self.low, self.high, n=self.n)


def mean_ci(x, confidence: float = CONFIDENCE) -> Estimate:
    """Mean with a Student-t interval; n = 1 gives an undefined (NaN) interval, zero spread a zero-width one."""
    a = np.asarray(x, dtype=float)
    a = a[~np.isnan(a)]
    n = int(a.size)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    m = float(a.mean())
    if n == 1:
        return Estimate(m, math.nan, math.nan, 1)
    sem = stats.sem(a)
    if sem == 0:
        return Estimate(m, m, m, n)
    low, high = stats.t.interval(confidence, n - 1, loc=m, scale=sem)
    return Estimate(m, float(low), float(high), n)


def median_ci(x, confidence: float = CONFIDENCE, seed: int = 0) -> Estimate:
    """Median with a percentile bootstrap interval (scipy, 2000 resamples, seeded: the same values give the same
    interval); fewer than two values give an undefined (NaN) interval."""
    a = np.asarray(x, dtype=float)
    a = a[~np.isnan(a)]
    if a.size < 2:
        return Estimate(float(np.median(a)) if a.size else math.nan, math.nan, math.nan, int(a.size))
    boot = stats.bootstrap((a,), np.median, confidence_level=confidence, method="percentile", n_resamples=2000,
                           rng=np.random.default_rng(seed))
    return Estimate(float(np.median(a)), float(boot.confidence_interval.low), float(boot.confidence_interval.high),
                    int(a.size))


def difference_ci(x, y, confidence: float = CONFIDENCE) -> Estimate:
    """mean(x) − mean(y) with Welch's interval (scipy's ttest_ind, unequal variances)."""
    a, b = pd.Series(x).dropna().to_numpy(float), pd.Series(y).dropna().to_numpy(float)
    n = int(min(a.size, b.size))
    if a.size == 0 or b.size == 0:
        return Estimate(math.nan, math.nan, math.nan, n)
    d = float(a.mean() - b.mean())
    if a.size < 2 or b.size < 2:
        return Estimate(d, math.nan, math.nan, n)
    if a.var(ddof=1) == 0 and b.var(ddof=1) == 0:
        return Estimate(d, d, d, n)
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(confidence)
    return Estimate(d, float(ci.low), float(ci.high), n)


def welch_df(var_a: float, n_a: int, var_b: float, n_b: int) -> float:
    """Welch–Satterthwaite degrees of freedom for two variances of means."""
    num = (var_a + var_b) ** 2
    den = (var_a**2 / (n_a - 1) if n_a > 1 and var_a > 0 else 0.0) + (var_b**2 / (n_b - 1) if n_b > 1 and var_b > 0 else 0.0)
    return num / den if den > 0 else math.inf


def ratio_ci(x, y, confidence: float = CONFIDENCE) -> Estimate:
    """mean(x) / mean(y) with Fieller's interval for independent samples."""
    a_s = np.asarray(x, dtype=float)
    b_s = np.asarray(y, dtype=float)
    a_s, b_s = a_s[~np.isnan(a_s)], b_s[~np.isnan(b_s)]
    n = int(min(a_s.size, b_s.size))
    if a_s.size == 0 or b_s.size == 0:
        return Estimate(math.nan, math.nan, math.nan, n)
    a, b = float(a_s.mean()), float(b_s.mean())
    r = a / b if b != 0 else math.nan
    if a_s.size < 2 or b_s.size < 2:
        return Estimate(r, math.nan, math.nan, n)
    var_a = float(a_s.var(ddof=1)) / a_s.size
    var_b = float(b_s.var(ddof=1)) / b_s.size
    if var_a == 0 and var_b == 0:
        return Estimate(r, r, r, n)
    t = float(stats.t.ppf(0.5 + confidence / 2, welch_df(var_a, a_s.size, var_b, b_s.size)))
    g = t * t * var_b / (b * b)
    if g >= 1:
        # The denominator's interval contains zero: Fieller's set is unbounded.
        return Estimate(r, -math.inf, math.inf, n)
    half = (t / abs(b)) * math.sqrt(var_a * (1 - g) + r * r * var_b)
    return Estimate(r, (r - half) / (1 - g), (r + half) / (1 - g), n)


PAIRED, INDEPENDENT = "paired by block (t on log-ratios)", "Fieller (independent means)"


def block_levels(runs: pd.DataFrame, value: str, block: str) -> pd.Series:
    """One side's level in each block: its run's ``value``, or where a block layout repeats it (``baseline_runs``,
    ``aa_runs`` > 1) the geometric mean of its runs there (scipy's gmean), which is the mean the log-ratio needs.
    A single run is taken as it is rather than through exp(log(x)), so a block of one run per side gives
    exactly the log-ratio it always has (the committed summaries stay the same to the last bit), and the blocks
    keep the order of their first run, the order the sums over them have always run in. NaN where a repeated
    side has a value <= 0 (no geometric mean)."""
    def level(x: pd.Series) -> float:
        if len(x) == 1:
            return float(x.iloc[0])
        x = x.to_numpy(dtype=float)
        return float(stats.gmean(x)) if (x > 0).all() else math.nan

    v = runs[[block, value]].dropna()
    return v.groupby(block, sort=False)[value].agg(level)


def paired_ratio_ci(cell: pd.DataFrame, ref: pd.DataFrame, value: str, block: str,
                    confidence: float = CONFIDENCE) -> Estimate | None:
    """The ratio of ``cell``'s ``value`` to ``ref``'s within blocks: exp of the mean over blocks of the log-ratio
    of the two sides' levels in each block (:func:`block_levels`), with a Student-t interval on n - 1 degrees
    of freedom, n counting the blocks both sides ran in. None where it cannot be made (fewer than two such
    blocks, a value <= 0): the caller then uses :func:`ratio_ci` on the independent means.

    A block holding several runs of one side (a declared block layout with ``baseline_runs`` or ``aa_runs``
    > 1) contributes one log-ratio, of its geometric means: the blocks, not the runs, are the independent
    units (drift is shared within a block and the order is randomized per block), so the degrees of freedom
    are the blocks' and repeating the baseline narrows the interval only through a less noisy block level,
    never by counting correlated runs as independent ones."""
    m = block_levels(cell, value, block).rename("x").to_frame().join(
        block_levels(ref, value, block).rename("y"), how="inner")
    x, y = m["x"].to_numpy(dtype=float), m["y"].to_numpy(dtype=float)
    if x.size < 2 or not (x > 0).all() or not (y > 0).all():
        return None
    e = mean_ci(np.log(x / y), confidence)
    return Estimate(math.exp(e.value), math.exp(e.low), math.exp(e.high), e.n)


def cell_ratio(cell: pd.DataFrame, ref: pd.DataFrame, value: str = "tps", block: str | None = None,
               confidence: float = CONFIDENCE) -> tuple[Estimate, str]:
    """A cell's ratio to its reference and how it was made: paired by ``block`` where the runs allow
    (:func:`paired_ratio_ci`), else Fieller's interval on the independent means (:func:`ratio_ci`)."""
    if block is not None and block in cell and block in ref:
        e = paired_ratio_ci(cell, ref, value, block, confidence)
        if e is not None:
            return e, PAIRED
    return ratio_ci(cell[value], ref[value], confidence), INDEPENDENT


def relative_halfwidth(r: Estimate) -> float:
    """The CI's half-width relative to the estimate: the precision adaptive repeats aim at."""
    if not r.value or r.value != r.value:
        return math.nan
    return r.half_width / abs(r.value)


def summarise(runs: pd.DataFrame, *, by: list[str], baseline: str, value: str = "tps",
              config_col: str = "configuration", also: tuple[str, ...] = (), block: str | None = None) -> pd.DataFrame:
    """Per group: mean ± CI of ``value``, its ratio to the baseline configuration at the same other keys,
    and mean ± CI of each column in ``also``. ``block``: the column naming each run's block (the block
    design's ``repeat``): ratios within blocks where the runs allow (:func:`cell_ratio`); ``ratio_method``
    says which interval each row has. Runs of more than one environment (``env_id``) are refused, never pooled
    (environment.check_poolable); a frame without the column (made by hand) is one environment."""
    if "env_id" in runs.columns:
        environment.check_poolable(runs)
    others = [c for c in by if c != config_col]
    rows = []
    for key, g in runs.groupby(by, sort=False, observed=True):
        key = key if isinstance(key, tuple) else (key,)
        keyd = dict(zip(by, key))
        m = mean_ci(g[value])
        base = runs[runs[config_col] == baseline]
        for c in others:
            base = base[base[c] == keyd[c]]
        method = ""
        if keyd[config_col] == baseline:
            # The baseline is the reference: its ratio is 1 by definition, with no interval of its own.
            r = Estimate(1.0, math.nan, math.nan, m.n)
        elif len(base):
            r, method = cell_ratio(g, base, value, block)
        else:
            r = Estimate(math.nan, math.nan, math.nan, 0)
        rows.append({**keyd, "n": m.n, f"{value}_mean": m.value, f"{value}_ci_low": m.low, f"{value}_ci_high": m.high,
                     "ratio": r.value, "ratio_ci_low": r.low, "ratio_ci_high": r.high,
                     "ratio_halfwidth": relative_halfwidth(r), "baseline_n": int(len(base)),
                     **({"ratio_method": method} if block is not None else {})})
        for col in also:
            e = mean_ci(g[col])
            rows[-1].update({f"{col}_mean": e.value, f"{col}_ci_low": e.low, f"{col}_ci_high": e.high})
    return pd.DataFrame(rows)


def logging_rows(summary: pd.DataFrame, baseline: str, *, config_col: str = "configuration") -> pd.DataFrame:
    """The rows of configurations under test: neither the baseline nor its A/A control (which logs nothing)."""
    return summary[~summary[config_col].isin((baseline, aa_name(baseline)))]


def resolution(summary: pd.DataFrame, baseline: str, *, config_col: str = "configuration") -> pd.DataFrame:
    """The study's resolution: per clients level (and any other key of ``summary``), the A/A
    control's ratio to the baseline with its CI, the CI's half-width, and whether the CI contains 1.

    A/A means the same configuration twice, so its true ratio is 1: a CI that excludes 1 says the
    instrument is biased at that level, and the study's ratios there cannot be trusted to that
    precision. ``warning`` holds that sentence ('' when the CI contains 1).
    """
    aa = aa_name(baseline)
    rows = summary[summary[config_col] == aa]
    # summarise() puts its grouping keys first, before "n".
    cols = list(summary.columns)
    keys = [c for c in cols[:cols.index("n")] if c != config_col] if "n" in cols else ["clients"]
    out = []
    for _, r in rows.iterrows():
        low, high = float(r["ratio_ci_low"]), float(r["ratio_ci_high"])
        contains = bool(low <= 1 <= high) if low == low and high == high else False
        where = ", ".join(f"{k} {r[k]}" for k in keys)
        warning = "" if contains else (
            f"A/A check failed at {where}: {aa}/{baseline} = {r['ratio']:.3f} [{low:.3f}, {high:.3f}] "
            f"(n = {int(r['n'])}) should contain 1; ratios at this level carry a bias of that size, "
            "so differences smaller than it are not findings.")
        out.append({**{k: r[k] for k in keys}, "aa_ratio": float(r["ratio"]), "ci_low": low, "ci_high": high,
                    "half_width": (high - low) / 2, "relative_half_width": float(r["ratio_halfwidth"]),
                    "n": int(r["n"]), "baseline_n": int(r["baseline_n"]), "contains_1": contains, "warning": warning})
    cols = keys + ["aa_ratio", "ci_low", "ci_high", "half_width", "relative_half_width", "n", "baseline_n",
                   "contains_1", "warning"]
    return pd.DataFrame(out, columns=cols)


# --- what a ratio may be read as: the A/A rule ------------------------------------------------------------------

# How a configuration's ratio to its baseline reads under :func:`effect_reading`, in the words the paper prints.
EFFECT = "effect"
CI_INCLUDES_1 = "its interval includes 1"
WITHIN_AA = "within the A/A spread"
NO_AA = "no A/A at this level"
NO_CI = "no interval"


def aa_reach(low: float, high: float) -> float:
    """How far from 1 an A/A ratio's interval reaches, in log terms: max(|ln low|, |ln high|).

    For an interval symmetric in log terms (the paired and the switchback estimators: exp of a t interval on
    log-ratios) this is the A/A's |ln ratio| plus its half-width in log terms; for Fieller's interval, asymmetric
    around the ratio, it is the reach of its farther end. NaN where the A/A has no interval (one run), infinite
    where its interval is unbounded or reaches 0 (Fieller with a too uncertain denominator)."""
    if _undefined(low) or _undefined(high):
        return math.nan
    if low <= 0 or math.isinf(high):
        return math.inf
    return max(abs(math.log(low)), abs(math.log(high)))


def _undefined(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def effect_reading(value: float, low: float, high: float, reach: float) -> str:
    """Whether a configuration's ratio to its baseline (``value`` [``low``, ``high``]) may be read as an effect,
    given the A/A's :func:`aa_reach` at the same study, cell and clients level.

    The rule: an effect only if the ratio's interval excludes 1 (strictly: an interval ending at 1 includes it)
    AND the ratio lies farther from 1 in log terms than the A/A's interval reaches (strictly: a ratio exactly at
    the reach is within it). The A/A is the baseline measured against itself in the same blocks or loads, so its
    true ratio is 1 and how far its interval lands from 1 is what the instrument alone produces at that level
    (drift the design did not remove, a bias like study 07's import time): a ratio no farther from 1 than that
    may be the instrument's, whatever its own interval says. Why the A/A's reach (its |ln ratio| plus its
    half-width in log terms, :func:`aa_reach`) and not a test of the configuration against the A/A: the two
    ratios share the baseline's runs and the summaries do not hold their covariance, and one A/A estimate is one
    draw of the instrument's error, whose interval, not its point, says how far that error goes. The ratio's
    point, not its interval's near end, is set against it: its interval already had to exclude 1.

    Returns :data:`EFFECT`, or why not: :data:`NO_CI` (no interval), :data:`CI_INCLUDES_1`, :data:`NO_AA` (no A/A
    interval at this level: without it the instrument's spread is unknown, so the ratio is not called an effect
    whatever its interval), :data:`WITHIN_AA`.
    """
    if _undefined(value) or _undefined(low) or _undefined(high):
        return NO_CI
    if low <= 1 <= high:
        return CI_INCLUDES_1
    if _undefined(reach):
        return NO_AA
    if abs(math.log(value)) <= reach:
        return WITHIN_AA
    return EFFECT


def effect_note(effect: str) -> str:
    """What a sentence adds after a ratio it prints with its interval: why it is not an effect where the interval
    alone does not show it (:data:`WITHIN_AA`, :data:`NO_AA`); '' otherwise."""
    return effect if effect in (WITHIN_AA, NO_AA) else ""


def effects(summary: pd.DataFrame, baseline: str, *, keys: list[str] | None = None,
            config_col: str = "configuration") -> pd.DataFrame:
    """``summary`` with two columns more: ``aa_reach`` (the A/A's :func:`aa_reach` at the row's ``keys``: the
    columns other than the configuration that a level is made of; default, as :func:`resolution`, the grouping
    keys before ``n``) and ``effect`` (:func:`effect_reading` of the row's ratio; '' for the baseline and the
    A/A rows, which are not configurations under test)."""
    out = summary.copy()
    if keys is None:
        cols = list(summary.columns)
        keys = [c for c in cols[:cols.index("n")] if c != config_col] if "n" in cols else ["clients"]
    if "ratio" not in summary.columns or not len(summary):
        return out.assign(aa_reach=math.nan, effect="")
    cfg = summary[config_col].astype(str)
    aa = summary[cfg == aa_name(baseline)]
    reach = {tuple(str(r[k]) for k in keys): aa_reach(r["ratio_ci_low"], r["ratio_ci_high"])
             for _, r in aa.iterrows()}
    out["aa_reach"] = [reach.get(tuple(str(r[k]) for k in keys), math.nan) for _, r in summary.iterrows()]
    out["effect"] = ["" if c == baseline or is_aa(c) else
                     effect_reading(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"], a)
                     for c, (_, r), a in zip(cfg, summary.iterrows(), out["aa_reach"])]
    return out
