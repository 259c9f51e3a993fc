"""The noise study's arithmetic on hand-made series (the runs themselves are exercised by nbval)."""

import math

import numpy as np
import pandas as pd
import pytest

from logbench.base.errors import ParameterError
from logbench.studies import instrument


def _series(values_by_run: dict[int, list[float]], control="hold", clients=1) -> pd.DataFrame:
    rows = [{"control": control, "clients": clients, "position": pos, "second": i + 1, "tps": v}
            for pos, vals in values_by_run.items() for i, v in enumerate(vals)]
    return pd.DataFrame(rows)


def test_cv_by_length_windows_and_values():
    # After skipping 2 s: run 0 steady seconds 10, 30, 10, 30; run 1: 20, 20, 20, 20.
    s = _series({0: [0, 0, 10, 30, 10, 30], 1: [0, 0, 20, 20, 20, 20]})
    cv = instrument.cv_by_length(s, lengths=(1, 2, 4)).set_index("run_length_s")
    assert cv.loc[1, "windows"] == 8 and cv.loc[2, "windows"] == 4 and cv.loc[4, "windows"] == 2
    # 1 s windows: mean 20, sd of (10,30,10,30,20,20,20,20) = sqrt(400/7)
    assert cv.loc[1, "cv"] == pytest.approx(math.sqrt(400 / 7) / 20)
    # 2 s windows all average 20: no spread left
    assert cv.loc[2, "cv"] == 0
    assert cv.loc[1, "cv_ci_low"] < cv.loc[1, "cv"] < cv.loc[1, "cv_ci_high"]


def test_runs_needed_by_hand():
    # CV 3 %, target ±3 %: t(df=2n-2) * sqrt(2) / sqrt(n) <= 1 first holds at n = 9 (t = 2.120 at df 16;
    # at n = 8, t = 2.145 at df 14 gives 1.07).
    assert instrument.runs_needed(0.03, 0.03) == 9
    assert instrument.runs_needed(0.0, 0.03) == 2


def test_autocorrelation_of_alternating_series_is_negative():
    s = _series({0: [0, 0] + [10, 30] * 10})
    acf = instrument.autocorrelation(s, nlags=2).iloc[0]
    assert acf["lag 1"] < -0.9 and acf["lag 2"] > 0.8


def test_bad_input_names_the_parameter():
    with pytest.raises(ParameterError, match="controls"):
        instrument.define(profile="smoke", controls=["hold", "sometimes"])
    with pytest.raises(ParameterError, match="series_s"):
        instrument.define(profile="smoke", series_s=3)


def _row(control, configuration, clients, ratio, low, high, tps):
    return {"control": control, "configuration": configuration, "clients": clients, "n": 5, "tps_mean": tps,
            "tps_ci_low": 0.9 * tps, "tps_ci_high": 1.1 * tps, "ratio": ratio, "ratio_ci_low": low,
            "ratio_ci_high": high}


def test_anomaly_verdict_names_the_idle_state_only_when_the_control_separates_it():
    rows = [_row("free", "none", 1, 1, math.nan, math.nan, 6000), _row("hold", "none", 1, 1, math.nan, math.nan, 24000),
            _row("free", "stderr", 1, 1.1, 0.92, 1.33, 6600), _row("hold", "stderr", 1, 0.65, 0.52, 0.85, 15600)]
    verdict = instrument.anomaly_verdict(pd.DataFrame(rows))
    assert "is the VM's idle state" in verdict and "4 times as fast" in verdict
    # held, logging still faster: not the idle state
    rows[3] = _row("hold", "stderr", 1, 1.3, 1.1, 1.5, 31000)
    assert "does not explain" in instrument.anomaly_verdict(pd.DataFrame(rows))
    # neither separates
    rows[3] = _row("hold", "stderr", 1, 0.95, 0.8, 1.1, 23000)
    assert "undecided" in instrument.anomaly_verdict(pd.DataFrame(rows))


def test_the_verdict_says_what_holding_the_idle_state_did_to_the_baseline_only_as_far_as_it_can_tell():
    rows = [_row("free", "none", 1, 1, math.nan, math.nan, 32510), _row("hold", "none", 1, 1, math.nan, math.nan, 34121),
            _row("free", "stderr", 1, 0.57, 0.41, 0.8, 18000), _row("hold", "stderr", 1, 0.53, 0.38, 0.74, 18000)]
    # the committed run on the Intel Xeon VM: the baselines' intervals overlap, so no "times as fast"
    verdict = instrument.anomaly_verdict(pd.DataFrame(rows), "haltpoll")
    assert "did not move the baseline beyond its 95 % intervals (32,510 → 34,121 tps)" in verdict
    assert "times as fast" not in verdict and "consistent with" not in verdict
    # and where the machine has no cpuidle driver, the hold had nothing to act on
    verdict = instrument.anomaly_verdict(pd.DataFrame(rows), "none")
    assert "no cpuidle driver" in verdict and "not tested by this run" in verdict
    runs = pd.DataFrame({"cpuidle_driver": ["none", "none", "haltpoll"]})
    assert instrument.idle_driver(runs) == "none" and instrument.idle_driver(pd.DataFrame({"tps": [1.0]})) == ""


