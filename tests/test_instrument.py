"""The noise study's arithmetic on hand-made series (the runs themselves are exercised by nbval)."""

import math

import numpy as np
import pandas as pd
import pytest

from logbench.errors import ParameterError
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
            "ratio": ratio, "ratio_ci_low": low, "ratio_ci_high": high}


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
