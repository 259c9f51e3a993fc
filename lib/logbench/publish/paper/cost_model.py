"""The paper's section on the cost model (issue 42): the model, its held-out accuracy against the issue's goals, the
fitted factors, a DBA's per-record table and the cells it misses with the term it lacks, each read from the
``findings_cost_model*.csv`` tables that 90_findings writes (:mod:`logbench.analyze.costmodel`; the misses, the
named terms and the switch's prices :mod:`logbench.analyze.costterms`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...analyze.daemons import CEILING_SIG, chosen
from ...base.formatting import CI, ci_text, number, rounded
from .guide import CEILING, CEILINGS, PG, RULE
from .tables import add_table

CELLS = "findings_cost_model.csv"
SUMMARY = "findings_cost_model_summary.csv"
FACTORS = "findings_cost_model_factors.csv"
MISSES = "findings_cost_model_misses.csv"
TERMS = "findings_cost_model_terms.csv"
PRICES = "findings_cost_model_switch_prices.csv"
# The daemons whose one-core ceiling timed in study 02 the text sets against the fitted model's: one destination each,
# the guide's worked examples (the guide's table gives every destination's pair)
COMPARED = (("stderr", "the logging collector (stderr)"), ("syslog", "the local rsyslogd (syslog)"))
VARIANTS = ("counted", "fitted")
PROCESS_WORDS = {"loader": "the backend (MariaDB: the connection thread)", "collector": "the logging collector",
                 "syslog": "the syslog daemon (and a receiver on the same cores)"}


def _summary_table(s: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"model": s["model"], "fitted on": s["fitted_on"], "study": s["study"],
                         "judged cells": s["judged_cells"].astype(int).astype(str),
                         "median |error|": [number(v, 2) for v in s["median_abs_error"]],
                         "in the measured CI (%)": [number(100 * v, 2) for v in s["in_ci_share"]],
                         "an exact model's median |error|": [number(v, 2) for v in s["exact_model_median_abs_error"]],
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
        "records/s one daemon core holds, counted": [rounded(v, CEILING_SIG) if pd.notna(v) else "–"
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


def _groups_table(m: pd.DataFrame) -> pd.DataFrame:
    """The fitted model's judged cells by group: where it misses, beside what an exact model would show there."""
    g = m[m["model"] == "fitted"]
    return pd.DataFrame({
        "by": g["dimension"].to_numpy(), "group": g["group"].to_numpy(),
        "cells": g["judged_cells"].astype(int).astype(str).to_numpy(),
        "median |error|": [number(v, 2) for v in g["median_abs_error"]],
        "exact model": [number(v, 2) for v in g["exact_model_median_abs_error"]],
        "mean error": [number(v, 2) for v in g["mean_error"]],
        "in CI (%)": [number(100 * v, 2) for v in g["in_ci_share"]],
        "µs per transaction: modelled / measured CPU / implied": [
            " / ".join(number(v, 2) if pd.notna(v) else "–" for v in row) for row in
            zip(g["modelled_added_us_per_tx"], g["measured_added_cpu_us_per_tx"], g["implied_added_us_per_tx"])],
        "missed: the term most lack": [f"{int(k)}: {t}" if k else "0"
                                       for k, t in zip(g["missed"], g["main_term"].fillna(""))]})