# -- the designs part with placement as a factor (design_comparison) ------------------------------------------

def test_a_placement_the_designs_part_does_not_know_is_refused_before_anything_starts():
    with pytest.raises(ParameterError, match="design_placements"):
        instrument.define(profile="smoke", design_placements=["none", "far"])
    with pytest.raises(ParameterError, match="design_placements"):
        instrument.define(profile="smoke", design_placements=["split", "split"])
    assert instrument.define(profile="smoke", design_placements=["none", "split"]).designs.placements == (
        "none", "split")


def test_every_round_holds_every_level_design_and_placement_once():
    from logbench.studies.instrument import design_comparison as dc

    order = dc.session_order([1, 4], 3, seed=7, placements=("none", "split"))
    assert len(order) == 3 * 2 * 2 * 2
    for rnd in range(3):
        cells = [o[1:] for o in order if o[0] == rnd]
        assert sorted(cells) == sorted((c, d, p) for c in (1, 4) for d in dc.DESIGNS for p in ("none", "split"))
    # one placement: the order the designs part had before placement was a factor (the committed runs' order)
    rng = np.random.default_rng([7, 0xD5])
    before = [(r, *[(c, d) for c in (1, 4) for d in dc.DESIGNS][int(i)]) for r in range(3) for i in rng.permutation(4)]
    assert [o[:3] for o in dc.session_order([1, 4], 3, seed=7)] == before


def test_the_placement_a_record_ran_under():
    from logbench.studies.instrument.design_comparison import placement_mode

    assert placement_mode("split: server 0, load 1") == "split"
    assert placement_mode("none") == "none"
    assert placement_mode(None) == "none"  # recorded before placement was
    assert placement_mode("unavailable: one CPU") == "unavailable"


def _estimates(rows):
    return pd.DataFrame([{"design": d, "placement": p, "clients": 4, "session": s, "arm": a, "log_ratio": v, "n": 4}
                         for d, p, a, vals in rows for s, v in enumerate(vals)])


def test_the_placement_effect_is_the_ratio_of_the_two_placements_estimates():
    from logbench.studies.instrument.design_comparison import placement_effect

    split, none = math.log(0.5), math.log(0.6)
    est = _estimates([("switchback", "split", "stderr", [split - 0.01, split + 0.01]),
                      ("switchback", "none", "stderr", [none - 0.02, none + 0.02]),
                      ("switchback", "split", "none_again", [0.0, 0.01])])
    t = placement_effect(est)
    assert len(t) == 1
    r = t.iloc[0]
    assert r["design"] == "switchback" and r["split / none"] == pytest.approx(0.5 / 0.6)
    assert r["split ratio"] == pytest.approx(0.5) and r["none ratio"] == pytest.approx(0.6)
    # Welch: se = sqrt(0.01^2 * 2 / 2 + 0.02^2 * 2 / 2) on the log scale; df by Welch-Satterthwaite
    se = math.sqrt(0.0001 + 0.0004)
    df = se ** 4 / (0.0001 ** 2 + 0.0004 ** 2)
    from scipy import stats as sps
    half = sps.t.ppf(0.975, df) * se
    assert r["ci_low"] == pytest.approx(0.5 / 0.6 * math.exp(-half))
    assert r["ci_high"] == pytest.approx(0.5 / 0.6 * math.exp(half))
    # one placement only: nothing to compare
    assert len(placement_effect(est[est["placement"] == "none"])) == 0


def test_the_designs_efficiency_is_per_placement():
    from logbench.studies.instrument.design_comparison import efficiency

    est = _estimates([("switchback", "split", "none_again", [0.01, -0.01, 0.0]),
                      ("blocks", "split", "none_again", [0.02, -0.02, 0.0]),
                      ("switchback", "none", "none_again", [0.04, -0.04, 0.0]),
                      ("blocks", "none", "none_again", [0.02, -0.02, 0.0])])
    sessions = pd.DataFrame([{"round": r, "clients": 4, "design": d, "placement": p, "seconds": 60.0}
                             for r in range(3) for d in ("switchback", "blocks") for p in ("none", "split")])
    t = efficiency(est, sessions, "none_again").set_index("placement")
    # equal minutes: blocks / switchback is the ratio of the variances
    assert t.loc["split", "blocks / switchback"] == pytest.approx(4.0)
    assert t.loc["none", "blocks / switchback"] == pytest.approx(0.25)
    assert t.loc["split", "switchback minutes per session"] == pytest.approx(1.0)
