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
