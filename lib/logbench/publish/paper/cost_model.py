"""The paper's section on the cost model (issue 42): the model, its held-out accuracy against the issue's goals, the
fitted factors, a DBA's per-record table and the cells it misses with the term it lacks, each read from the
``findings_cost_model*.csv`` tables that 90_findings writes (:mod:`logbench.analyze.costmodel`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...base.formatting import CI, ci_text, number
from .tables import add_table

CELLS = "findings_cost_model.csv"
SUMMARY = "findings_cost_model_summary.csv"
FACTORS = "findings_cost_model_factors.csv"
RULE = "findings_cost_model_rule.csv"
VARIANTS = ("counted", "fitted")
PROCESS_WORDS = {"loader": "the backend (MariaDB: the connection thread)", "collector": "the logging collector",
                 "syslog": "the syslog daemon (and a receiver on the same cores)"}


def _summary_table(s: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"model": s["model"], "fitted on": s["fitted_on"], "study": s["study"],
                         "judged cells": s["judged_cells"].astype(int).astype(str),
                         "median |error|": [number(v, 2) for v in s["median_abs_error"]],
                         "in the measured CI (%)": [number(100 * v, 2) for v in s["in_ci_share"]],
                         "goals met": s["goals_met"].map({True: "yes", False: "no"})})


def _rule_table(r: pd.DataFrame) -> pd.DataFrame:
    counted, fitted = r[r["model"] == "counted"].reset_index(drop=True), r[r["model"] == "fitted"].reset_index(
        drop=True)

    def inst(row) -> str:
        parts = [number(row["loader_instructions_per_record"], 3)]
        for col in ("collector_instructions_per_record", "syslog_instructions_per_record"):
            parts.append(number(row[col], 3) if row[col] > 0.5 else "–")
        return " / ".join(parts)

    def split(row) -> str:
        parts = [number(row["loader_us_per_record"], 2)]
        for col in ("collector_us_per_record", "syslog_us_per_record"):
            parts.append(number(row[col], 2) if row[col] > 0.005 else "–")
        return " / ".join(parts)

    # the totals, the fitted ceiling and the records per statement are the guide's table (@sec-answer): here what
    # it does not print, the split over the processes and the ceiling with nothing fitted
    return pd.DataFrame({
        "destination": counted["what"],
        "instructions per record (thread / collector / syslog)": counted.apply(inst, axis=1),
        "µs per record, fitted (thread / collector / syslog)": fitted.apply(split, axis=1),
        "records/s one daemon core holds, counted": [number(v, 2) if pd.notna(v) else "–"
                                                     for v in counted["daemon_records_per_s"]]})


def _missed_table(c: pd.DataFrame) -> pd.DataFrame:
    m = c[(c["model"] == "fitted") & c["judged"].astype(bool) & (c["missing_term"].fillna("") != "")]
    cell = m["stem"] + (m["variant"].fillna("") + " " + m["test"].fillna("")).str.strip().map(
        lambda t: f" ({t})" if t else "")
    return pd.DataFrame({"table": cell.to_numpy(), "configuration": m["configuration"].to_numpy(),
                         "clients": m["clients"].astype(int).astype(str).to_numpy(),
                         "predicted": [number(v, 2) for v in m["predicted_ratio"]],
                         f"measured [{CI}]": [ci_text(a, b, h, sig=2) for a, b, h in
                                              zip(m["ratio"], m["ratio_ci_low"], m["ratio_ci_high"])],
                         "bound": m["binding"].to_numpy(), "the term it lacks": m["missing_term"].to_numpy()})


RECORDS = "findings_record_regression.csv"


def _records_table(t: pd.DataFrame) -> pd.DataFrame:
    """The records fit's pooled slopes: a cost where its interval lies above 0, else the status it is (a slope at or
    below 0 is no cost, whatever its interval), beside study 11's counted range."""
    m = t[t["model"] == "main"].reset_index(drop=True)

    def slope(r) -> str:
        text = ci_text(r["estimate"], r["ci_low"], r["ci_high"], sig=2)
        return text if r["status"] == "cost per record" else f"{r['status']} (slope {text})"

    def counted(r) -> str:
        if pd.isna(r["counted_low"]):
            return "–"
        span = number(r["counted_low"], 2) + ("" if r["counted_high"] == r["counted_low"]
                                               else f"–{number(r['counted_high'], 2)}")
        return span + (f" ({r['counted_note']})" if isinstance(r["counted_note"], str) and r["counted_note"] else "")

    return pd.DataFrame({"fit": m["fit"], "records to": m["family"], "clients": m["clients"].astype(str),
                         "runs": m["n"].astype(int).astype(str), "records per transaction to it": m["records_per_tx"],
                         f"machine µs per record [{CI}]": m.apply(slope, axis=1),
                         "counted µs per record (study 11)": m.apply(counted, axis=1)})


