"""Study 02's own analysis on runs made by hand (its integration runs are in test_pg_integration and the notebooks)."""

import pandas as pd
import pytest


def test_per_record_cost_is_the_extra_per_transaction_over_the_same_blocks_baseline_divided_by_the_records():
    """Study 02's per-record costs on runs made by hand: the baseline costs 10 µs a transaction in block 0 and 12
    in block 1, the 10 % sample 14 and 16 at 0.2 records a transaction (20 µs a record in both blocks), the full
    log 30 and 32 at 2 records (10 µs a record); a lossy arm is left out, the collector's numbers are per record."""
    from logbench.studies import pg_destinations as m

    rows = []
    for block, base_us in ((0, 10.0), (1, 12.0)):
        for cfg, extra_us, records, vol_extra, loss in (("none", 0.0, 0, 0.0, float("nan")),
                                                        ("stderr_sample_10pct", 4.0, 20_000, 0.3, float("nan")),
                                                        ("stderr", 20.0, 200_000, 0.6, 0.0),
                                                        ("syslog", 20.0, 100, 0.6, 0.999)):
            tx = 100_000
            rows.append({"configuration": cfg, "clients": 2, "repeat": block, "warmup": False, "transactions": tx,
                         "server_cpu_s": (base_us + extra_us) * tx / 1e6, "server_ctx_voluntary": vol_extra * tx,
                         "log_records_received": records, "log_loss": loss,
                         "extra": {"collector_cpu_s": 5e-6 * records, "collector_ctx_voluntary": 0.5 * records}
                         if records else {}})
    t = m.per_record_cost(pd.DataFrame(rows)).set_index("configuration")
    assert list(t.index) == ["stderr", "stderr_sample_10pct"]  # syslog lost its records: no cost per record
    assert t.loc["stderr_sample_10pct", "server_cpu_us_per_record_mean"] == pytest.approx(20.0)
    assert t.loc["stderr", "server_cpu_us_per_record_mean"] == pytest.approx(10.0)
    assert t.loc["stderr_sample_10pct", "server_vol_per_record_mean"] == pytest.approx(1.5)
    assert t.loc["stderr", "server_vol_per_record_mean"] == pytest.approx(0.3)
    assert t.loc["stderr", "collector_cpu_us_per_record_mean"] == pytest.approx(5.0)
    assert t.loc["stderr", "collector_vol_per_record_mean"] == pytest.approx(0.5)
    assert t.loc["stderr", "server_cpu_us_per_record_n"] == 2
    text = m.finding_per_record(t.reset_index())
    assert "`stderr_sample_10pct` 20" in text and "`stderr` 10" in text and "2 clients" in text


def test_per_record_cost_takes_a_blocks_repeated_baseline_once_as_the_mean_of_its_runs():
    """A block layout with baseline_runs 3 (study 02's standard and resolution profiles): 2 blocks of 3 baseline
    runs and 1 logged run. Each logged run is one observation against its block's baseline mean, so n is 2 (the
    logged runs), not 6 (each logged run joined to each of its block's baseline runs), and the interval is the t
    interval of the 2 per-block differences."""
    from scipy import stats

    from logbench.studies import pg_destinations as m

    tx, rows, expected = 100_000, [], []
    for block, base_us, logged_us, base_vol in ((0, (9.0, 10.0, 14.0), 31.0, (0.1, 0.2, 0.3)),
                                                (1, (12.0, 13.0, 17.0), 38.0, (0.3, 0.3, 0.3))):
        for us, vol in zip(base_us, base_vol):
            rows.append({"configuration": "none", "clients": 4, "repeat": block, "warmup": False, "transactions": tx,
                         "server_cpu_s": us * tx / 1e6, "server_ctx_voluntary": vol * tx, "log_records_received": 0,
                         "log_loss": float("nan"), "extra": {}})
        rows.append({"configuration": "stderr", "clients": 4, "repeat": block, "warmup": False, "transactions": tx,
                     "server_cpu_s": logged_us * tx / 1e6, "server_ctx_voluntary": 1.3 * tx,
                     "log_records_received": 2 * tx, "log_loss": 0.0,
                     "extra": {"collector_cpu_s": 1e-6 * tx, "collector_ctx_voluntary": 0.5 * tx}})
        expected.append(((logged_us - sum(base_us) / 3) / 2, (1.3 - sum(base_vol) / 3) / 2))
    t = m.per_record_cost(pd.DataFrame(rows)).set_index("configuration").loc["stderr"]
    for i, col in enumerate(("server_cpu_us_per_record", "server_vol_per_record")):
        d = [e[i] for e in expected]  # block 0: (31 - 11) / 2 = 10 µs; block 1: (38 - 14) / 2 = 12 µs
        low, high = stats.t.interval(0.95, len(d) - 1, loc=sum(d) / len(d), scale=stats.sem(d))
        assert t[f"{col}_n"] == 2
        assert t[f"{col}_mean"] == pytest.approx(sum(d) / len(d))
        assert (t[f"{col}_ci_low"], t[f"{col}_ci_high"]) == pytest.approx((low, high))
    assert t["server_cpu_us_per_record_mean"] == pytest.approx(11.0)
