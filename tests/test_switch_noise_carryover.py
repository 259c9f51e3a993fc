"""Per-second noise inside short windows without the √((m−1)/m) bias, and carryover into the next window
(switchstats.within_window_noise, carryover_by_offset, guard_from_comparison): synthetic series with a known σ,
ρ and carryover, made here for these tests only (our own estimators' logic, no server)."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.signal import lfilter

from logbench.measure import switchstats as ss

BASE, AA, LOGGING = "none", "none_again", "stderr"


def windows_of(rng, sigma: float, rho: float, m: int, n_windows: int, level_sd: float = 0.1):
    """log tps of n_windows windows of m seconds of an AR(1) with stationary sd sigma and lag-1 rho, each window
    on its own random level (the drift between windows the estimator must not count)."""
    e = rng.normal(0, sigma * math.sqrt(1 - rho * rho), (n_windows, m))
    e[:, 0] = rng.normal(0, sigma, n_windows)
    x = lfilter([1.0], [1.0, -rho], e, axis=1) + rng.normal(0, level_sd, (n_windows, 1))
    return x.ravel(), np.repeat(np.arange(n_windows), m)


@pytest.mark.parametrize("m", [3, 4])
def test_white_noise_sigma_has_no_sqrt_m_minus_1_over_m_bias(m):
    rng = np.random.default_rng(7)
    x, w = windows_of(rng, 0.05, 0.0, m, 6000)
    got = ss.within_window_noise(x, w, model="white")
    naive = float(np.concatenate([g - g.mean() for g in x.reshape(-1, m)]).std(ddof=1))
    assert got["df"] == 6000 * (m - 1) and got["windows"] == 6000 and got["rho"] == 0.0
    assert got["sigma_per_s"] == pytest.approx(0.05, rel=0.02)
    # what the floor had before: the sd of the deviations, short by sqrt((m - 1)/m)
    assert naive == pytest.approx(0.05 * math.sqrt((m - 1) / m), rel=0.02)


@pytest.mark.parametrize("rho", [-0.3, 0.0, 0.4, 0.7])
def test_ar1_fit_recovers_sigma_and_rho_from_three_second_windows(rho):
    rng = np.random.default_rng(int(100 * (rho + 1)))
    x, w = windows_of(rng, 0.06, rho, 3, 20000)
    got = ss.within_window_noise(x, w, model="ar1")
    assert got["rho"] == pytest.approx(rho, abs=0.06)
    assert got["sigma_per_s"] == pytest.approx(0.06, rel=0.06)
    # the deviations' own lag-1 correlation is pulled towards -1/(m-1) = -0.5: why the fit is needed
    d = np.concatenate([g - g.mean() for g in x.reshape(-1, 3)]).reshape(-1, 3)
    naive = float((d[:, 1:] * d[:, :-1]).sum() / (d * d).sum())
    assert naive < rho - 0.1 and abs(naive - rho) > abs(got["rho"] - rho) + 0.05


def test_within_window_noise_by_hand():
    # two windows of three seconds: deviations (-1, 0, 1) and (-2, 0, 2): S0 = 2 + 8 = 10 on 2 + 2 df
    got = ss.within_window_noise([1.0, 2.0, 3.0, 5.0, 7.0, 9.0], [0, 0, 0, 1, 1, 1], model="white")
    assert got["sigma_per_s"] == pytest.approx(math.sqrt(10 / 4)) and got["df"] == 4
    # a window of one second carries nothing; a constant series has no noise
    one = ss.within_window_noise([1.0, 2.0, 3.0, 4.0], [0, 0, 0, 1], model="white")
    assert one["windows"] == 1 and one["df"] == 2
    assert ss.within_window_noise([2.0] * 6, [0, 0, 0, 1, 1, 1])["sigma_per_s"] == 0.0
    with pytest.raises(ValueError, match="model"):
        ss.within_window_noise([1.0, 2.0], [0, 0], model="ar2")


def test_the_floor_from_noise_matches_predicted_halfwidth_on_the_same_sigma_and_rho():
    # halfwidth_from_noise is predicted_halfwidth's second half: same sigma and rho, same answer
    rng = np.random.default_rng(3)
    x = rng.normal(0, 0.05, 400)
    p = ss.predicted_halfwidth(x, 3, 4, "permutation")
    q = ss.halfwidth_from_noise(p["sigma_per_s"], p["rho"], 3, 4)
    assert q["halfwidth"] == pytest.approx(p["halfwidth"])


def switchback_seconds(rng, carry: list[float], *, loads=2, blocks=40, window_s=4, sd=0.03):
    """Per-second rows of loads of permutation blocks (none, stderr, none_again); a baseline or A/A window after
    a stderr window runs carry[k] slower (log) at its second k: the carryover under test."""
    rows = []
    for load in range(loads):
        prev, w = None, 0
        for _ in range(blocks):
            for arm in rng.permutation([BASE, LOGGING, AA]):
                arm = str(arm)
                level = math.log(1000) + (math.log(0.7) if arm == LOGGING else 0.0)
                for k in range(window_s):
                    x = level + rng.normal(0, sd)
                    if prev == LOGGING and arm in (BASE, AA):
                        x += carry[k]
                    rows.append({"load": load, "window": w, "arm": arm, "prev_arm": prev, "offset_s": k,
                                 "tps": math.exp(x)})
                prev, w = arm, w + 1
    return pd.DataFrame(rows)


def test_carryover_through_the_whole_next_window_is_found_and_no_guard_fixes_it():
    # the case: after a stderr window the baseline's seconds stay slow for the whole next window
    sec = switchback_seconds(np.random.default_rng(11), [-0.05, -0.04, -0.04, -0.04])
    prof = ss.carryover_by_offset(sec, BASE, AA)
    assert list(prof["offset_s"]) == [0, 1, 2, 3]
    assert (prof["adj_ci_high"] < 0).all()
    assert ((prof["adj_ci_low"] <= prof["ci_low"]) & (prof["ci_high"] <= prof["adj_ci_high"])).all()
    v = ss.guard_from_comparison(prof)
    assert v["verdict"] == "outlasts" and v["guard_s"] is None
    assert v["last_difference"] == pytest.approx(-0.04, abs=0.015)
    # what the old profile sees: each second against its own window's later seconds, so nothing after second 0
    old = ss.carryover(sec.assign(clients=1), guard_s=1)
    assert ss.guard_needed(old, max_guard=3) <= 1


def test_carryover_in_the_first_seconds_sets_the_guard():
    sec = switchback_seconds(np.random.default_rng(12), [-0.3, -0.15, 0.0, 0.0])
    v = ss.guard_from_comparison(ss.carryover_by_offset(sec, BASE, AA))
    assert v["verdict"] == "guard" and v["guard_s"] == 2


def test_no_carryover_is_unresolved_with_its_resolution():
    sec = switchback_seconds(np.random.default_rng(13), [0.0, 0.0, 0.0, 0.0])
    v = ss.guard_from_comparison(ss.carryover_by_offset(sec, BASE, AA))
    assert v["verdict"] == "unresolved" and v["guard_s"] == 0
    assert 0 < v["resolution"] < 0.03


def test_guard_from_comparison_by_hand():
    def prof(lows, highs):
        return pd.DataFrame({"offset_s": range(len(lows)), "difference": [(a + b) / 2 for a, b in zip(lows, highs)],
                             "adj_ci_low": lows, "adj_ci_high": highs})

    assert ss.guard_from_comparison(prof([-3, -2, -1], [-1, 1, 1]))["guard_s"] == 1
    assert ss.guard_from_comparison(prof([-3, -2, -1], [-1, -1, 1]))["guard_s"] == 2
    out = ss.guard_from_comparison(prof([-3, -2, -1], [1, 1, -0.5]))
    assert out["verdict"] == "outlasts" and out["last_difference"] == pytest.approx(-0.75)
    assert ss.guard_from_comparison(prof([], []))["verdict"] == "unresolved"
