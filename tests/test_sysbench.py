"""sysbench's output parser against real output captured once (sysbench 1.0.20, MariaDB 10.11)."""

from pathlib import Path

import numpy as np
import pytest

from logbench.base.errors import ToolError
from logbench.workloads import sysbench as sb

FIXTURES = Path(__file__).parent / "fixtures"
RW = (FIXTURES / "sysbench_oltp_read_write_1.0.20.txt").read_text()
PS = (FIXTURES / "sysbench_oltp_point_select_1.0.20.txt").read_text()


def test_summary_numbers_match_the_captured_output():
    r = sb.parse_output(RW, test="oltp_read_write")
    assert (r.reads, r.writes, r.other, r.queries) == (11032, 3152, 1576, 15760)
    assert (r.transactions, r.tps, r.qps) == (788, 262.18, 5243.69)
    assert (r.ignored_errors, r.reconnects, r.events, r.threads) == (0, 0, 788, 2)
    assert r.total_time_s == 3.0049
    assert (r.latency_min_ms, r.latency_avg_ms, r.latency_max_ms, r.latency_sum_ms) == (1.84, 7.61, 30.67, 5997.86)
    assert (r.latency_percentile, r.latency_pct_ms) == (95, 15.83)


def test_read_write_has_twenty_statements_per_transaction():
    r = sb.parse_output(RW)
    assert r.queries == sb.STATEMENTS_PER_TRANSACTION["oltp_read_write"] * r.transactions
    assert r.other == 2 * r.transactions  # BEGIN and COMMIT


def test_point_select_is_one_statement_per_transaction():
    r = sb.parse_output(PS)
    assert r.queries == r.transactions == r.events == r.reads
    assert r.writes == r.other == 0


def test_interval_lines():
    iv = sb.parse_output(RW).intervals
    assert [i.t_s for i in iv] == [1.0, 2.0, 3.0]
    first = iv[0]
    assert (first.threads, first.tps, first.qps) == (2, 293.45, 5881.00)
    assert (first.reads_per_s, first.writes_per_s, first.other_per_s) == (4119.29, 1173.80, 587.90)
    assert (first.latency_pct_ms, first.errors_per_s, first.reconnects_per_s) == (13.70, 0.0, 0.0)


def test_histogram_counts_every_event():
    for text in (RW, PS):
        r = sb.parse_output(text)
        assert sum(c for _, c in r.histogram) == r.events == r.latency_samples
        # the lowest bucket holds the fastest event, the highest the slowest (buckets ~2 % wide)
        assert r.histogram[0][0] == pytest.approx(r.latency_min_ms, rel=0.05)
        assert r.histogram[-1][0] == pytest.approx(r.latency_max_ms, rel=0.05)


def test_histogram_first_rows_read_exactly():
    r = sb.parse_output(RW)
    assert r.histogram[:3] == ((1.857, 1), (1.925, 1), (2.069, 1))


def test_percentiles_agree_with_sysbench_within_one_bucket():
    for text in (RW, PS):
        r = sb.parse_output(text)
        # sysbench prints a bucket bound; ours is the bucket's value: within ~2 % of each other
        assert r.latency_p95_ms == pytest.approx(r.latency_pct_ms, rel=0.05)
        assert r.latency_p50_ms <= r.latency_p95_ms <= r.latency_p99_ms <= r.latency_max_ms * 1.02


def test_histogram_stats_hand_computed():
    h = ((1.0, 1), (2.0, 2), (10.0, 1))  # samples 1, 2, 2, 10
    s = sb.histogram_stats(h)
    assert s["n"] == 4
    assert s["p50"] == 2.0 and s["p99"] == 10.0
    assert s["stddev"] == pytest.approx(np.std([1, 2, 2, 10], ddof=1))


def test_histogram_stats_single_and_empty():
    assert np.isnan(sb.histogram_stats(((3.0, 1),))["stddev"])
    assert sb.histogram_stats(())["n"] == 0


def test_missing_summary_is_a_tool_error():
    with pytest.raises(ToolError, match="lacks"):
        sb.parse_output("FATAL: unable to connect to MySQL server on socket '/nowhere', aborting...")


def test_command_is_plain_text_with_histogram_and_seed(tmp_path):
    s = sb.Sysbench({"unix_socket": str(tmp_path / "s.sock"), "user": "root", "password": ""},
                    tables=4, table_size=1000)
    argv = s.command("oltp_point_select", "run", threads=8, seconds=5, report_interval=1, seed=7)
    assert argv[1] == "oltp_point_select" and argv[-1] == "run"
    for opt in ("--db-ps-mode=disable", "--histogram=on", "--rand-seed=7", "--threads=8", "--time=5",
                "--report-interval=1", f"--mysql-socket={tmp_path / 's.sock'}", "--tables=4", "--table-size=1000"):
        assert opt in argv
    assert not any(a.startswith("--mysql-password") for a in argv)


def test_unknown_test_and_ps_mode_are_refused():
    s = sb.Sysbench({"unix_socket": "/x", "user": "root"})
    with pytest.raises(ToolError, match="allowed"):
        s.command("tpcc", "run")
    with pytest.raises(ToolError, match="allowed"):
        sb.Sysbench({"unix_socket": "/x"}, ps_mode="always")
