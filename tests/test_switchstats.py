"""Switchback statistics: hand-computed cases, and the coverage of the ratio intervals on a simulated machine.

The simulated machine (``simulate``) exists only for these tests: per-second log throughput = AR(1) noise +
a slow random-walk drift + each arm's effect + a per-load shift of each arm's effect (the between-load
variance a restarted server brings); a window's tps is the mean of its seconds after the guard.
"""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.signal import lfilter

from logbench.measure import switchstats as ss

BASE, AA, LOGGING = "none", "none_again", "syslog"
TRUE_RATIO = {AA: 1.0, LOGGING: 0.6}


def plan(rng, layout: str, blocks: int, arms: list[str]) -> list[tuple[int, int, str]]:
    """(block, unit, arm) per window in order: the two layouts of the switchback design."""
    others = [a for a in arms if a != BASE]
    rows, unit = [], 0
    for b in range(blocks):
        if layout == "permutation":
            rows += [(b, b, str(a)) for a in rng.permutation(arms)]
        else:
            for a in rng.permutation(others):
                pair = [BASE, str(a)] if rng.random() < 0.5 else [str(a), BASE]
                rows += [(b, unit, x) for x in pair]
                unit += 1
    return rows


def simulate(rng, layout="permutation", phi=0.5, *, blocks=15, loads=2, window_s=5, guard_s=1, sd=0.08,
             drift_sd=0.003, tau=0.01, ratios=None, switch_cost=None, after_logging=1.0, seconds=False, orders=None):
    """Windows (and, with ``seconds``, the per-second rows) of ``loads`` independent simulated loads.

    sd: stationary sd of the AR(1) log-throughput noise per second; drift_sd: the random walk's step per
    second; tau: sd of each non-baseline arm's per-load shift of its log effect; switch_cost: arm -> factor on
    the first second after switching into it; after_logging: factor on baseline and A/A windows whose
    previous window ran a logging arm (a carryover the guard does not cover); orders: block b runs the arms in
    ``orders[b % len(orders)]`` (a fixed schedule, permutation layout) instead of a random plan."""
    ratios = ratios or TRUE_RATIO
    arms = [BASE, *ratios]
    switch_cost = switch_cost or {}
    wrows, srows = [], []
    for load in range(loads):
        p = (plan(rng, layout, blocks, arms) if orders is None
             else [(b, b, a) for b in range(blocks) for a in orders[b % len(orders)]])
        shift = {a: rng.normal(0, tau) if a != BASE else 0.0 for a in arms}
        n = len(p) * window_s
        e = rng.normal(0, sd * math.sqrt(1 - phi * phi), n)
        e[0] = rng.normal(0, sd)  # start in the stationary distribution
        log_tps = (math.log(1000) + lfilter([1.0], [1.0, -phi], e) + np.cumsum(rng.normal(0, drift_sd, n))
                   + np.repeat([math.log(ratios.get(a, 1.0)) + shift[a] for _, _, a in p], window_s))
        sec = np.exp(log_tps).reshape(len(p), window_s)
        prev = None
        for w, (b, u, a) in enumerate(p):
            if prev is not None and a in switch_cost:
                sec[w, 0] *= switch_cost[a]
            if prev not in (None, BASE, AA) and a in (BASE, AA):
                sec[w, :] *= after_logging
            wrows.append((load, b, u, w, a, prev, float(sec[w, guard_s:].mean())))
            if seconds:
                srows += [(load, w, a, prev, k, float(sec[w, k])) for k in range(window_s)]
            prev = a
    windows = pd.DataFrame(wrows, columns=["load", "block", "unit", "window", "arm", "prev_arm", "tps"])
    if not seconds:
        return windows
    return windows, pd.DataFrame(srows, columns=["load", "window", "arm", "prev_arm", "offset_s", "tps"])


def frame(rows):
    return pd.DataFrame(rows, columns=["load", "block", "unit", "window", "arm", "tps"])


# -- hand-computed cases -------------------------------------------------------------------------------------

def three_blocks():
    # One load, permutation layout, three blocks: log ratios of "syslog" are log(0.5), log(0.6), log(0.7).
    return frame([
        (0, 0, 0, 0, BASE, 100.0), (0, 0, 0, 1, LOGGING, 50.0),
        (0, 1, 1, 2, LOGGING, 120.0), (0, 1, 1, 3, BASE, 200.0),
        (0, 2, 2, 4, BASE, 100.0), (0, 2, 2, 5, LOGGING, 70.0),
    ])


