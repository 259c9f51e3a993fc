"""The cost model (issue 42): its arithmetic by hand, the held-out split, a missing input, and its output on the
committed data/processed."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from logbench.analyze import costmodel as cm
from logbench.base import paths


def cells(**over) -> pd.DataFrame:
    """One logging cell with every column predict() reads; ``over`` replaces columns (lists make several rows)."""
    base = {"stem": "pg_destinations", "configuration": "stderr", "clients": 1, "cores": 2, "baseline_tps": 1000.0,
            "saturated_tps": np.nan, "io_bound": False, "role": "logging arm", "match": "counted as is",
            "loader_us_per_tx": 0.0, "collector_us_per_tx": 0.0, "syslog_us_per_tx": 0.0, "receiver_us_per_tx": 0.0}
    base.update(over)
    n = max(len(v) if isinstance(v, list) else 1 for v in base.values())
    return pd.DataFrame({k: v if isinstance(v, list) else [v] * n for k, v in base.items()})


def test_one_client_waits_for_its_backends_added_time():
    # 1000 tps is 1000 µs a transaction; the backend adds 100 µs: 1000 / 1100 of the throughput
    d = cm.predict(cells(loader_us_per_tx=100.0))
    assert d["predicted_ratio"].iloc[0] == pytest.approx(1000 / 1100)
    assert d["binding"].iloc[0].startswith("latency")


def test_the_collector_does_not_lengthen_a_lone_clients_wait():
    d = cm.predict(cells(loader_us_per_tx=100.0, collector_us_per_tx=300.0))
    assert d["predicted_ratio"].iloc[0] == pytest.approx(1000 / 1100)


def test_saturated_cores_pay_every_processs_added_cpu():
    # 2 cores at 2000 tps: 1000 µs of core time a transaction; 150 + 100 µs more: 1000 / 1250
    d = cm.predict(cells(clients=4, baseline_tps=2000.0, loader_us_per_tx=150.0, collector_us_per_tx=100.0))
    assert d["predicted_ratio"].iloc[0] == pytest.approx(0.8)
    assert d["binding"].iloc[0] == "CPU: the cores"


def test_below_saturation_the_cores_bound_by_the_saturated_levels_core_time():
    # 1 client at 1000 tps, the cores saturated at 4000 tps (500 µs a transaction): a daemon's 1500 µs makes the
    # cores' bound 2 / 2000 µs = 1000 tps, below the latency bound (the backend adds nothing)
    d = cm.predict(cells(saturated_tps=4000.0, syslog_us_per_tx=500.0, receiver_us_per_tx=1000.0))
    assert d["predicted_ratio"].iloc[0] == pytest.approx(1.0)
    d = cm.predict(cells(saturated_tps=4000.0, syslog_us_per_tx=900.0, receiver_us_per_tx=1000.0))
    assert d["predicted_ratio"].iloc[0] == pytest.approx(2 / (500 + 1900) * 1e6 / 1000)


def test_a_single_threaded_daemon_caps_the_rate_at_one_core():
    # the syslog daemon needs 1000 µs a transaction: at most 1000 tps whatever the cores say
    d = cm.predict(cells(clients=8, baseline_tps=4000.0, syslog_us_per_tx=1000.0))
    assert d["predicted_ratio"].iloc[0] == pytest.approx(0.25)
    assert d["binding"].iloc[0] == "ceiling: one core of the syslog"


def test_an_io_bound_cell_is_not_bounded_by_its_baselines_core_time():
    d = cm.predict(cells(clients=4, baseline_tps=100.0, io_bound=True, loader_us_per_tx=100.0))
    assert d["predicted_ratio"].iloc[0] == pytest.approx(4 / (4 / 100 + 100e-6) / 100)


def test_factors_scale_each_process_apart():
    d = cm.predict(cells(clients=4, baseline_tps=2000.0, loader_us_per_tx=100.0, collector_us_per_tx=100.0),
                   {"loader": 0.5, "collector": 2.0, "syslog": 1.0})
    assert d["predicted_ratio"].iloc[0] == pytest.approx(1000 / 1250)


def test_per_record_time_is_instructions_times_their_time_plus_calls_times_the_floor():
    costs = pd.DataFrame([
        {"engine": "postgresql", "configuration": "stderr", "process": "backend", "instructions_per_record": 1000.0,
         "syscalls_per_record": 1.0, "bytes_per_record": 250.0, "extra_instructions_per_statement": 2000.0},
        {"engine": "postgresql", "configuration": "stderr", "process": "logger", "instructions_per_record": 100.0,
         "syscalls_per_record": 3.0, "bytes_per_record": 250.0, "extra_instructions_per_statement": 200.0}])
    floors = pd.DataFrame({"target": ["pipe", "pipe", "file"], "nbytes": [100.0, 300.0, 300.0],
                           "value": [0.2, 0.5, 0.4]})
    cal = cm.Calibration(us_per_instruction=0.001, cpu_per_transaction_us=20.0, floors=floors)
    per = cm.per_record_us(cm.Recipe((("stderr", 1.0),)), "postgresql", costs, cal, 0.002, speed=2.0)
    # backend: 1000 × 0.002 + 1 pipe write at the nearest size (300 bytes: 0.5) × 2;
    # collector: 100 × 0.002 + 3 file writes × 0.4 × 2
    assert per["loader"] == pytest.approx(2.0 + 1.0)
    assert per["collector"] == pytest.approx(0.2 + 2.4)
    assert per["syslog"] == 0 and per["receiver"] == 0
    direct = cm.per_record_us(cm.Recipe((("stderr", 1.0),), collector=False), "postgresql", costs, cal, 0.002, 2.0)
    assert direct["collector"] == 0 and direct["loader"] == pytest.approx(2.0 + 0.8)  # the backend writes the file


def test_the_fit_reads_only_its_subset():
    inside = dict(stem="pg_destinations", clients=1)
    d = cells(stem=["pg_destinations", "pg_destinations", "pg_destinations", "mysql_slowlog"],
              clients=[1, 1, 4, 1], loader_us_per_tx=[10.0, 20.0, 10.0, 10.0],
              collector_us_per_tx=[5.0, 10.0, 5.0, 0.0], syslog_us_per_tx=0.0)
    d["backend_cpu_us_per_tx"], d["baseline_backend_cpu_us_per_tx"] = [30.0, 50.0, 999.0, 999.0], 10.0
    d["collector_cpu_us_per_tx"], d["daemon_cpu_us_per_tx"] = [10.0, 20.0, 999.0, 999.0], np.nan
    assert list(cm.in_fit_subset(d)) == [True, True, False, False] and cm.FIT_SUBSET == inside
    f = cm.fit_factors(d).set_index("process")
    assert f.loc["loader", "factor"] == pytest.approx(2.0) and f.loc["collector", "factor"] == pytest.approx(2.0)
    # what the judged cells measured moves nothing
    d.loc[2:, ["backend_cpu_us_per_tx", "collector_cpu_us_per_tx"]] = 1e6
    assert cm.fit_factors(d)["factor"].tolist() == f["factor"].tolist()


NEEDED = ("record_cost.csv", "record_cost_figures.csv", "record_cost_calibration.csv")


def test_a_missing_input_table_is_named(tmp_path):
    for name in NEEDED:
        processed = tmp_path / name.replace(".csv", "")
        shutil.copytree(paths.PROCESSED, processed, ignore=shutil.ignore_patterns(name, "findings_*"))
        with pytest.raises(cm.MissingInput, match=name.replace(".", r"\.")):
            cm.cost_model(processed)


def test_the_findings_step_says_why_it_computed_nothing(tmp_path):
    from logbench.publish import findings

    shutil.copytree(paths.PROCESSED, tmp_path / "p", ignore=shutil.ignore_patterns("record_cost.csv", "findings_*"))
    t = findings.cost_model_findings(tmp_path / "p")
    assert t["cost_model"].empty and t["cost_model_summary"]["model"].tolist() == ["not computed"]
    assert "record_cost.csv" in t["cost_model_summary"]["fitted_on"].iloc[0]


@pytest.fixture(scope="module")
def committed():
    return cm.cost_model(paths.PROCESSED)


def test_every_logging_cell_of_the_committed_studies_is_predicted(committed):
    logging_cells = 0
    for _, stem in cm.STUDIES:
        s = pd.read_csv(paths.PROCESSED / f"{stem}.csv")
        baseline = "off" if "off" in set(s["configuration"]) else "none"
        logging_cells += int((~s["configuration"].isin([baseline]) & ~s["configuration"].str.endswith("_again")).sum())
    c = committed.cells
    assert list(c.columns) == cm.COLUMNS
    for model in ("counted", "fitted"):
        mine = c[c["model"] == model]
        assert len(mine) == logging_cells
        assert mine["predicted_ratio"].notna().all() and mine["predicted_ratio"].between(0, 1 + 1e-9).all()
    assert set(c["study"]) == {"02", "04", "05"}


def test_the_fitted_model_is_never_judged_on_its_subset(committed):
    c = committed.cells
    fitted = c[c["model"] == "fitted"]
    subset = (fitted["stem"] == cm.FIT_SUBSET["stem"]) & (fitted["clients"] == cm.FIT_SUBSET["clients"])
    assert subset.any() and not fitted.loc[subset, "judged"].any()
    assert c[c["model"] == "counted"]["judged"].all()


def test_the_summary_reports_each_study_and_all_against_the_goals(committed):
    s = committed.summary
    assert list(s.columns) == cm.SUMMARY_COLUMNS
    c = committed.cells
    for model in ("counted", "fitted"):
        mine = s[s["model"] == model].set_index("study")
        assert list(mine.index) == ["02", "04", "05", "all"]
        judged = c[(c["model"] == model) & c["judged"]]
        assert mine.loc["all", "judged_cells"] == len(judged)
        assert mine.loc["all", "median_abs_error"] == pytest.approx(np.median(np.abs(judged["error"])))
        assert mine.loc["all", "in_ci_share"] == pytest.approx(judged["in_ci"].mean())
        assert (mine["goals_met"] == ((mine["median_abs_error"] <= cm.GOAL_MEDIAN_ERROR)
                                      & (mine["in_ci_share"] >= cm.GOAL_COVERAGE))).all()


def test_a_miss_names_its_term_and_a_hit_names_none(committed):
    c = committed.cells
    hit = c["in_ci"] | (c["error"].abs() <= cm.GOAL_MEDIAN_ERROR)
    assert (c.loc[hit, "missing_term"].fillna("") == "").all()
    assert (c.loc[~hit, "missing_term"].fillna("") != "").all()


def test_the_rule_and_factors_tables(committed):
    assert list(committed.factors.columns) == cm.FACTOR_COLUMNS
    assert list(committed.factors["process"]) == list(cm.PROCESSES)
    r = committed.rule
    assert list(r.columns) == cm.RULE_COLUMNS and set(r["model"]) == {"counted", "fitted"}
    # a daemon's records per second is one core over its time per record
    files = r[(r["configuration"] == "stderr") & (r["model"] == "counted")].iloc[0]
    assert files["daemon_records_per_s"] == pytest.approx(1e6 / files["collector_us_per_record"])
    # the fitted model's interval comes from its factors' intervals: it holds its estimate; the counted has none
    fit = r[r["model"] == "fitted"]
    assert (fit["us_per_record_ci_low"] <= fit["us_per_record"] + 1e-12).all()
    assert (fit["us_per_record"] <= fit["us_per_record_ci_high"] + 1e-12).all()
    assert r[r["model"] == "counted"]["us_per_record_ci_low"].isna().all()
