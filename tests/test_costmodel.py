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


# --- each table at its own machine's speed; which records each process takes; MariaDB's thread unfitted -----------

FLOORS = pd.DataFrame({"target": ["pipe", "file"], "nbytes": [250.0, 250.0], "value": [1.0, 0.5]})
CAL = cm.Calibration(us_per_instruction=0.001, cpu_per_transaction_us=20.0, floors=FLOORS,
                     instructions_per_statement=40_000.0)
# study 11's counts of one destination per engine, and of each engine's baseline statement
COSTS = pd.DataFrame([
    {"engine": "postgresql", "configuration": "stderr", "process": "backend", "instructions_per_record": 1000.0,
     "syscalls_per_record": 1.0, "bytes_per_record": 250.0, "extra_instructions_per_statement": 0.0},
    {"engine": "postgresql", "configuration": "stderr", "process": "logger", "instructions_per_record": 500.0,
     "syscalls_per_record": 2.0, "bytes_per_record": 250.0, "extra_instructions_per_statement": 0.0},
    {"engine": "postgresql", "configuration": "syslog", "process": "backend", "instructions_per_record": 1000.0,
     "syscalls_per_record": 1.0, "bytes_per_record": 250.0, "extra_instructions_per_statement": 0.0},
    {"engine": "postgresql", "configuration": "syslog", "process": "rsyslogd", "instructions_per_record": 4000.0,
     "syscalls_per_record": 0.0, "bytes_per_record": 250.0, "extra_instructions_per_statement": 0.0},
    {"engine": "postgresql", "configuration": "remote_syslog_udp", "process": "backend",
     "instructions_per_record": 1000.0, "syscalls_per_record": 1.0, "bytes_per_record": 250.0,
     "extra_instructions_per_statement": 0.0},
    {"engine": "postgresql", "configuration": "remote_syslog_udp", "process": "rsyslogd",
     "instructions_per_record": 4000.0, "syscalls_per_record": 0.0, "bytes_per_record": 250.0,
     "extra_instructions_per_statement": 0.0},
    {"engine": "mariadb", "configuration": "slow_file", "process": "connection", "instructions_per_record": 2000.0,
     "syscalls_per_record": 1.0, "bytes_per_record": 250.0, "extra_instructions_per_statement": 0.0}])
BASELINES = pd.DataFrame([
    {"engine": "postgresql", "server": "15 (local)", "configuration": "none", "instructions": 40_000.0},
    {"engine": "mariadb", "server": "10.11 (local)", "configuration": "none", "instructions": 80_000.0}])


def arm(**over) -> pd.DataFrame:
    """One logging arm as study_cells leaves it (what demands reads); ``over`` replaces columns."""
    base = {"stem": "pg_destinations", "configuration": "stderr", "engine": "postgresql", "variant": "",
            "role": "logging arm", "records_per_tx": 2.0, "received_per_tx": 2.0}
    base.update(over)
    return pd.DataFrame([base])


def test_each_engine_is_priced_at_its_own_speed():
    # PostgreSQL at the host's speed 1.0, MariaDB at its own 0.5: every µs of a MariaDB record halves
    speeds = {"postgresql": 1.0, "mariadb": 0.5}
    pg = cm.demands(arm(), COSTS, CAL, speed=9.0, speeds=speeds).iloc[0]
    # backend: 1000 × 0.001 µs + one pipe write at 1 µs, per record, 2 records a transaction
    assert pg["speed"] == 1.0 and pg["loader_us_per_tx"] == pytest.approx(2 * (1.0 + 1.0))
    assert pg["collector_us_per_tx"] == pytest.approx(2 * (0.5 + 2 * 0.5))
    my = cm.demands(arm(stem="mysql_slowlog", configuration="slow_all", engine="mariadb", records_per_tx=1.0,
                        received_per_tx=1.0), COSTS, CAL, speed=9.0, speeds=speeds).iloc[0]
    assert my["speed"] == 0.5 and my["loader_us_per_tx"] == pytest.approx((2000 * 0.001 + 1 * 0.5) * 0.5)
    # an engine without a figure of its own takes the one given
    assert cm.demands(arm(), COSTS, CAL, speed=3.0).iloc[0]["speed"] == 3.0


def test_a_speed_is_the_ratio_of_two_baselines_cpu_per_counted_instruction():
    # study 11: 20 µs for 40,000 instructions; 20 µs for 80,000 is half its time per instruction
    assert cm.speed_of(20.0, 80_000.0, CAL) == pytest.approx(0.5)
    assert np.isnan(cm.speed_of(20.0, np.nan, CAL))  # no count, no speed
    assert cm.baseline_instructions(BASELINES, "mariadb", "none") == 80_000.0


def test_a_remote_receiver_takes_only_the_records_that_arrived():
    # 2 records sent a transaction, 0.5 arrived (the local daemon's rate limit dropped the rest): the local daemon
    # reads all 2, the receiver writes 0.5; each at the local daemon's counted 4000 instructions a record
    d = cm.demands(arm(configuration="remote_syslog_udp", received_per_tx=0.5), COSTS, CAL, speed=1.0).iloc[0]
    assert d["syslog_us_per_tx"] == pytest.approx(2 * 4.0)
    assert d["receiver_us_per_tx"] == pytest.approx(0.5 * 4.0)


def test_the_fitted_factors_leave_mariadbs_connection_thread_counted():
    d = cells(engine=["postgresql", "mariadb"], clients=4, baseline_tps=2000.0, loader_us_per_tx=100.0)
    p = cm.predict(d, {"loader": 0.5, "collector": 1.0, "syslog": 1.0})
    assert list(p["loader_factor"]) == [0.5, 1.0]
    assert list(p["predicted_ratio"]) == pytest.approx([1000 / 1050, 1000 / 1100])