def test_log_ratios_by_hand():
    lr = ss.window_log_ratios(three_blocks(), BASE)
    assert list(lr["window"]) == [1, 2, 5]
    assert lr["log_ratio"].to_numpy() == pytest.approx(np.log([0.5, 0.6, 0.7]))


def test_log_ratio_uses_the_mean_log_of_the_units_baselines_and_drops_units_without_one():
    w = frame([
        (0, 0, 0, 0, BASE, 100.0), (0, 0, 0, 1, LOGGING, 50.0), (0, 0, 0, 2, BASE, 400.0),
        (0, 1, 1, 3, LOGGING, 80.0), (0, 1, 1, 4, AA, 90.0),  # unit 1 has no baseline window
    ])
    lr = ss.window_log_ratios(w, BASE)
    assert list(lr["window"]) == [1]
    assert lr["log_ratio"].iloc[0] == pytest.approx(math.log(50) - (math.log(100) + math.log(400)) / 2)


def test_arm_ratio_by_hand_with_maxlags_0():
    # y = log(0.5, 0.6, 0.7); maxlags 0 with the n/(n-1) factor is the ordinary standard error s/sqrt(n);
    # with maxlags 0 the critical value is t(2) = 4.302653.
    y = np.log([0.5, 0.6, 0.7])
    m = y.mean()
    se = math.sqrt(((y - m) ** 2).sum() / 2 / 3)
    r = ss.arm_ratios(three_blocks(), BASE, maxlags=0).set_index("arm").loc[LOGGING]
    assert r["ratio"] == pytest.approx(math.exp(m))
    assert r["ratio_ci_low"] == pytest.approx(math.exp(m - 4.302653 * se), rel=1e-6)
    assert r["ratio_ci_high"] == pytest.approx(math.exp(m + 4.302653 * se), rel=1e-6)
    assert r["halfwidth"] == pytest.approx((r["ratio_ci_high"] - r["ratio_ci_low"]) / (2 * r["ratio"]))
    assert (r["n_windows"], r["n_loads"]) == (3, 1)
    assert r["loads"][0]["se"] == pytest.approx(se) and r["loads"][0]["df"] == 2
    assert "single load" in r["method"] and "maxlags 0" in r["method"]


def test_arm_ratio_by_hand_with_the_newey_west_rule():
    # n = 3: maxlags floor(4 (0.03)^(2/9)) = 1. Bartlett: S = g0 + 2 (1/2) g1, g_j = sum e_t e_{t-j} / n;
    # var = S / n * n/(n-1). Critical value: max(t(2), fixed-b at b = 2/3) = t(2).
    y = np.log([0.5, 0.6, 0.7])
    e = y - y.mean()
    s = (e @ e) / 3 + (e[1:] @ e[:-1]) / 3
    se = math.sqrt(s / 3 * 3 / 2)
    r = ss.arm_ratios(three_blocks(), BASE).set_index("arm").loc[LOGGING]
    assert r["loads"][0]["maxlags"] == 1
    assert r["loads"][0]["se"] == pytest.approx(se)
    assert math.log(r["ratio_ci_high"]) - y.mean() == pytest.approx(4.302653 * se, rel=1e-6)


def test_one_window_gives_no_interval_and_no_load_gives_nan():
    w = frame([(0, 0, 0, 0, BASE, 100.0), (0, 0, 0, 1, LOGGING, 50.0), (0, 0, 0, 2, AA, 90.0),
               (1, 0, 0, 0, BASE, 100.0), (1, 0, 0, 1, LOGGING, 60.0)])
    r = ss.arm_ratios(w, BASE).set_index("arm")
    for arm in (LOGGING, AA):  # n = 1 per load: no load is usable
        assert math.isnan(r.loc[arm, "ratio"]) and math.isnan(r.loc[arm, "ratio_ci_low"])
        assert (r.loc[arm, "n_windows"], r.loc[arm, "n_loads"]) == (0, 0)
    assert ss.relative_halfwidths(w, BASE) == {LOGGING: math.inf, AA: math.inf}


def test_a_half_width_past_the_float_range_is_infinite_not_an_error():
    """A running estimate over a few windows, one of them near zero throughput (a switch's stall): the log-scale
    half-width passes exp's range; the ratio's upper end is inf, and nothing raises (a progress line read it, and a
    study ended in OverflowError, 2026-11-25)."""
    w = frame([(0, 0, 0, 0, BASE, 100.0), (0, 0, 0, 1, LOGGING, 50.0),
               (0, 1, 1, 2, BASE, 1e300), (0, 1, 1, 3, LOGGING, 1e-300)])
    r = ss.arm_ratios(w, BASE).set_index("arm").loc[LOGGING]
    assert r["ratio_ci_high"] == math.inf and r["halfwidth"] == math.inf and r["ratio_ci_low"] >= 0


