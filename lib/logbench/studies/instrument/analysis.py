"""Study 00 from its recorded runs to its processed tables and the statements the paper prints."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...base import records, stats
from ...base.formatting import ci_text
from .anomaly import anomaly_summary, anomaly_verdict, baseline_by_control, idle_driver
from .noise import (autocorrelation, cv_by_length, finding_floor, finding_run_length, per_run_controls,
                    run_length_table, series_frame)
from .spec import BASELINE, NAME, InstrumentResult


def write_processed(result: InstrumentResult, processed_dir: Path) -> dict[str, Path]:
    # The runs go to instrument_records.csv, not *_runs.csv: the findings read every *_runs.csv as a
    # logging study's, and these runs measure the machine.
    series = series_frame(result.series_runs)
    cv = cv_by_length(series)
    summary = anomaly_summary(result.anomaly_runs)
    return records.write_processed(NAME, processed_dir, result.environment, {
        "summary": summary,
        "findings": findings(series, cv, summary, result.anomaly_runs),
        "cv": run_length_table(cv),
        "acf": autocorrelation(series),
        "series": series,
        "controls": per_run_controls(result.series_runs),
        "baseline": baseline_by_control(result.anomaly_runs),
        "records": records.flatten(pd.concat([result.series_runs, result.anomaly_runs], ignore_index=True)),
        **designs_tables(result),
    })


def designs_tables(result: InstrumentResult) -> dict[str, pd.DataFrame]:
    """The designs part's tables (design_comparison), with its windows and runs as ``designs_records``."""
    if result.designs_runs is None or not len(result.designs_runs):
        return {}
    from . import design_comparison

    return {**design_comparison.comparison_tables(result.designs_runs, result.study.designs.study),
            "designs_records": records.flatten(result.designs_runs)}


def findings(series: pd.DataFrame, cv: pd.DataFrame, summary: pd.DataFrame, anomaly_runs: pd.DataFrame,
             target_halfwidth: float = 0.03, run_length_s: int = 4) -> pd.DataFrame:
    """The statements the paper prints (item, statement) from the noise curve (``series``, its ``cv``) and the
    anomaly test (its ``summary`` and runs), every number from this run's data; plain text (not markdown)."""
    def plain(text: str) -> str:
        return text.replace("**", "").replace("`", "").replace("- ", "", 1)

    rows = []
    at = cv[cv["run_length_s"] == run_length_s]
    if len(at):
        parts = [f"{r.control} at {r.clients} client(s) {100 * r.cv:.2g} % [{100 * r.cv_ci_low:.2g}, "
                 f"{100 * r.cv_ci_high:.2g}] ({r.windows} windows)" for r in at.itertuples()]
        rows.append({"item": "noise", "statement": f"CV of the mean throughput of a {run_length_s} s run (baseline, "
                     "95 % CI): " + "; ".join(parts) + "."})
    for line in finding_run_length(run_length_table(cv, target_halfwidth), target_halfwidth).splitlines():
        rows.append({"item": "run length", "statement": plain(line)})
    floor = finding_floor(cv, run_length_s, target_halfwidth=target_halfwidth)
    if floor:
        rows.append({"item": "floor", "statement": plain(floor)})
    base = baseline_by_control(anomaly_runs)
    for clients, g in base.groupby("clients"):
        parts = [f"{r.control}: {r.tps_mean:,.0f} tps [{r.tps_ci_low:,.0f}, {r.tps_ci_high:,.0f}], mean latency "
                 f"{r.latency_ms_mean:.3g} ms (n={r.n})" for r in g.itertuples()]
        rows.append({"item": "baseline", "statement": f"No logging at {clients} client(s): " + "; ".join(parts) + "."})
    for line in anomaly_verdict(summary, idle_driver(anomaly_runs)).splitlines():
        rows.append({"item": "anomaly", "statement": plain(line)})
    res = stats.resolution(summary, BASELINE)
    for r in res.itertuples():
        rows.append({"item": "A/A", "statement": f"A/A none_again/none with control {r.control} at {r.clients} "
                     f"client(s): {ci_text(r.aa_ratio, r.ci_low, r.ci_high, n=r.n)}, "
                     + ("contains 1." if r.contains_1 else "excludes 1.")})
    return pd.DataFrame(rows, columns=["item", "statement"])