# Groups whose figures the text states where the committed cells have them: (key, dimension, group)
NAMED_GROUPS = (("above", "clients per core", "above 1"), ("one", "clients per core", "1"),
                ("below", "clients per core", "below 1"), ("pg", "engine", "PostgreSQL"),
                ("maria", "engine", "MariaDB"), ("syslog", "destination", "local syslog"),
                ("switchback", "design", "switchback"), ("blocks", "design", "blocks"))


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
    doc["cost_model"] = {"summary": "", "rule": "", "missed": "", "records": "", "groups": "", "not_computed": "",
                         "processes": [], "named": [], "exact_above_goal": False, "has_mariadb": False,
                         "terms": "", "prices": "", "term_keys": [], "estimators": [], "price_passes": False,
                         "counted_one_term_would_pass": False, "fitted_one_term_would_pass": False,
                         "counted_priced_term_passes": False, "fitted_priced_term_passes": False,
                         "exact_passes": [], "prices_below_implied": False, "ceilings": []}
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
    if (processed_dir / CEILINGS).exists():
        doc["cost_model"]["ceilings"] = ceilings_compared(pd.read_csv(processed_dir / CEILINGS), rule, nums)
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
    for col, sig in (("host_cpu_per_statement_us", 3), ("calibration_cpu_per_statement_us", 3),
                     ("calibration_instructions_per_statement", 3)):
        nums.add(f"cm.{col}", {"kind": "cell", "source": FACTORS, "where": first, "column": col, "sig": sig})
    # MariaDB's own time per instruction (its baseline's CPU over its counted instructions), where it was computed
    if "mariadb_host_speed" in factors.columns and factors["mariadb_host_speed"].notna().any():
        doc["cost_model"]["has_mariadb"] = True
        nums.add("cm.mariadb_us_per_instruction", {"kind": "scale", "factor": 1000, "sig": 3, "of": {
            "kind": "cell", "source": FACTORS, "where": first, "column": "mariadb_us_per_instruction"}})
        for col in ("mariadb_host_speed", "mariadb_cpu_per_statement_us", "mariadb_instructions_per_statement"):
            nums.add(f"cm.{col}", {"kind": "cell", "source": FACTORS, "where": first, "column": col, "sig": 3})
        nums.add("cm.mariadb_cpu", {"kind": "cell", "source": FACTORS, "where": first, "column": "mariadb_cpu"})
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
        if "exact_model_median_abs_error" in summary.columns:
            for col, key in (("exact_model_median_abs_error", "exact"), ("exact_model_ci_low", "exact_low"),
                             ("exact_model_ci_high", "exact_high")):
                nums.add(f"cm.{v}.{key}", {"kind": "cell", "source": SUMMARY, "where": where, "column": col, "sig": 2})
    nums.add("cm.goal.mae", {"kind": "cell", "source": SUMMARY, "where": {"model": "fitted", "study": "all"},
                             "column": "goal_median_abs_error", "sig": 2})
    nums.add("cm.goal.in_ci", {"kind": "scale", "factor": 100, "sig": 2,
                               "of": {"kind": "cell", "source": SUMMARY, "where": {"model": "fitted", "study": "all"},
                                      "column": "goal_in_ci_share"}})
    nums.add("cm.missed", {"kind": "agg", "source": CELLS, "agg": "count",
                           "where": {"model": "fitted", "judged": True, "in_ci": False}})
    groups = processed_dir / MISSES
    if groups.exists():
        _groups_section(doc, gen, nums, pd.read_csv(groups), summary)
    if (processed_dir / TERMS).exists() and (processed_dir / PRICES).exists():
        _terms_section(doc, gen, nums, pd.read_csv(processed_dir / TERMS), pd.read_csv(processed_dir / PRICES))


def _ends(low, high) -> tuple[float, float]:
    """An interval's ends with an open end as what it is: no upper end (daemons.one_core prints none where the time's
    interval reaches near 0) reaches to infinity, no lower end down to 0."""
    return (float(low) if pd.notna(low) else 0.0), (float(high) if pd.notna(high) else np.inf)


def ceilings_compared(ceilings: pd.DataFrame, rule: pd.DataFrame, nums) -> list[dict]:
    """Per daemon of :data:`COMPARED` that both tables price: its one-core ceiling timed in study 02 (the level where
    it took the most records) and the fitted model's, each with its interval, and the timed over the fitted, all
    registered with their provenance; ``overlap`` whether the two intervals share any value (an open end reaching as
    far as it may: :func:`_ends`). Where they overlap these runs do not tell the two apart, and the text says so
    instead of reading the ratio as a difference."""
    out = []
    for conf, words in COMPARED:
        timed = chosen(ceilings, PG, conf)
        fitted = rule[(rule["engine"] == "postgresql") & (rule["configuration"] == conf) & (rule["model"] == "fitted")]
        if timed is None or len(fitted) != 1 or not pd.notna(fitted["daemon_records_per_s"].iloc[0]):
            continue
        f = fitted.iloc[0]
        key = f"cm.ceil.{conf}"
        t_at = {"stem": PG, "configuration": conf, "chosen": True}
        f_at = {"engine": "postgresql", "configuration": conf, "model": "fitted"}
        t_spec = {"kind": "cell", "source": CEILINGS, "where": t_at, "column": "records_per_s_one_core"}
        f_spec = {"kind": "cell", "source": RULE, "where": f_at, "column": "daemon_records_per_s"}
        nums.add(f"{key}.timed", {**t_spec, **CEILING})
        nums.add(f"{key}.fitted", {**f_spec, **CEILING})
        for end in ("ci_low", "ci_high"):
            nums.add(f"{key}.timed_{end}", {**t_spec, "column": f"records_per_s_one_core_{end}", **CEILING},
                     optional=True)
            nums.add(f"{key}.fitted_{end}", {**f_spec, "column": f"daemon_records_per_s_{end}", **CEILING},
                     optional=True)
        nums.add(f"{key}.timed_clients", {**t_spec, "column": "clients", "int": True})
        nums.add(f"{key}.timed_n", {**t_spec, "column": "n", "int": True})
        nums.add(f"{key}.ratio", {"kind": "div", "a": t_spec, "b": f_spec, "sig": 2})
        t_lo, t_hi = _ends(timed["records_per_s_one_core_ci_low"], timed["records_per_s_one_core_ci_high"])
        f_lo, f_hi = _ends(f.get("daemon_records_per_s_ci_low"), f.get("daemon_records_per_s_ci_high"))
        out.append({"key": key, "configuration": conf, "words": words,
                    "overlap": bool(max(t_lo, f_lo) <= min(t_hi, f_hi))})
    return out


