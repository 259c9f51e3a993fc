"""The run record as the analysis reads it: measured runs, in memory and read back from CSV."""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import blank_run
from logbench.base import records


def test_measured_leaves_out_the_warm_ups_in_memory_and_read_back_as_text(tmp_path):
    path = tmp_path / "runs.jsonl"
    for i in range(4):
        records.append(path, blank_run(i, warmup=i == 0))
    runs = records.load(path)
    assert list(records.measured(runs)["position"]) == [1, 2, 3]
    records.flatten(runs).to_csv(tmp_path / "runs.csv", index=False)
    # as text ("True"/"False"), as a column with a missing cell reads back: "False" is not a warm-up
    back = pd.read_csv(tmp_path / "runs.csv", dtype={"warmup": str})
    assert list(records.measured(back)["position"]) == [1, 2, 3]


def test_a_processed_table_is_read_as_its_measured_runs_and_a_missing_one_as_none(tmp_path):
    path = tmp_path / "runs.jsonl"
    for i in range(4):
        records.append(path, blank_run(i, warmup=i < 2))
    records.flatten(records.load(path)).to_csv(tmp_path / "study_runs.csv", index=False)
    runs = records.read_measured(tmp_path, "study")
    assert list(runs["position"]) == [2, 3] and list(runs.index) == [0, 1]
    # absent (the study not run) is told apart from a table of warm-ups only (empty)
    assert records.read_measured(tmp_path, "other") is None
    records.flatten(records.load(path).head(2)).to_csv(tmp_path / "warm_runs.csv", index=False)
    assert records.read_measured(tmp_path, "warm").empty


def test_a_table_without_the_warmup_column_has_no_warm_ups():
    table = pd.DataFrame({"position": [0, 1]})
    assert records.measured(table).equals(table)


def test_the_papers_where_spec_selects_the_runs_measured_selects():
    from logbench.publish.paper import numbers

    table = pd.DataFrame({"position": [0, 1, 2], "warmup": [True, False, False]})
    spec = {"kind": "agg", "source": "runs", "where": records.MEASURED_WHERE, "agg": "count"}
    assert numbers.resolve(spec, lambda source: table) == len(records.measured(table)) == 2


def test_what_the_load_tool_reported_is_recorded_under_the_same_names_and_types():
    import dataclasses

    from logbench.measure import runner

    run = {f.name: f.type for f in dataclasses.fields(records.Run)}
    measurement = {f.name: f.type for f in dataclasses.fields(runner.Measurement)}
    assert measurement == {**{k: run[k] for k in records.REPORTED_FIELDS}, "extra": "dict"}
    m = runner.Measurement(transactions=3, failed=0, tps=1.5, latency_mean_ms=1.0, latency_stddev_ms=0.1,
                           latency_p50_ms=1.0, latency_p95_ms=2.0, latency_p99_ms=3.0, latency_samples=3, wall_s=2.0,
                           threads=1, extra={})
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.tps = 2.0


def test_the_records_fields_keep_the_order_of_the_processed_runs_tables_columns():
    # the record's fields in declaration order are the columns of every processed runs table (data/processed)
    from pathlib import Path

    header = (Path(__file__).parents[1] / "data/processed/pg_destinations_runs.csv").open().readline().strip()
    # a field added later (quiet_s, issue 40) is in new runs only: a table written before it lacks its column
    added_later = ("quiet_s",)
    fields = tuple(f for f in records.RUN_FIELDS if f not in added_later or f in header.split(","))
    assert tuple(header.split(",")[: len(fields)]) == fields
