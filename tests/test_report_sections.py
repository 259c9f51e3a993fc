"""A report's section shown only where it applies to its run (logbench.studies.sections, issue 39), and the planner's
prediction beside what a run reached (issue 40): on hand-made tables, and on the committed runs (data/processed is
only read; a run directory is rebuilt under pytest's temporary directory)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from logbench import studies
from logbench.analyze import planning
from logbench.base import paths
from logbench.measure import switchwindows
from logbench.studies import recorded, sections
from logbench.studies.running import StudyResult, planned


def test_a_section_with_nothing_to_show_is_left_out_heading_and_all():
    assert sections.section("## Switches", "Per arm.", pd.DataFrame(), None, "  ") is None
    assert sections.section("## Switches", "Per arm.", pd.Series(dtype=float)) is None
    s = sections.section("## Switches", "Per arm.", pd.DataFrame(), pd.DataFrame({"arm": ["stderr"]}), "A note.")
    assert s is not None and s.markdown() == "## Switches\n\nPer arm."
    # only the parts with something to show, in their order
    assert [type(p).__name__ for p in s.parts] == ["DataFrame", "str"]
    # a paragraph of the section above has no heading of its own
    assert sections.section("", "Whether it did:", pd.DataFrame({"a": [1]})).markdown() == "Whether it did:"


def test_applies_decides_where_a_part_always_says_something():
    assert sections.section("## Versions", "Between servers.", "One server: nothing to compare.", applies=False) is None
    assert sections.section("## The pipe", "Pipe or file.", "- 2 clients: 0.44", applies=True).parts == (
        "- 2 clients: 0.44",)
    # applies=True cannot make a section of nothing
    assert sections.section("## Versions", "Between servers.", pd.DataFrame(), applies=True) is None


def test_a_figure_of_a_section_left_out_is_closed_not_shown():
    fig = plt.figure()
    assert plt.fignum_exists(fig.number)
    assert sections.section("## Contention", "Waits.", fig, applies=False) is None
    assert not plt.fignum_exists(fig.number)


def test_the_committed_block_run_has_no_switchback_section_and_the_switchback_run_has(tmp_path):
    def runs_of(stem):
        return recorded.load(recorded.committed_directory(stem, tmp_path / stem))[0]

    assert sections.section("## How the arms were switched", "", switchwindows.switch_table(
        runs_of("pg_audit_timing"))) is None
    shown = sections.section("## How the arms were switched", "", switchwindows.switch_table(
        runs_of("pg_audit_timing_switchback")))
    assert shown is not None and len(shown.parts[0]) > 0


def test_the_goal_sentence_is_read_from_the_table():
    table = pd.DataFrame({"level": ["clients=1", "clients=4", "clients=8"], "clients": [1, 4, 8],
                          "aa_hw": [0.035, 0.05, math.nan], "median_hw": [0.03, 0.02, 0.02]})
    text = planning.goal_text(table, "pg_destinations")
    assert text.startswith("The resolution goal (A/A ≤ ±0.030 (±0.040 at 1 client), median overhead ≤ ±0.035)")
    # 1 client holds ±0.035 against its own ±0.040; 4 clients misses on the A/A; 8 cannot be told
    assert "met at clients=1" in text and "missed at clients=4 (A/A ±0.050 > ±0.030)" in text
    assert "not known at clients=8" in text
    # 04 and 05 have a median goal only: their A/A is reported, never judged
    met = planning.goal_text(table.iloc[:2], "pg_audit_timing")
    assert met == "The resolution goal (median overhead ≤ ±0.040) was met at every level."
    assert planning.goal_text(table.iloc[:0], "pg_audit_timing") == ""
    # a miss that three decimals would print as the goal itself shows the digit that makes it one
    close = table.iloc[1:2].assign(aa_hw=0.0303)
    assert "clients=4 (A/A ±0.0303 > ±0.030)" in planning.goal_text(close, "pg_destinations")


# The committed runs that kept a prediction. 02's and 05's standard runs of 2026-11-28/29 kept none: the noise the
# planner would have read (their resolution runs) ran without a cpuidle driver, where the idle control did nothing;
# 05's 8-client block run (2026-11-29) predicted from 05's standard run, made under the driver.
PREDICTED_RUNS = [("pg_destinations_resolution", "pg_destinations", "resolution"),
                  ("pg_audit_timing_resolution_blocks", "pg_audit_timing", "resolution_blocks")]


@pytest.mark.parametrize("stem,name,profile", PREDICTED_RUNS)
def test_a_committed_runs_planned_section_is_its_planned_table(stem, name, profile, tmp_path):
    """The committed render's run directory carries the prediction the run made when it started; what it reached,
    computed again from its kept records, is the committed <stem>_planned.csv."""
    d = recorded.committed_directory(stem, tmp_path / "run")
    committed = pd.read_csv(paths.PROCESSED / f"{stem}_planned.csv")
    assert list(pd.read_csv(d / recorded.PLANNED).columns) == planning.PREDICTED_COLUMNS
    module = studies.module(name)
    study = module.define(profile=profile, backend="local", output_dir=str(d))
    runs, env, switches = recorded.load(d)
    result = StudyResult(study, runs, env, switches)
    table = planned(result)
    assert list(table["level"]) == list(committed["level"])
    for col in ("pred_aa_hw", "pred_median_hw", "aa_hw", "median_hw"):
        assert table[col].tolist() == pytest.approx(committed[col].tolist(), rel=1e-5), col
    s = sections.planned_section(result)
    assert s is not None and s.heading == sections.PLANNED_HEADING
    shown, goal = s.parts
    assert list(shown.columns) == ["schedule", "noise from", "A/A predicted", "A/A reached", "median predicted",
                                   "median reached"]
    assert goal == planning.goal_text(table, name) and goal.startswith("The resolution goal")


def test_a_run_without_a_prediction_has_no_planned_section(tmp_path):
    """04's committed run started before the planner: no planned.csv in its run directory, no section."""
    d = recorded.committed_directory("mysql_slowlog", tmp_path / "run")
    assert not (d / recorded.PLANNED).exists()
    study = studies.module("mysql_slowlog").define(profile="standard", backend="local", output_dir=str(d))
    runs, env, switches = recorded.load(d)
    result = StudyResult(study, runs, env, switches)
    assert not len(planned(result)) and sections.planned_section(result) is None


