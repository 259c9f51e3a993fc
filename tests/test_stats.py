"""Statistics on hand-computed cases."""

import math

import pandas as pd
import pytest

from logbench import stats


def test_mean_ci_n1_has_no_interval():
    e = stats.mean_ci([5.0])
    assert (e.value, e.n) == (5.0, 1)
    assert math.isnan(e.low) and math.isnan(e.high)


def test_mean_ci_zero_variance_is_a_point():
    e = stats.mean_ci([3.0, 3.0, 3.0])
    assert (e.value, e.low, e.high, e.n) == (3.0, 3.0, 3.0, 3)


def test_mean_ci_student_t_by_hand():
    # mean 2, s = 1, sem = 1/sqrt(3), t(0.975, 2) = 4.302653
    e = stats.mean_ci([1.0, 2.0, 3.0])
    assert e.value == 2.0
    assert e.low == pytest.approx(2 - 4.302653 / math.sqrt(3), abs=1e-6)
    assert e.high == pytest.approx(2 + 4.302653 / math.sqrt(3), abs=1e-6)


def test_mean_ci_ignores_nan():
    assert stats.mean_ci([1.0, float("nan"), 3.0]).n == 2


def test_ratio_ci_exact_denominator_reduces_to_t_interval_of_numerator():
    # y has no spread: g = 0 and Fieller is x's t interval divided by 5; df (Welch) = 1, t = 12.706205
    e = stats.ratio_ci([9.0, 11.0], [5.0, 5.0])
    assert e.value == 2.0
    assert e.low == pytest.approx((10 - 12.706205) / 5, abs=1e-6)
    assert e.high == pytest.approx((10 + 12.706205) / 5, abs=1e-6)


def test_ratio_ci_fieller_by_hand():
    # x: mean 12, var of mean 4/3; y: mean 6, var of mean 1/3; Welch df = 50/17, t = 3.218759,
    # g = t^2 (1/3) / 36 = 0.095930, half = (t/6) sqrt(4/3 (1-g) + 4/3) -> limits (2 -+ half)/(1-g)
    e = stats.ratio_ci([10.0, 12.0, 14.0], [5.0, 6.0, 7.0])
    assert e.value == 2.0
    assert e.low == pytest.approx(1.266752, abs=1e-5)
    assert e.high == pytest.approx(3.157683, abs=1e-5)
    # Fieller's interval is asymmetric around the ratio, unlike the delta method's.
    assert e.high - 2 > 2 - e.low


def test_ratio_ci_unbounded_when_denominator_may_be_zero():
    e = stats.ratio_ci([1.0, 2.0], [-1.0, 1.5])
    assert e.low == -math.inf and e.high == math.inf


def test_ratio_ci_zero_variance_both():
    e = stats.ratio_ci([4.0, 4.0], [2.0, 2.0])
    assert (e.value, e.low, e.high) == (2.0, 2.0, 2.0)


def test_ratio_ci_single_runs_have_no_interval():
    e = stats.ratio_ci([4.0], [2.0])
    assert e.value == 2.0 and math.isnan(e.low)


def test_summarise_ratio_against_baseline_per_clients():
    runs = pd.DataFrame({
        "configuration": ["none", "none", "log", "log", "none", "none", "log", "log"],
        "clients": [1, 1, 1, 1, 4, 4, 4, 4],
        "tps": [100.0, 100.0, 90.0, 90.0, 200.0, 200.0, 100.0, 100.0],
        "log_loss": [float("nan")] * 2 + [0.0, 0.0] + [float("nan")] * 2 + [0.01, 0.03],
    })
    s = stats.summarise(runs, by=["configuration", "clients"], baseline="none", also=("log_loss",)).set_index(
        ["configuration", "clients"])
    assert s.loc[("log", 1), "ratio"] == pytest.approx(0.9)
    assert s.loc[("log", 4), "ratio"] == pytest.approx(0.5)
    assert s.loc[("log", 4), "ratio_ci_low"] == pytest.approx(0.5)  # zero variance both sides
    assert s.loc[("none", 1), "ratio"] == 1.0 and math.isnan(s.loc[("none", 1), "ratio_ci_low"])
    assert s.loc[("log", 4), "log_loss_mean"] == pytest.approx(0.02)
    assert s.loc[("log", 4), "n"] == 2
