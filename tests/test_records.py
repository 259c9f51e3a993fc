"""The run record as the analysis reads it: measured runs, in memory and read back from CSV."""

from __future__ import annotations

import pandas as pd

from conftest import blank_run
from logbench import records


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


def test_a_table_without_the_warmup_column_has_no_warm_ups():
    table = pd.DataFrame({"position": [0, 1]})
    assert records.measured(table).equals(table)


def test_the_papers_where_spec_selects_the_runs_measured_selects():
    from logbench.paper import numbers

    table = pd.DataFrame({"position": [0, 1, 2], "warmup": [True, False, False]})
    spec = {"kind": "agg", "source": "runs", "where": records.MEASURED_WHERE, "agg": "count"}
    assert numbers.resolve(spec, lambda source: table) == len(records.measured(table)) == 2


def test_what_the_load_tool_reported_is_recorded_under_the_same_names_and_types():
    import dataclasses
    import typing

    from logbench import runner

    run, measurement = typing.get_type_hints(records.Run), typing.get_type_hints(runner.Measurement)
    assert {k: measurement[k] for k in runner.LOAD_FIELDS} == {k: run[k] for k in runner.LOAD_FIELDS}
    assert set(runner.LOAD_FIELDS) | {"extra"} == {f.name for f in dataclasses.fields(runner.Measurement)}