def _terms_table(t: pd.DataFrame) -> pd.DataFrame:
    """The fitted model's named missing terms: their cells, what each could buy at most, its price and need."""
    g = t[t["model"] == "fitted"]

    def held(mae, share) -> str:
        return f"{number(mae, 3)} / {number(100 * share, 3)} %" if pd.notna(mae) else "–"

    return pd.DataFrame({
        "term": g["what"].to_numpy(), "cells": g["cells"].astype(int).astype(str).to_numpy(),
        "median |error| / in CI there": [held(a, b) for a, b in zip(g["median_abs_error"], g["in_ci_share"])],
        "exact model there": [number(v, 2) for v in g["exact_model_median_abs_error"]],
        "all cells if these were exact": [held(a, b) for a, b in zip(g["if_exact_median_abs_error"],
                                                                      g["if_exact_in_ci_share"])],
        "priced outside the judged cells / implied by them": [
            f"{number(a, 2)} / {number(b, 2)} {u}" if pd.notna(a) else "–"
            for a, b, u in zip(g["priced"], g["implied"], g["unit"].fillna(""))],
        "all cells with the term so priced": [held(a, b) for a, b in zip(g["with_term_median_abs_error"],
                                                                          g["with_term_in_ci_share"])]})


def _prices_table(p: pd.DataFrame) -> pd.DataFrame:
    """A backend's voluntary switch priced from the baselines by each estimator, and the held-out figures with it."""
    a = p[p["study"] == "all"]
    rows = []
    for est, g in a.groupby("estimator", sort=False):
        r = g.set_index("model")
        rows.append({"estimator": est, "runs": str(int(g["runs"].iloc[0])),
                     f"µs per switch [{CI}]": ci_text(g["price_us"].iloc[0], g["price_ci_low"].iloc[0],
                                                      g["price_ci_high"].iloc[0], sig=2),
                     **{f"{m}: median |error| / in CI": f"{number(r.loc[m, 'median_abs_error'], 3)} / "
                                                       f"{number(100 * r.loc[m, 'in_ci_share'], 3)} %"
                        for m in VARIANTS if m in r.index}})
    return pd.DataFrame(rows)


# The named terms' keys in the paper's numbers (the table's "all four" as "all"), and their cells in words
TERM_KEYS = {"wake": "wake", "mutex": "mutex", "table": "table", "switchback": "switchback", "all four": "all"}
_EXACT = ("if_exact_median_abs_error", "if_exact_in_ci_share")
# The fitted model's figures of each term that the text states
TERM_NUMBERS = {"wake": ("cells", "median_abs_error", "in_ci_share", *_EXACT, "implied"),
                "mutex": ("cells", "median_abs_error", *_EXACT, "priced", "implied", "with_term_median_abs_error",
                          "with_term_in_ci_share"),
                "table": ("cells", "median_abs_error", "priced", "implied", *_EXACT),
                "switchback": ("cells", "median_abs_error", "in_ci_share", "exact_model_median_abs_error", *_EXACT),
                "all four": _EXACT}
TERM_WORDS = {"wake": "PostgreSQL's local syslog cells above one client per core",
              "mutex": "MariaDB's slow log to a file above one connection", "table": "the slow log to its table",
              "switchback": "the switchback cells"}


