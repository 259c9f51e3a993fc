"""The single-threaded daemons' one-core ceiling (logbench.analyze.daemons, issue 42): the one rule by which a time
per record and its interval become records per second and theirs, a degenerate interval printing no upper end; the
timed ceiling read from study 02's runs (each daemon's own CPU over the records it took, at the level where it took
the most), on a small runs table of our own; and the cost model's rule table going through the same rule."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from logbench.analyze import costmodel as cm
from logbench.analyze import daemons


def test_a_known_interval_gives_the_ceilings_interval():
    # 2 µs a record [1.5, 2.5]: one core holds 500,000 records/s [400,000, 666,667], the ends swapped
    v, lo, hi = daemons.one_core(2.0, 1.5, 2.5)
    assert (v, lo, hi) == pytest.approx((500_000, 400_000, 1e6 / 1.5))
    assert daemons.ceiling_text(v, lo, hi) == "500,000 [400,000, 670,000]"
    assert daemons.ceiling_text(v, lo, hi, sig=3) == "500,000 [400,000, 667,000]"
    # at the bound: a time whose low end is 1 / UPPER_WITHIN of its estimate still has its upper end
    v, lo, hi = daemons.one_core(2.0, 2.0 / daemons.UPPER_WITHIN, 2.5)
    assert hi == pytest.approx(daemons.UPPER_WITHIN * v)


def test_a_degenerate_interval_prints_no_upper_end():
    # 2 µs [0.02, 3.98]: the time's interval reaches near 0, its reciprocal (50 million) bounds nothing
    v, lo, hi = daemons.one_core(2.0, 0.02, 3.98)
    assert v == pytest.approx(500_000) and lo == pytest.approx(1e6 / 3.98) and math.isnan(hi)
    text = daemons.ceiling_text(v, lo, hi)
    assert text == "500,000 [≥ 250,000]" and "50,000,000" not in text
    # a low end at or below 0 (a t interval of few runs) is the same case
    assert math.isnan(daemons.one_core(2.0, -0.5, 4.5)[2])
    # no interval at all (one run): the estimate alone; no positive time: no ceiling
    assert daemons.ceiling_text(*daemons.one_core(2.0)) == "500,000"
    assert all(math.isnan(x) for x in daemons.one_core(0.0, 0.0, 0.0))


def _run(conf, clients, rep, cpu, records, *, by_daemon=None, by_destination=None, duration=4.0):
    extra = {"collector_cpu_s": cpu if by_daemon is None else 0.0}
    if by_daemon is not None:
        extra["logger_cpu_s_by_daemon"] = by_daemon
    return {"configuration": conf, "clients": clients, "repeat": rep, "warmup": False, "duration_s": duration,
            "log_records_expected": records, "log_records_received": records,
            "logger_cpu_s": 0.0 if by_daemon is None else sum(by_daemon.values()),
            "log_records_by_destination": json.dumps(by_destination or {}), "env_id": "e", "extra": json.dumps(extra)}


def test_the_timed_ceiling_from_the_runs(tmp_path):
    """Numbers of our own: stderr's collector at 1 client takes 200,000 records a run in 0.8, 0.9, 1.0 s of CPU;
    at 4 clients 400,000 records in 0.6, 1.2, 1.5 s (more records per second, less CPU per record)."""
    runs = [_run("stderr", 1, r, cpu, 200_000) for r, cpu in enumerate((0.8, 0.9, 1.0))]
    runs += [_run("stderr", 4, r, cpu, 400_000) for r, cpu in enumerate((0.6, 1.2, 1.5))]
    runs += [_run("syslog", 1, r, 0.0, 100_000, by_daemon={"local": cpu, "remote": 0.0})
             for r, cpu in enumerate((1.5, 1.7))]
    # two daemons share this arm's records: it prices neither alone
    runs += [_run("syslog,csvlog", 1, 0, 0.5, 200_000, by_daemon={"local": 1.0, "remote": 0.0},
                  by_destination={"csvlog": 100_000, "syslog": 100_000})]
    runs += [{**_run("stderr", 4, 9, 9.9, 400_000), "warmup": True}]  # a warm-up run is no measurement
    pd.DataFrame(runs).to_csv(tmp_path / "pg_destinations_runs.csv", index=False)
    t = daemons.ceilings(tmp_path)
    assert list(t.columns) == daemons.CEILING_COLUMNS
    assert set(t["configuration"]) == {"stderr", "syslog"}
    four = t[(t["configuration"] == "stderr") & (t["clients"] == 4)].iloc[0]
    per = 1e6 * np.array([0.6, 1.2, 1.5]) / 400_000  # 1.5, 3.0, 3.75 µs
    low, high = stats.t.interval(0.95, 2, loc=per.mean(), scale=stats.sem(per))
    assert four["daemon"] == "collector" and four["n"] == 3
    assert (four["us_per_record"], four["us_per_record_ci_low"], four["us_per_record_ci_high"]) == pytest.approx(
        (per.mean(), low, high))
    assert four["daemon_records_per_s"] == pytest.approx(100_000)
    assert four["records_per_s_one_core"] == pytest.approx(1e6 / per.mean())
    assert four["records_per_s_one_core_ci_low"] == pytest.approx(1e6 / high)
    # the t interval of three runs reaches below half the estimate: no upper end
    assert low < per.mean() / daemons.UPPER_WITHIN and math.isnan(four["records_per_s_one_core_ci_high"])
    # the level where the collector took the most records is the one chosen, not the lowest
    assert daemons.chosen(t, "pg_destinations", "stderr")["clients"] == 4
    one = t[(t["configuration"] == "stderr") & (t["clients"] == 1)].iloc[0]
    assert one["us_per_record"] == pytest.approx(4.5) and one["records_per_s_one_core_ci_high"] > 1e6 / 4.5
    sys = daemons.chosen(t, "pg_destinations", "syslog")
    assert sys["daemon"] == "syslog" and sys["us_per_record"] == pytest.approx(16.0)


def test_the_rule_tables_ceiling_goes_through_the_same_rule():
    """The cost model's fitted ceiling: a factor whose interval reaches near 0 (the collector's, fitted on few cells)
    gives no upper end; a tight one (the syslog daemon's) gives both."""
    from test_costmodel import CAL, COSTS

    factors = pd.DataFrame({"process": ["loader", "collector", "syslog"], "ci_low": [0.9, 0.01, 1.2],
                            "ci_high": [1.1, 3.0, 1.4]})
    fitted = {"loader": 1.0, "collector": 1.5, "syslog": 1.3}
    r = cm.rule(COSTS, CAL, {"postgresql": 1.0}, fitted, factors).set_index(["configuration", "model"])
    counted = r.loc[("stderr", "counted")]
    f = r.loc[("stderr", "fitted")]
    assert f["daemon_records_per_s"] == pytest.approx(1e6 / (1.5 * counted["collector_us_per_record"]))
    assert f["daemon_records_per_s_ci_low"] == pytest.approx(1e6 / (3.0 * counted["collector_us_per_record"]))
    assert math.isnan(f["daemon_records_per_s_ci_high"])
    s, sc = r.loc[("syslog", "fitted")], r.loc[("syslog", "counted")]
    assert (s["daemon_records_per_s_ci_low"], s["daemon_records_per_s_ci_high"]) == pytest.approx(
        (1e6 / (1.4 * sc["syslog_us_per_record"]), 1e6 / (1.2 * sc["syslog_us_per_record"])))