def judged(ratio, low, high, n=10_000, **over) -> pd.DataFrame:
    k = len(ratio)
    base = {"model": "fitted", "judged": True, "ratio": ratio, "ratio_ci_low": low, "ratio_ci_high": high, "n": n,
            "predicted_ratio": 1.0, "study": "02", "engine": "postgresql",
            "destination": "a file through the collector",
            "clients": 4, "cores": 2, "design": "blocks", "cpu_model": "x", "stem": "pg_destinations",
            "missing_term": "", "added_us_per_tx": 1.0, "measured_added_cpu_us_per_tx": 2.0,
            "implied_added_us_per_tx": 3.0}
    base.update(over)
    d = pd.DataFrame({c: v if isinstance(v, list) else [v] * k for c, v in base.items()})
    d["error"] = d["predicted_ratio"] - d["ratio"]
    d["in_ci"] = (d["predicted_ratio"] >= d["ratio_ci_low"]) & (d["predicted_ratio"] <= d["ratio_ci_high"])
    return d


def test_an_exact_models_median_error_is_the_intervals_own_spread():
    # 2001 cells at a ratio of 1, each interval ±1.96 σ on the log scale (σ = 0.05, many degrees of freedom): a
    # model right on every truth shows |measured − truth| ≈ |N(0, σ)|, whose median is 0.6745 σ
    sigma, k = 0.05, 2001
    d = judged([1.0] * k, [float(np.exp(-1.96 * sigma))] * k, [float(np.exp(1.96 * sigma))] * k)
    mean, low, high = cm.noise_floor(d)
    assert mean == pytest.approx(0.6745 * sigma, rel=0.03) and low < mean < high
    # an interval of zero width: no noise, an exact model is exact
    assert cm.noise_floor(judged([0.5] * 3, [0.5] * 3, [0.5 + 1e-12] * 3))[0] == pytest.approx(0.0, abs=1e-9)
    # an undefined interval says nothing
    assert np.isnan(cm.noise_floor(judged([0.5], [np.nan], [np.nan]))[0])


def test_diagnose_reads_the_measured_cpu_and_the_time_the_ratio_implies():
    d = pd.DataFrame({"configuration": ["stderr", "stderr"], "engine": "postgresql", "records_per_tx": 2.0,
                      "clients": [1, 4], "cores": 2, "io_bound": False, "baseline_tps": [1000.0, 2000.0],
                      "ratio": [0.5, 0.8], "server_cpu_us_per_tx": [30.0, 30.0],
                      "baseline_server_cpu_us_per_tx": [20.0, 20.0], "daemon_cpu_us_per_tx": [np.nan, 5.0]})
    p = cm.diagnose(d)
    # 1 client: its 1000 µs cycle doubled; 4 clients on 2 cores: 1000 µs of the cores a transaction, ×1/0.8
    assert list(p["implied_added_us_per_tx"]) == pytest.approx([1000.0, 250.0])
    assert list(p["measured_added_cpu_us_per_tx"]) == pytest.approx([10.0, 15.0])
    assert list(p["destination"]) == ["a file through the collector"] * 2


def test_each_committed_engine_is_priced_at_its_own_baselines_speed(committed):
    c = committed.cells
    f = committed.factors.iloc[0]
    assert (c.loc[c["engine"] == "postgresql", "speed"] == f["host_speed"]).all()
    assert (c.loc[c["engine"] == "mariadb", "speed"] == f["mariadb_host_speed"]).all()
    # MariaDB's own calibration: its baseline's CPU per counted instruction over study 11's
    assert f["mariadb_host_speed"] == pytest.approx(
        (f["mariadb_cpu_per_statement_us"] / f["mariadb_instructions_per_statement"])
        / (f["calibration_cpu_per_statement_us"] / f["calibration_instructions_per_statement"]))
    assert f["host_speed"] == pytest.approx(
        (f["host_cpu_per_statement_us"] / f["calibration_instructions_per_statement"])
        / (f["calibration_cpu_per_statement_us"] / f["calibration_instructions_per_statement"]))
    s = committed.summary
    assert (s["exact_model_ci_low"] <= s["exact_model_median_abs_error"]).all()
    assert (s["exact_model_median_abs_error"] <= s["exact_model_ci_high"]).all()


# --- a term priced apart (logbench.analyze.costterms) enters the model as the backend's time, unfitted -------

def test_a_priced_term_adds_to_the_backends_time_outside_its_factor():
    # one client, a 1000 µs cycle: 1000 µs more per transaction halves the rate, whatever the backend's factor
    d = cells(term_us_per_tx=1000.0)
    assert cm.predict(d, {"loader": 0.5, "collector": 1.0, "syslog": 1.0})["predicted_ratio"].iloc[0] == \
        pytest.approx(0.5)
    # and the fit does not charge the factor with it: measured 30 µs, 10 of them the term, 10 counted -> factor 2
    sub = cells(loader_us_per_tx=[10.0, 20.0], term_us_per_tx=[10.0, 20.0], backend_cpu_us_per_tx=[50.0, 80.0],
                baseline_backend_cpu_us_per_tx=20.0, collector_cpu_us_per_tx=0.0, daemon_cpu_us_per_tx=0.0)
    f = cm.fit_factors(sub).set_index("process")
    assert f.loc["loader", "factor"] == pytest.approx(2.0)
