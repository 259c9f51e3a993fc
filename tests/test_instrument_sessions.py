"""Notebook 00's designs part: how many sessions per design tell a 2x difference in efficiency (session_power), its
floor without the sqrt(2/3) bias on the committed windows, and the carryover check over every committed switchback
run (carryover_check). Pure analysis of committed tables and synthetic numbers: nothing starts."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from logbench.base import paths
from logbench.studies import instrument as study_mod
from logbench.studies.instrument import carryover_check, design_comparison, session_power as sp


def test_the_f_tests_power_is_its_size_at_ratio_1_and_matches_a_simulation():
    assert sp.power(1.0, 10, 10) == pytest.approx(0.05)
    # sample variances of normal sessions, the test applied as the efficiency table's interval does
    rng = np.random.default_rng(5)
    n, ratio, reps = 10, 3.0, 40000
    a = rng.normal(0, math.sqrt(ratio), (reps, n)).var(axis=1, ddof=1)
    b = rng.normal(0, 1, (reps, n)).var(axis=1, ddof=1)
    from scipy import stats as sps
    lo, hi = sps.f.ppf([0.025, 0.975], n - 1, n - 1)
    simulated = float(((a / b > hi) | (a / b < lo)).mean())
    assert sp.power(ratio, n, n) == pytest.approx(simulated, abs=0.01)
    assert math.isnan(sp.power(2.0, 1, 5))


def test_sessions_needed_is_the_first_n_with_the_power():
    n = sp.sessions_needed(2.0, 0.8)
    assert sp.power(2.0, n, n) >= 0.8 > sp.power(2.0, n - 1, n - 1)
    assert sp.sessions_needed(0.5, 0.8) == n  # symmetric with equal numbers
    assert sp.sessions_needed(4.0, 0.8) < n
    with pytest.raises(ValueError, match="ratio"):
        sp.sessions_needed(1.0)


def test_detectable_ratio_is_where_the_power_reaches_its_target():
    r = sp.detectable_ratio(6, 6)
    assert sp.power(r, 6, 6) == pytest.approx(0.8, abs=1e-6)
    n = sp.sessions_needed(2.0)
    assert sp.detectable_ratio(n, n) <= 2.0 < sp.detectable_ratio(n - 1, n - 1)
    assert sp.detectable_ratio(1, 6) == math.inf


def efficiency_table(env="abc"):
    return pd.DataFrame([{"placement": "none", "clients": 4, "switchback sessions": 6, "blocks sessions": 6,
                          "switchback minutes per session": 1.0, "blocks minutes per session": 0.5, "env_id": env}])


def test_plan_by_hand():
    p = sp.plan(efficiency_table(), budget_min=20.0).iloc[0]
    assert p["minutes per round"] == 1.5 and p["rounds that fit"] == 13
    assert p["sessions per design for 2x"] == sp.sessions_needed(2.0)
    assert p["minutes for 2x"] == pytest.approx(1.5 * sp.sessions_needed(2.0))
    assert p["detectable ratio (fit, 80% power)"] == pytest.approx(sp.detectable_ratio(13, 13))
    text = sp.finding(sp.plan(efficiency_table(), budget_min=20.0))
    assert "13 rounds" in text and f"{sp.sessions_needed(2.0)} sessions per design" in text
    with pytest.raises(ValueError, match="machine"):
        sp.plan(efficiency_table("other"), 20.0, env_id="abc")


def test_the_sessions_profile_runs_the_rounds_that_fit_the_committed_budget():
    """The profile's number is the committed data's: after the committed run changes, this says what to set."""
    budget = sp.committed_budget()
    assert 0 < budget["designs_min"] < budget["study_min"] < 90
    profile = study_mod.PROFILES["sessions"]
    fit = sp.rounds_that_fit()
    assert profile["design_rounds"] == fit, f"set PROFILES['sessions']['design_rounds'] to {fit}"
    assert profile["design_placements"] == ["none"] and profile["design_clients"] == [4]
    # the rest of the run is the standard profile's, so its time is the committed budget
    standard = study_mod.PROFILES["standard"]
    assert {k: v for k, v in profile.items() if not k.startswith("design_")} == \
           {k: v for k, v in standard.items() if not k.startswith("design_")}
    study = study_mod.define(profile="sessions")
    assert study.designs.rounds == fit and study.designs.placements == ("none",)


def committed_designs_runs():
    runs = pd.read_csv(paths.PROCESSED / "instrument_designs_records.csv")
    return runs.assign(extra=runs["extra"].map(lambda s: json.loads(s) if isinstance(s, str) else {}))


def test_the_floor_on_the_committed_windows_counts_each_windows_own_mean():
    runs = committed_designs_runs()
    study = study_mod.define(profile="standard").designs.study
    floor = design_comparison.floor(runs, study).set_index("placement")
    sb = study.switchback
    for placement, part in design_comparison.by_placement(runs).items():
        g = design_comparison.switchwindows.seconds_frame(part)
        base = g[(g["arm"] == study.baseline) & (g["offset_s"] >= sb.guard_s)]
        x = np.log(base["tps"].to_numpy(dtype=float))
        dev = x - base.assign(x=x).groupby(["load", "window"])["x"].transform("mean").to_numpy()
        windows = base.groupby(["load", "window"]).ngroups
        # what it was (sd of the deviations) and what it is (on the windows' m - 1 degrees of freedom each)
        assert floor.loc[placement, "per-second sd"] == pytest.approx(
            dev.std(ddof=1) * math.sqrt((dev.size - 1) / (dev.size - windows)))
        assert floor.loc[placement, "per-second sd"] / dev.std(ddof=1) == pytest.approx(math.sqrt(3 / 2), rel=0.01)


def test_the_carryover_check_reads_every_committed_switchback_run():
    check = carryover_check.committed_check()
    s = check["summary"]
    assert {"instrument_designs", "pg_audit_timing_switchback", "mysql_slowlog_switchback"} <= set(s["source"])
    assert set(s["verdict"]) <= {"outlasts", "guard", "unresolved"}
    assert (s["n_same"] > 0).all() and (s["n_changed"] > 0).all()
    assert (s["resolution"] > 0).all()
    # each placement of the designs part is a cell (one placement: no cell name); study 04's test is a cell
    placements = sorted(design_comparison.by_placement(committed_designs_runs()))
    assert sorted(s[s["source"] == "instrument_designs"]["cell"]) == (
        [f"placement {p}" for p in placements] if len(placements) > 1 else [""])
    assert s[s["source"] == "mysql_slowlog_switchback"]["cell"].str.contains("test ").all()
    text = carryover_check.finding(s)
    assert text.count("\n- **") == len(s) and "committed switchback cells" in text
    assert set(check["seconds"]["offset_s"]) >= {0, 1, 2}