def test_zero_spread_is_a_point():
    rows = [(load, b, b, 2 * b + k, arm, tps) for load in (0, 1) for b in range(4)
            for k, (arm, tps) in enumerate([(BASE, 100.0 + b), (LOGGING, 0.6 * (100.0 + b))])]
    r = ss.arm_ratios(frame(rows), BASE).set_index("arm").loc[LOGGING]
    assert r["ratio"] == pytest.approx(0.6)
    # (the log-ratios agree to rounding, so the width is zero to rounding)
    assert r["ratio_ci_low"] == pytest.approx(0.6) and r["ratio_ci_high"] == pytest.approx(0.6)
    assert r["halfwidth"] < 1e-12 and r["n_loads"] == 2
    assert ss.relative_halfwidths(frame(rows), BASE)[LOGGING] < 1e-12
    exact = frame([(0, 0, 0, 0, BASE, 100.0), (0, 0, 0, 1, LOGGING, 60.0),
                   (0, 1, 1, 2, BASE, 100.0), (0, 1, 1, 3, LOGGING, 60.0)])
    e = ss.arm_ratios(exact, BASE).set_index("arm").loc[LOGGING]
    assert e["ratio_ci_low"] == e["ratio"] == e["ratio_ci_high"] and e["halfwidth"] == 0.0


def test_two_loads_are_combined_and_their_spread_widens_the_interval():
    rng = np.random.default_rng(7)
    w = simulate(rng, tau=0.0)
    one = ss.arm_ratios(w[w["load"] == 0], BASE).set_index("arm").loc[LOGGING]
    both = ss.arm_ratios(w, BASE).set_index("arm").loc[LOGGING]
    assert both["n_loads"] == 2 and "random effect" in both["method"] and both["halfwidth"] < one["halfwidth"]
    shifted = w.assign(tps=np.where((w["load"] == 1) & (w["arm"] == LOGGING), w["tps"] * 1.3, w["tps"]))
    wide = ss.arm_ratios(shifted, BASE).set_index("arm").loc[LOGGING]
    assert wide["tau2"] > 0 and wide["halfwidth"] > 2 * both["halfwidth"]


def test_balanced_loads_take_the_variance_of_their_means_by_hand():
    # two loads of three log-ratios each; the loads differ more than their windows: MS_b / N with k - 1 = 1 df
    y = [np.array([0.10, 0.12, 0.14]), np.array([0.30, 0.32, 0.34])]
    mean, low, high, sigma_b2, df = ss._pooled(y, 0.95)
    ms_b = 3 * ((0.12 - 0.22) ** 2 + (0.32 - 0.22) ** 2) / 1  # n * sum (load mean - grand mean)^2 / (k - 1)
    ms_w = (2 * 0.02 ** 2 * 2) / 4                              # sum of squares within / (N - k)
    half = 12.706204736174707 * math.sqrt(ms_b / 6)             # t(0.975, 1)
    assert mean == pytest.approx(0.22) and df == pytest.approx(1.0)
    assert (low, high) == pytest.approx((0.22 - half, 0.22 + half))
    assert sigma_b2 == pytest.approx((ms_b - ms_w) / 3)


def test_one_load_with_a_tiny_autocorrelation_robust_error_does_not_decide():
    """The A/A control of the committed run (2026-11-24, 4 clients): three loads of six within-block log-ratios.
    The loads' means are 0.023, -0.080 and 0.047 (all windows: -0.003); a per-load Newey-West error of 0.014 on
    the second load made an inverse-variance mean of -0.072 with an interval excluding 0."""
    lr = [[0.127589, 0.430256, 0.002830, -0.280526, 0.087901, -0.229945],
          [-0.102445, -0.083912, 0.021315, -0.198632, -0.090658, -0.024811],
          [0.247403, 0.028525, 0.167218, -0.004893, -0.056531, -0.100429]]
    rows = [{"load": k, "block": b, "unit": b, "window": 2 * b + i, "arm": arm, "tps": math.exp(v) if i else 1.0}
            for k, ys in enumerate(lr) for b, y in enumerate(ys) for i, (arm, v) in enumerate([(BASE, 0), ("again", y)])]
    e = ss.arm_ratios(pd.DataFrame(rows), BASE).set_index("arm").loc["again"]
    assert math.log(e["ratio"]) == pytest.approx(np.mean(lr))
    assert e["ratio_ci_low"] < 1 < e["ratio_ci_high"]