def test_a_mariadb_runs_reached_half_widths_are_per_sysbench_test(tmp_path):
    """The planner predicts per level of the committed processed runs, where a MariaDB run's sysbench test is a
    column (the raw records keep it in ``workload``): what the run reached is fitted on the same table, per test and
    clients level (04's resolution run wrote empty reached half-widths before: its raw runs pooled both tests)."""
    module = studies.module("mysql_slowlog")
    cells = module.define(profile="resolution", backend="local").cell_names
    d = recorded.committed_directory("mysql_slowlog_resolution", tmp_path / "run", cells=cells)
    if not (d / recorded.PLANNED).is_file():
        # The committed run had no prediction (the noise the planner reads ran on another host): a stand-in with
        # one row per level of the committed processed runs, as the planner writes them, so the render fits what
        # the run reached on the same table
        levels = planning.reached(pd.read_csv(paths.PROCESSED / "mysql_slowlog_resolution_runs.csv"),
                                  baseline="off")["level"]
        pd.DataFrame({c: levels if c == "level" else math.nan for c in planning.PREDICTED_COLUMNS}).to_csv(
            d / recorded.PLANNED, index=False)
    study = module.define(profile="resolution", backend="local", recorded=str(d), output_dir=str(tmp_path / "out"))
    result = module.run(study, progress=False)
    table = planned(result)
    predicted = pd.read_csv(d / recorded.PLANNED)
    assert list(table["level"]) == list(predicted["level"]) and all("test=" in level for level in table["level"])
    assert table[["aa_hw", "median_hw"]].notna().all().all()
    runs = pd.read_csv(Path(study.processed_dir) / f"{study.name}_runs.csv")
    again = planning.reached(runs, baseline=study.baseline).set_index("level").loc[table["level"]]
    assert table["aa_hw"].tolist() == pytest.approx(again["aa_hw"].tolist(), rel=1e-5)


def _findings_cell(heading: str) -> str:
    """The code cell of notebooks/90_findings.ipynb that builds the section ``heading``."""
    import nbformat

    nb = nbformat.read(paths.NOTEBOOKS / "90_findings.ipynb", as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code" and heading in c.source]
    assert len(cells) == 1, f"one code cell of 90_findings builds {heading!r}"
    assert not any(c.cell_type == "markdown" and heading in c.source for c in nb.cells), "its heading is code only"
    return cells[0]


def _side_by_side(studies_data) -> object:
    """What 90_findings' cell of the environments shows (its last expression) for ``studies_data``."""
    import ast

    from logbench.publish import report

    tree = ast.parse(_findings_cell("## Studies measured on more than one machine"))
    *body, last = tree.body
    scope = {"report": report, "sections": sections, "studies": studies_data}
    exec(compile(ast.Module(body, []), "90_findings", "exec"), scope)
    return eval(compile(ast.Expression(last.value), "90_findings", "eval"), scope)


def test_findings_leave_out_the_side_by_side_section_when_every_study_ran_on_one_environment():
    """The committed data: every study on one environment, so 90_findings shows no heading, no paragraph and no
    'nothing to set side by side' there (issue 39)."""
    from logbench.publish import report

    committed, _ = report.load_studies(paths.PROCESSED)
    assert report.environment_ratios(committed) == {}
    assert _side_by_side(committed) is None


def test_findings_show_a_study_measured_on_two_environments_side_by_side():
    from logbench.analyze.claims import StudyData

    summary = pd.DataFrame({
        "configuration": ["none", "stderr"] * 2, "clients": [2] * 4, "host": ["a", "a", "b", "b"],
        "env_id": ["e1", "e1", "e2", "e2"], "n": [3] * 4, "ratio": [1.0, 0.9, 1.0, 0.8],
        "ratio_ci_low": [1.0, 0.85, 1.0, 0.75], "ratio_ci_high": [1.0, 0.95, 1.0, 0.85]})
    data = {"s": StudyData("s", "postgresql", "none", pd.DataFrame(), summary)}
    shown = _side_by_side(data)
    assert shown is not None and shown.heading == "## Studies measured on more than one machine"
    sentence, name, table = shown.parts
    assert sentence.startswith("Measured on more than one environment") and name == "**s**"
    assert sorted(c for c in table.columns if " · " in c) == ["a · e1", "b · e2"]
