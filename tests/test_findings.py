"""The findings time nothing (issue 39): computed twice from the same processed files they are the same tables, and
the write() floor they set costs against is study 11's calibration, read from its published table; without it, no
floor is drawn and the text says where it would come from."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from logbench.publish import findings, report
from logbench.analyze import regression
from test_paper import synthetic_processed


@pytest.fixture(scope="module")
def processed(tmp_path_factory):
    return synthetic_processed(tmp_path_factory.mktemp("findings") / "processed")


def _floor_labels(figures: dict) -> set[str]:
    return {line.get_label() for name, fig in figures.items() if name.startswith("line_cost_")
            for line in fig.axes[0].get_lines() if line.get_label().startswith("one write()")}


@pytest.fixture(scope="module")
def computed(processed):
    before = {p.name: p.read_bytes() for p in processed.iterdir()}
    tables, figures = report.compute_findings(processed)
    assert {p.name: p.read_bytes() for p in processed.iterdir()} == before  # computed, not written
    return tables, figures


def test_the_findings_are_a_function_of_the_processed_files(processed, computed):
    first, _ = computed
    second, _ = report.compute_findings(processed)
    assert list(first) == list(second) == list(findings.FINDINGS)
    for name in first:
        pd.testing.assert_frame_equal(first[name], second[name], obj=name)


def test_the_floor_is_study_11s_calibration_at_the_size_nearest_the_typical_line(processed, computed):
    tables, figures = computed
    floors = tables["write_floor"]
    timed = pd.read_csv(processed / findings.CALIBRATION_FILE)
    typical = regression.typical_record_bytes(report.regression_findings(report.load_studies(processed)[0]).prepared)
    assert list(floors["target"]) == ["file", "pipe"] and list(floors.columns) == findings.FLOOR_COLUMNS
    for _, f in floors.iterrows():
        rows = timed[(timed["part"] == "write_floor") & (timed["target"] == f["target"])]
        nearest = rows.iloc[(rows["nbytes"] - typical).abs().argmin()]
        assert (f["nbytes"], f["median_us"], f["ci_low"], f["ci_high"], f["batches"]) == (
            nearest["nbytes"], nearest["value"], nearest["ci_low"], nearest["ci_high"], nearest["n"])
    assert _floor_labels(figures) == {"one write() to a pipe", "one write() to a file"}


def test_without_study_11s_calibration_no_floor_is_drawn(processed, tmp_path):
    copy = tmp_path / "processed"
    shutil.copytree(processed, copy)
    (copy / findings.CALIBRATION_FILE).unlink()
    tables, figures = report.compute_findings(copy)
    assert tables["write_floor"].empty and list(tables["write_floor"].columns) == findings.FLOOR_COLUMNS
    assert _floor_labels(figures) == set() and any(name.startswith("line_cost_") for name in figures)
    assert "study 11's committed run" in report.floor_text(tables["write_floor"], tables["regression"])
