"""pgbench output parsing against real output captured once from pgbench 15."""

from pathlib import Path

import numpy as np
import pytest

from logbench.base.errors import ToolError
from logbench.workloads.pgbench import parse_output, read_completion_times, read_latency_log

FIX = Path(__file__).parent / "fixtures"


def test_parse_simple():
    r = parse_output((FIX / "pgbench_simple_15.txt").read_text())
    assert r["transactions"] == 23401
    assert r["failed"] == 0
    assert r["tps"] == pytest.approx(11713.689615)
    assert r["latency_avg_ms"] == pytest.approx(0.171)
    assert r["initial_connection_ms"] == pytest.approx(4.469)
    assert r["clients"] == 2 and r["threads"] == 2 and r["scale"] == 1
    assert r["query_mode"] == "simple"


def test_parse_prepared():
    r = parse_output((FIX / "pgbench_prepared_15.txt").read_text())
    assert (r["transactions"], r["query_mode"]) == (13248, "prepared")
    assert r["tps"] == pytest.approx(6629.290174)


def test_parse_rejects_truncated_output():
    text = (FIX / "pgbench_simple_15.txt").read_text().split("latency average")[0]
    with pytest.raises(ToolError, match="latency_avg_ms"):
        parse_output(text)


def test_latency_log_third_column_in_microseconds():
    lat = read_latency_log([FIX / "pgbench_txlog_15.txt"])
    assert np.array_equal(lat, [156, 111, 78, 53, 56])


def test_completion_times_are_the_last_two_columns_in_epoch_seconds(tmp_path):
    (tmp_path / "pgbench_log.4242").write_text((FIX / "pgbench_txlog_15.txt").read_text())
    done = read_completion_times(tmp_path / "pgbench_log")
    lines = [line.split() for line in (FIX / "pgbench_txlog_15.txt").read_text().splitlines()]
    assert done == pytest.approx(sorted(int(f[4]) + int(f[5]) / 1e6 for f in lines), abs=1e-6)