def cost_model_section(doc: dict, processed_dir: Path, gen: Path, nums) -> None:
    """``doc['cost_model']``: its tables' paths ('' until 90_findings wrote them) and the reason it was not computed
    ('' where it was); the numbers its text states are registered with their provenance."""
    doc["cost_model"] = {"summary": "", "rule": "", "missed": "", "records": "", "not_computed": "", "processes": []}
    paths = [processed_dir / f for f in (CELLS, SUMMARY, FACTORS, RULE)]
    if not all(p.exists() for p in paths):
        return
    cells, summary, factors, rule = (pd.read_csv(p) for p in paths)
    if summary.empty or "not computed" in set(summary["model"]):
        doc["cost_model"]["not_computed"] = str(summary["fitted_on"].iloc[0]) if len(summary) else "no data"
        return
    doc["cost_model"]["summary"] = add_table(doc, gen, _summary_table(summary), "cost_model_summary")
    doc["cost_model"]["rule"] = add_table(doc, gen, _rule_table(rule), "cost_model_rule")
    records = processed_dir / RECORDS
    table = _records_table(pd.read_csv(records, keep_default_na=False, na_values={c: [""] for c in (
        "estimate", "ci_low", "ci_high", "counted_low", "counted_high")})) if records.exists() else None
    doc["cost_model"]["records"] = add_table(doc, gen, table, "record_regression") if table is not None and len(
        table) else ""
    missed = _missed_table(cells)
    doc["cost_model"]["missed"] = add_table(doc, gen, missed, "cost_model_missed") if len(missed) else ""
    first = {"process": "loader"}
    for col, sig in (("us_per_instruction", 3), ("calibration_us_per_instruction", 3), ("host_speed", 3)):
        nums.add(f"cm.{col}", {"kind": "scale", "factor": 1000, "sig": sig,
                               "of": {"kind": "cell", "source": FACTORS, "where": first, "column": col}}
                 if col != "host_speed" else {"kind": "cell", "source": FACTORS, "where": first, "column": col,
                                              "sig": sig})
    for col in ("host_cpu", "calibration_cpu", "fitted_on"):
        nums.add(f"cm.{col}", {"kind": "cell", "source": FACTORS, "where": first, "column": col})
    for p in factors["process"]:
        for col, key in (("factor", "estimate"), ("ci_low", "ci_low"), ("ci_high", "ci_high")):
            nums.add(f"cm.factor.{p}.{key}", {"kind": "cell", "source": FACTORS, "where": {"process": p},
                                              "column": col, "sig": 2})
        doc["cost_model"]["processes"].append({"key": f"cm.factor.{p}", "words": PROCESS_WORDS.get(p, p)})
    for v in VARIANTS:
        where = {"model": v, "study": "all"}
        nums.add(f"cm.{v}.cells", {"kind": "cell", "source": SUMMARY, "where": where, "column": "judged_cells",
                                   "int": True})
        nums.add(f"cm.{v}.mae", {"kind": "cell", "source": SUMMARY, "where": where, "column": "median_abs_error",
                                 "sig": 2})
        nums.add(f"cm.{v}.in_ci", {"kind": "scale", "factor": 100, "sig": 2,
                                   "of": {"kind": "cell", "source": SUMMARY, "where": where,
                                          "column": "in_ci_share"}})
        doc["cost_model"][f"{v}_met"] = bool(summary[(summary["model"] == v) & (summary["study"] == "all")][
            "goals_met"].iloc[0])
    nums.add("cm.goal.mae", {"kind": "cell", "source": SUMMARY, "where": {"model": "fitted", "study": "all"},
                             "column": "goal_median_abs_error", "sig": 2})
    nums.add("cm.goal.in_ci", {"kind": "scale", "factor": 100, "sig": 2,
                               "of": {"kind": "cell", "source": SUMMARY, "where": {"model": "fitted", "study": "all"},
                                      "column": "goal_in_ci_share"}})
    nums.add("cm.missed", {"kind": "agg", "source": CELLS, "agg": "count",
                           "where": {"model": "fitted", "judged": True, "in_ci": False}})