def _terms_section(doc: dict, gen: Path, nums, t: pd.DataFrame, p: pd.DataFrame) -> None:
    """The named missing terms: the table, each one's figures, and the switch's prices with the model at each."""
    fitted = t[t["model"] == "fitted"]
    if fitted.empty:
        return
    doc["cost_model"]["terms"] = add_table(doc, gen, _terms_table(t), "cost_model_terms")
    doc["cost_model"]["prices"] = add_table(doc, gen, _prices_table(p), "cost_model_switch_prices") if len(p) else ""
    doc["cost_model"]["term_keys"] = []
    for term, key in TERM_KEYS.items():
        if not (fitted["term"] == term).any():
            continue
        doc["cost_model"]["term_keys"].append(key)
        row = fitted[fitted["term"] == term].iloc[0]
        where = {"model": "fitted", "term": term}
        for col in TERM_NUMBERS[term]:
            if pd.isna(row[col]):
                continue
            spec = {"kind": "cell", "source": TERMS, "where": where, "column": col}
            if col == "cells":
                spec["int"] = True
            elif col.endswith("in_ci_share"):
                spec = {"kind": "scale", "factor": 100, "sig": 3, "of": spec}
            else:
                spec["sig"] = 3 if col.startswith(("if_exact", "with_term")) else 2
            nums.add(f"cm.t.fitted.{key}.{col}", spec)
    doc["cost_model"]["exact_passes"] = [TERM_WORDS[k] for k in fitted.loc[
        fitted["if_exact_goals_met"].astype(bool) & fitted["term"].isin(TERM_WORDS), "term"]]
    wake = fitted[fitted["term"] == "wake"]
    implied = float(wake["implied"].iloc[0]) if len(wake) else float("nan")
    prices = p.drop_duplicates("estimator")["price_us"]
    doc["cost_model"]["prices_below_implied"] = bool(len(prices) and (prices < implied).all())
    for model in VARIANTS:
        g = fitted if model == "fitted" else t[t["model"] == model]
        one = g[g["term"] != "all four"]
        doc["cost_model"][f"{model}_one_term_would_pass"] = bool(one["if_exact_goals_met"].astype(bool).any())
        doc["cost_model"][f"{model}_priced_term_passes"] = bool(
            one["with_term_goals_met"].map(lambda v: str(v) == "True").any())
    a = p[(p["study"] == "all")]
    doc["cost_model"]["estimators"] = []
    for i, est in enumerate(dict.fromkeys(a["estimator"])):
        doc["cost_model"]["estimators"].append(f"e{i}")
        # the text states each price (the first with its interval), the fitted model's figures with it and the
        # counted model's median error
        fit, cnt = ({"estimator": est, "study": "all", "model": m} for m in ("fitted", "counted"))
        for col in ("price_us", *(("price_ci_low", "price_ci_high") if i == 0 else ())):
            nums.add(f"cm.p.e{i}.fitted.{col}", {"kind": "cell", "source": PRICES, "where": fit, "column": col,
                                                 "sig": 2})
        for model, where in (("fitted", fit), ("counted", cnt)):
            nums.add(f"cm.p.e{i}.{model}.median_abs_error", {"kind": "cell", "source": PRICES, "where": where,
                                                             "column": "median_abs_error", "sig": 3})
        nums.add(f"cm.p.e{i}.fitted.in_ci_share", {"kind": "scale", "factor": 100, "sig": 3, "of": {
            "kind": "cell", "source": PRICES, "where": fit, "column": "in_ci_share"}})
        nums.add(f"cm.p.e{i}.name", {"kind": "cell", "source": PRICES, "where": {"estimator": est, "study": "all",
                                                                               "model": "fitted"},
                                     "column": "estimator"})
    doc["cost_model"]["price_passes"] = bool(a["goals_met"].map(lambda v: str(v) == "True").any())


def _groups_section(doc: dict, gen: Path, nums, m: pd.DataFrame, summary: pd.DataFrame) -> None:
    """The fitted model's misses by group: the table, the largest group's figures and the named groups'."""
    fitted = m[m["model"] == "fitted"]
    if fitted.empty:
        return
    doc["cost_model"]["groups"] = add_table(doc, gen, _groups_table(m), "cost_model_groups")
    s = summary[(summary["model"] == "fitted") & (summary["study"] == "all")]
    if "exact_model_median_abs_error" in s.columns and len(s):
        doc["cost_model"]["exact_above_goal"] = bool(s["exact_model_median_abs_error"].iloc[0]
                                                     > s["goal_median_abs_error"].iloc[0])
    cols = (("dimension", None), ("group", None), ("judged_cells", "int"), ("median_abs_error", 2),
            ("exact_model_median_abs_error", 2), ("mean_error", 2), ("main_term", None), ("missed", "int"),
            ("modelled_added_us_per_tx", 2), ("measured_added_cpu_us_per_tx", 2), ("implied_added_us_per_tx", 2))
    named = [("worst", {"model": "fitted", "largest": True})] if fitted["largest"].astype(bool).any() else []
    named += [(k, {"model": "fitted", "dimension": d, "group": g}) for k, d, g in NAMED_GROUPS
              if ((fitted["dimension"] == d) & (fitted["group"] == g)).any()]
    for key, where in named:
        for col, how in cols:
            spec = {"kind": "cell", "source": MISSES, "where": where, "column": col}
            spec.update({"int": True} if how == "int" else {"sig": how} if how else {})
            nums.add(f"cm.g.{key}.{col}", spec)
        nums.add(f"cm.g.{key}.in_ci", {"kind": "scale", "factor": 100, "sig": 2, "of": {
            "kind": "cell", "source": MISSES, "where": where, "column": "in_ci_share"}})
        doc["cost_model"]["named"].append(key)