def test_several_clients_levels_are_refused():
    w = three_blocks().assign(clients=[1, 1, 1, 2, 2, 2])
    with pytest.raises(ValueError, match="clients"):
        ss.arm_ratios(w, BASE)


# -- coverage ------------------------------------------------------------------------------------------------

REPLICATES = 600  # Monte-Carlo se of a coverage near 0.95: 0.009


@pytest.mark.parametrize("layout, phi, window_s, guard_s", [
    ("permutation", 0.5, 5, 1), ("permutation", 0.8, 6, 2), ("paired", 0.5, 4, 1), ("paired", 0.8, 5, 2)])
def test_coverage_of_the_95_interval(layout, phi, window_s, guard_s):
    rng = np.random.default_rng(20240 + int(phi * 10) + 100 * (layout == "paired"))
    hits = {arm: 0 for arm in TRUE_RATIO}
    for _ in range(REPLICATES):
        r = ss.arm_ratios(simulate(rng, layout, phi, window_s=window_s, guard_s=guard_s), BASE)
        for arm, lo, hi in zip(r["arm"], r["ratio_ci_low"], r["ratio_ci_high"]):
            hits[arm] += lo <= TRUE_RATIO[arm] <= hi
    coverage = {arm: h / REPLICATES for arm, h in hits.items()}
    assert all(0.92 <= c <= 0.98 for c in coverage.values()), coverage


# -- carryover -----------------------------------------------------------------------------------------------

def profile_of(switch_cost, guard_s, seed):
    rng = np.random.default_rng(seed)
    _, sec = simulate(rng, blocks=20, window_s=5, guard_s=guard_s, switch_cost=switch_cost, seconds=True)
    return ss.carryover(sec, guard_s)


@pytest.mark.parametrize("guard_s", [1, 0])
def test_a_first_second_switch_cost_calls_for_a_guard_of_one(guard_s):
    prof = profile_of({LOGGING: 0.7}, guard_s, seed=11)
    into = prof[(prof["transition"] == f"into {LOGGING}") & (prof["offset_s"] == 0)].iloc[0]
    # 40 windows of syslog, less one that opened its load; with no measured guard the slow first second is
    # part of the reference, so the dip looks smaller than 30 %
    assert into["ci_high"] < math.log(0.7) + 0.1 and into["n"] >= 38
    assert set(prof["transition"]) == {f"into {a}" for a in (BASE, AA, LOGGING)} | {ss.ANY_SWITCH}
    assert ss.guard_needed(prof, max_guard=4) == 1


def test_no_carryover_needs_no_guard():
    prof = profile_of(None, 1, seed=12)
    anyp = prof[prof["transition"] == ss.ANY_SWITCH]
    assert list(anyp["offset_s"]) == [0, 1, 2, 3, 4]
    assert ss.guard_needed(prof, max_guard=4) == 0


def test_guard_needed_by_hand():
    prof = pd.DataFrame({"transition": ss.ANY_SWITCH, "offset_s": [0, 1, 2, 3], "mean": [-0.3, -0.1, 0.0, 0.0],
                         "ci_low": 0.0, "ci_high": 0.0, "se": 0.01, "n": 50})
    assert ss.guard_needed(prof, max_guard=3) == 2
    assert ss.guard_needed(prof, max_guard=1) == 2  # none up to max_guard: max_guard + 1
    assert ss.guard_needed(prof.assign(mean=0.0), max_guard=3) == 0


def test_carryover_deviation_by_hand():
    sec = pd.DataFrame({"load": 0, "window": [1, 1, 1], "arm": LOGGING, "prev_arm": BASE, "offset_s": [0, 1, 2],
                        "tps": [50.0, 100.0, 400.0]})
    prof = ss.carryover(sec, guard_s=1).set_index(["transition", "offset_s"])
    ref = (math.log(100) + math.log(400)) / 2
    assert prof.loc[(f"into {LOGGING}", 0), "mean"] == pytest.approx(math.log(50) - ref)
    assert prof.loc[(ss.ANY_SWITCH, 2), "n"] == 1 and math.isnan(prof.loc[(ss.ANY_SWITCH, 2), "ci_low"])


@pytest.mark.parametrize("effect, detected", [(0.95, True), (1.0, False)])
def test_same_vs_changed(effect, detected):
    rng = np.random.default_rng(31)
    w = simulate(rng, blocks=30, after_logging=effect)
    t = ss.same_vs_changed(w, BASE, AA)
    assert t["n_same"] > 20 and t["n_changed"] > 20
    assert t["ci_low"] < t["difference"] < t["ci_high"]
    assert (t["ci_high"] < 0) is detected
    assert t["ci_low"] <= math.log(effect) <= t["ci_high"]
    assert "fixed effects" in t["method"]


