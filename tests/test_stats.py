"""Statistics on hand-computed cases."""

import math

import pandas as pd
import pytest

from logbench.base import stats


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


def test_median_ci_is_seeded_and_undefined_for_one_value():
    e = stats.median_ci([1.0, 2.0, 3.0, 4.0, 100.0])
    assert (e.value, e.n) == (3.0, 5) and e.low <= 3.0 <= e.high and e == stats.median_ci([1.0, 2.0, 3.0, 4.0, 100.0])
    one = stats.median_ci([7.0])
    assert one.value == 7.0 and math.isnan(one.low) and math.isnan(one.high)


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


def _aa_runs(shift: float) -> pd.DataFrame:
    rows = []
    for n in (1, 4):
        for i, v in enumerate([100.0, 102.0, 98.0, 101.0, 99.0]):
            rows.append({"configuration": "none", "clients": n, "tps": v})
            rows.append({"configuration": "none_again", "clients": n, "tps": v * (shift if n == 4 else 1.0) + (i % 2)})
    return pd.DataFrame(rows)


def test_summarise_refuses_runs_of_two_environments():
    from logbench.base.errors import EnvironmentMismatch

    runs = _aa_runs(1.0)
    one = stats.summarise(runs.assign(env_id="a"), by=["configuration", "clients"], baseline="none")
    assert one.equals(stats.summarise(runs, by=["configuration", "clients"], baseline="none"))
    two = runs.assign(env_id=["a", "b"] * (len(runs) // 2))
    with pytest.raises(EnvironmentMismatch, match="2 environments"):
        stats.summarise(two, by=["configuration", "clients"], baseline="none")


def test_resolution_is_the_aa_ratio_per_clients_level():
    s = stats.summarise(_aa_runs(1.0), by=["configuration", "clients"], baseline="none")
    res = stats.resolution(s, "none").set_index("clients")
    assert list(res.index) == [1, 4]
    for n in (1, 4):
        r = stats.ratio_ci(_aa_runs(1.0).query("configuration == 'none_again' and clients == @n")["tps"],
                           _aa_runs(1.0).query("configuration == 'none' and clients == @n")["tps"])
        assert res.loc[n, "aa_ratio"] == pytest.approx(r.value)
        assert res.loc[n, "half_width"] == pytest.approx(r.half_width)
        assert res.loc[n, "relative_half_width"] == pytest.approx(r.half_width / r.value)
        assert res.loc[n, "contains_1"] and res.loc[n, "warning"] == ""
        assert res.loc[n, "n"] == 5


def test_resolution_warns_when_the_aa_ci_excludes_1():
    s = stats.summarise(_aa_runs(1.2), by=["configuration", "clients"], baseline="none")
    res = stats.resolution(s, "none").set_index("clients")
    assert res.loc[1, "contains_1"] and not res.loc[4, "contains_1"]
    assert res.loc[4, "warning"].startswith("A/A check failed at clients 4: none_again/none = 1.2")


def test_summary_reports_the_relative_halfwidth():
    s = stats.summarise(_aa_runs(1.0), by=["configuration", "clients"], baseline="none").set_index(["configuration", "clients"])
    assert math.isnan(s.loc[("none", 1), "ratio_halfwidth"])  # the baseline has no interval of its own
    row = s.loc[("none_again", 1)]
    assert row["ratio_halfwidth"] == pytest.approx((row["ratio_ci_high"] - row["ratio_ci_low"]) / 2 / row["ratio"])


# -- the block design's ratio within blocks --------------------------------------------------------------------

def _blocks(values: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame([{"configuration": c, "clients": 1, "repeat": k, "tps": v}
                         for c, vals in values.items() for k, v in enumerate(vals)])


def test_a_paired_ratio_is_the_mean_log_ratio_with_a_t_interval_by_hand():
    from scipy import stats as sps

    from logbench.base.stats import paired_ratio_ci

    r = _blocks({"a": [110.0, 90.0, 105.0], "none": [100.0, 100.0, 100.0]})
    e = paired_ratio_ci(r[r.configuration == "a"], r[r.configuration == "none"], "tps", "repeat")
    logs = [math.log(1.1), math.log(0.9), math.log(1.05)]
    m = sum(logs) / 3
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / 2)
    half = sps.t.ppf(0.975, 2) * sd / math.sqrt(3)
    assert e.n == 3
    assert e.value == pytest.approx(math.exp(m))
    assert (e.low, e.high) == (pytest.approx(math.exp(m - half)), pytest.approx(math.exp(m + half)))


def test_drift_that_moves_whole_blocks_leaves_the_paired_ratio_exact():
    """Every block at another speed (the host's drift), the configuration always 0.8 of its block's baseline:
    within blocks the ratio is exact, where the independent means' interval is wide."""
    from logbench.base.stats import INDEPENDENT, PAIRED, cell_ratio

    speed = [100.0, 140.0, 70.0, 120.0]
    r = _blocks({"a": [0.8 * s for s in speed], "none": speed})
    a, b = r[r.configuration == "a"], r[r.configuration == "none"]
    e, how = cell_ratio(a, b, "tps", "repeat")
    assert how == PAIRED and (e.value, e.low, e.high) == (pytest.approx(0.8), pytest.approx(0.8), pytest.approx(0.8))
    f, how = cell_ratio(a, b, "tps", None)
    assert how == INDEPENDENT and f.value == pytest.approx(0.8) and f.high - f.low > 0.3


def test_runs_that_cannot_be_paired_fall_back_to_fieller():
    from logbench.base.stats import INDEPENDENT, cell_ratio, paired_ratio_ci

    one = _blocks({"a": [90.0, 95.0], "none": [100.0]})  # one pair only
    assert paired_ratio_ci(one[one.configuration == "a"], one[one.configuration == "none"], "tps", "repeat") is None
    assert cell_ratio(one[one.configuration == "a"], one[one.configuration == "none"], "tps", "repeat")[1] == INDEPENDENT
    # three runs of each side, but only block 0 holds both: one block in common is no pair to spare
    apart = _blocks({"a": [90.0, 95.0, 93.0], "none": [100.0, 98.0, 99.0]}).assign(repeat=[0, 0, 1, 0, 2, 2])
    a, b = apart[apart.configuration == "a"], apart[apart.configuration == "none"]
    assert paired_ratio_ci(a, b, "tps", "repeat") is None
    assert cell_ratio(a, b, "tps", "repeat")[1] == INDEPENDENT


def _layout_blocks() -> pd.DataFrame:
    """Three blocks of a declared layout with baseline_runs=2, aa_runs=2: a and its two baselines per block."""
    rows = {0: {"a": [90.0], "none": [100.0, 104.0], "none_again": [101.0, 99.0]},
            1: {"a": [80.0], "none": [90.0, 86.0], "none_again": [88.0, 92.0]},
            2: {"a": [86.0], "none": [95.0, 97.0], "none_again": [96.0, 93.0]}}
    return pd.DataFrame([{"configuration": c, "clients": 1, "repeat": k, "tps": v}
                         for k, block in rows.items() for c, vals in block.items() for v in vals])


def test_a_block_with_two_baseline_runs_pairs_with_their_geometric_mean_on_the_blocks_degrees_of_freedom():
    """The block's baseline is the geometric mean of its two runs; one log-ratio per block; t on blocks - 1 =
    2 degrees of freedom (the runs of a block share its drift: they are not 6 independent pairs)."""
    from scipy import stats as sps

    from logbench.base.stats import PAIRED, cell_ratio

    r = _layout_blocks()
    e, how = cell_ratio(r[r.configuration == "a"], r[r.configuration == "none"], "tps", "repeat")
    logs = [math.log(90 / math.sqrt(100 * 104)), math.log(80 / math.sqrt(90 * 86)), math.log(86 / math.sqrt(95 * 97))]
    m = sum(logs) / 3
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / 2)
    half = sps.t.ppf(0.975, 2) * sd / math.sqrt(3)
    assert how == PAIRED and e.n == 3
    assert e.value == pytest.approx(math.exp(m), rel=1e-12)
    assert (e.low, e.high) == (pytest.approx(math.exp(m - half), rel=1e-12), pytest.approx(math.exp(m + half), rel=1e-12))


def test_the_aa_control_repeated_within_blocks_pairs_both_sides_by_their_block_means():
    from scipy import stats as sps

    from logbench.base.stats import PAIRED, cell_ratio

    r = _layout_blocks()
    e, how = cell_ratio(r[r.configuration == "none_again"], r[r.configuration == "none"], "tps", "repeat")
    logs = [0.5 * (math.log(101 * 99) - math.log(100 * 104)), 0.5 * (math.log(88 * 92) - math.log(90 * 86)),
            0.5 * (math.log(96 * 93) - math.log(95 * 97))]
    m = sum(logs) / 3
    half = sps.t.ppf(0.975, 2) * math.sqrt(sum((x - m) ** 2 for x in logs) / 2) / math.sqrt(3)
    assert how == PAIRED and e.n == 3
    assert (e.value, e.low, e.high) == (pytest.approx(math.exp(m), rel=1e-12), pytest.approx(math.exp(m - half), rel=1e-12),
                                        pytest.approx(math.exp(m + half), rel=1e-12))


def test_whole_block_drift_with_repeated_baselines_leaves_the_ratio_exact():
    """Each block at its own speed, the baseline's two runs equal within it: the ratio is exact within blocks."""
    from logbench.base.stats import PAIRED, cell_ratio

    speed = [100.0, 140.0, 70.0, 120.0]
    r = pd.DataFrame([{"configuration": c, "clients": 1, "repeat": k, "tps": f * s}
                      for k, s in enumerate(speed) for c, f in (("a", 0.8), ("none", 1.0), ("none", 1.0))])
    e, how = cell_ratio(r[r.configuration == "a"], r[r.configuration == "none"], "tps", "repeat")
    assert how == PAIRED and e.n == 4
    assert (e.value, e.low, e.high) == (pytest.approx(0.8), pytest.approx(0.8), pytest.approx(0.8))


def test_a_summary_of_a_layout_with_two_baseline_runs_has_per_cell_intervals():
    from logbench.base.stats import PAIRED, summarise

    s = summarise(_layout_blocks(), by=["configuration", "clients"], baseline="none", block="repeat")
    s = s.set_index("configuration")
    assert s.loc["a", "ratio_method"] == PAIRED and s.loc["none_again", "ratio_method"] == PAIRED
    assert s.loc["a", "ratio_ci_low"] < s.loc["a", "ratio"] < s.loc["a", "ratio_ci_high"]
    assert s.loc["none", "n"] == 6 and s.loc["a", "baseline_n"] == 6


def test_summarise_says_how_each_ratio_was_made():
    from logbench.base.stats import PAIRED, summarise

    r = _blocks({"a": [90.0, 80.0, 85.0], "none": [100.0, 90.0, 95.0], "none_again": [101.0, 88.0, 96.0]})
    s = summarise(r, by=["configuration", "clients"], baseline="none", block="repeat").set_index("configuration")
    assert s.loc["a", "ratio_method"] == PAIRED and s.loc["none", "ratio_method"] == ""
    assert s.loc["a", "ratio"] == pytest.approx(math.exp((math.log(0.9) + math.log(80 / 90) + math.log(85 / 95)) / 3))
    assert "ratio_method" not in summarise(r, by=["configuration", "clients"], baseline="none").columns


# -- the A/A rule: a ratio is an effect only beyond its level's A/A spread ------------------------------------

def test_the_aa_reach_is_how_far_its_interval_lands_from_1_in_log_terms():
    # [0.8, 1.1]: |ln 0.8| = 0.223144 > ln 1.1 = 0.095310
    assert stats.aa_reach(0.8, 1.1) == pytest.approx(0.223144, abs=1e-6)
    # symmetric in log terms (the paired estimator): |ln ratio| + half-width, ln 1.05 + 0.1 = 0.148790
    assert stats.aa_reach(math.exp(math.log(1.05) - 0.1), math.exp(math.log(1.05) + 0.1)) == pytest.approx(
        0.148790, abs=1e-6)
    assert math.isnan(stats.aa_reach(math.nan, math.nan))  # one run: no interval, no reach
    assert stats.aa_reach(-math.inf, math.inf) == math.inf  # Fieller unbounded: every ratio is within it


def test_an_effect_needs_its_ci_to_exclude_1_and_the_ratio_beyond_the_aa_reach():
    reach = stats.aa_reach(0.8, 1.1)  # 0.223144
    # outside: |ln 0.7| = 0.356675 > 0.223144
    assert stats.effect_reading(0.7, 0.6, 0.8, reach) == stats.EFFECT
    assert stats.effect_reading(1.3, 1.25, 1.35, reach) == stats.EFFECT  # faster beyond it too (an anomaly)
    # inside: the CI [0.80, 0.90] excludes 1, but |ln 0.85| = 0.162519 <= 0.223144
    assert stats.effect_reading(0.85, 0.80, 0.90, reach) == stats.WITHIN_AA
    # exactly at the reach (0.8 = the A/A's low end) is within it
    assert stats.effect_reading(0.8, 0.7, 0.9, reach) == stats.WITHIN_AA
    # a CI touching 1 includes it, whatever the A/A
    assert stats.effect_reading(0.9, 0.81, 1.0, reach) == stats.CI_INCLUDES_1
    assert stats.effect_reading(0.5, 0.2, 1.0, 0.01) == stats.CI_INCLUDES_1
    # no A/A interval at this level: the instrument's spread is unknown, so no effect is read
    assert stats.effect_reading(0.7, 0.6, 0.8, math.nan) == stats.NO_AA
    assert stats.effect_reading(0.9, 0.8, 1.05, math.nan) == stats.CI_INCLUDES_1
    # an unbounded A/A reads nothing as an effect; a ratio without an interval is none
    assert stats.effect_reading(0.1, 0.05, 0.2, math.inf) == stats.WITHIN_AA
    assert stats.effect_reading(0.7, math.nan, math.nan, reach) == stats.NO_CI
    assert stats.effect_note(stats.WITHIN_AA) == stats.WITHIN_AA and stats.effect_note(stats.NO_AA) == stats.NO_AA
    assert stats.effect_note(stats.EFFECT) == stats.effect_note(stats.CI_INCLUDES_1) == ""


def test_effects_reads_every_ratio_against_the_aa_of_its_own_cell_and_level():
    nan = math.nan
    s = pd.DataFrame({
        "regime": ["cpu"] * 6 + ["io"] * 3,
        "configuration": ["off", "log", "off_again", "off", "log", "off_again", "off", "log", "off_again"],
        "clients": [1, 1, 1, 4, 4, 4, 1, 1, 4],
        "n": 3,
        "ratio": [1.0, 0.85, 1.02, 1.0, 0.85, 0.99, 1.0, 0.85, 1.0],
        "ratio_ci_low": [nan, 0.80, 0.95, nan, 0.80, 0.97, nan, 0.80, 0.5],
        "ratio_ci_high": [nan, 0.90, 1.10, nan, 0.90, 1.01, nan, 0.90, 2.0]})
    out = stats.effects(s, "off")
    # cpu at 1: reach ln 1.1 = 0.0953 < |ln 0.85| = 0.1625; cpu at 4: reach |ln 0.97| = 0.0305; io at 1: no A/A
    # (io's A/A is at 4 clients, and cpu's at 1 is another cell's)
    assert list(out["effect"]) == ["", stats.EFFECT, "", "", stats.EFFECT, "", "", stats.NO_AA, ""]
    assert out["aa_reach"].iloc[1] == pytest.approx(math.log(1.1)) and math.isnan(out["aa_reach"].iloc[7])
    # a wide A/A at cpu, 4 clients: the same 0.85 [0.80, 0.90] is within its spread
    s.loc[5, ["ratio", "ratio_ci_low", "ratio_ci_high"]] = [1.0, 0.8, 1.25]
    assert stats.effects(s, "off")["effect"].iloc[4] == stats.WITHIN_AA