# A schedule whose A/A windows follow the logging arm three times as often as its baseline windows do: a
# carryover into the baseline's settings then biases the within-unit A/A ratio by half its size.
UNBALANCED = [[LOGGING, AA, BASE]] * 3 + [[LOGGING, BASE, AA]]


@pytest.mark.parametrize("effect", [0.95, 1.0])
def test_a_previous_arm_term_recovers_a_known_carryover_and_the_aa(effect):
    rng = np.random.default_rng(41)
    w = simulate(rng, blocks=48, loads=3, sd=0.03, after_logging=effect, orders=UNBALANCED)
    plain = ss.arm_ratios(w, BASE).set_index("arm").loc[AA]
    t = ss.previous_arm_term(w, BASE, AA)
    # 3 of 4 A/A windows after the logging arm, 1 of 4 baseline windows: 36 and 12 per load of 48 blocks
    assert (t["n_aa"], t["aa_after_other"], t["n_base"], t["base_after_other"]) == (144, 108, 144, 36)
    assert (t["plain_ratio"], t["plain_low"], t["plain_high"]) == (
        plain["ratio"], plain["ratio_ci_low"], plain["ratio_ci_high"])
    assert t["carryover_low"] <= math.log(effect) <= t["carryover_high"]
    assert t["aa_low"] <= 1 <= t["aa_high"]
    if effect < 1:
        # the estimator sees the carryover as a biased A/A (half of it: 3/4 - 1/4 of the windows), the term
        # finds it and the A/A without it holds 1 again
        assert t["plain_high"] < 1 and t["carryover_high"] < 0
        assert abs(math.log(t["aa_ratio"])) < abs(math.log(t["plain_ratio"])) / 3
    else:
        assert t["carryover_low"] <= 0 <= t["carryover_high"]
    assert "after another arm" in t["method"]


def test_a_previous_arm_term_that_is_the_aa_label_itself_gives_no_estimate():
    # every A/A window follows the logging arm and every baseline window its A/A control: what came before and
    # the A/A label cannot be told apart, so the level says nothing about carryover (and the plain ratio stands)
    w = simulate(np.random.default_rng(3), blocks=8, loads=2, orders=[[LOGGING, AA, BASE]])
    t = ss.previous_arm_term(w, BASE, AA)
    assert (t["aa_after_other"], t["base_after_other"]) == (t["n_aa"], 0)
    assert math.isnan(t["aa_ratio"]) and math.isnan(t["carryover"])
    assert t["plain_low"] <= t["plain_ratio"] <= t["plain_high"]


def test_fixed_b_cubic_matches_the_simulated_fixed_b_limit():
    """The Kiefer-Vogelsang cubic (typed from the paper, so checked here): the fixed-b limit of the Bartlett
    t statistic, simulated as KV do (normalised partial sums of T iid normals, the HAC variance with bandwidth
    M = bT, weights 1 - j/M), against the cubic at each two-sided level hac_critical serves. 20,000 replications
    of T = 1,000 put the simulated quantile within ~1-2 % (Monte Carlo and finite-T error); the cubic itself is
    KV's fit, within ~1 % of their table. A wrong coefficient moves it by far more than the 4 % allowed."""
    rng = np.random.default_rng(20051130)
    T, R, chunk = 1000, 20000, 500
    grid = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
    t_stats: dict[float, list] = {b: [] for b in grid}
    for _ in range(R // chunk):
        u = rng.standard_normal((chunk, T))
        m = u.mean(axis=1)
        v = u - m[:, None]
        f = np.fft.rfft(v, n=2 * T, axis=1)
        acov = np.fft.irfft(f * np.conj(f), axis=1)[:, :T] / T
        for b in grid:
            M = int(round(b * T))
            w = 1 - np.arange(1, M) / M
            omega = acov[:, 0] + 2 * (acov[:, 1:M] * w).sum(axis=1)
            t_stats[b].append(np.sqrt(T) * m / np.sqrt(omega))
    for b in grid:
        s = np.abs(np.concatenate(t_stats[b]))
        for confidence in (0.8, 0.9, 0.95, 0.98):
            simulated = float(np.quantile(s, confidence))
            # hac_critical's cubic at this b: maxlags + 1 = bandwidth, n chosen so that (maxlags+1)/n = b
            n = 1000
            cubic = ss.hac_critical(n, int(round(b * n)) - 1, confidence)
            assert cubic == pytest.approx(simulated, rel=0.04), (b, confidence, cubic, simulated)
