"""The paper's cost of a line: the write() floors (timed by study 11) and, per regression fit, its table, its figures
and the cost of a line per destination family (main model, typical line, without influential runs, per clients
level, as a multiple of the floor)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...analyze import regression
from ...analyze.claims import StudyData, fmt_p
from ..findings import FLOOR_FOR, FLOOR_WORDS, NOT_LINE_COST, cost_terms, fit_label, fit_slug
from .tables import add_figure, add_table
from ...base.formatting import CI, ci_text, number

REGRESSION = "findings_regression.csv"
REGRESSION_FIT = "findings_regression_fit.csv"
WRITE_FLOOR = "findings_write_floor.csv"


def costs_section(doc: dict, processed_dir: Path, gen: Path, nums, studies: dict[str, StudyData],
                  figures_dir: Path) -> None:
    """``doc['floors']``, ``doc['excluded_studies']`` and ``doc['engines']`` (one entry per fit) from the findings
    files written by 90_findings."""
    floors_section(doc, processed_dir, nums)
    doc["excluded_studies"] = [{"name": k, "why": v} for k, v in NOT_LINE_COST.items()]
    reg_file, fit_file = processed_dir / REGRESSION, processed_dir / REGRESSION_FIT
    if not (reg_file.exists() and fit_file.exists()):
        return
    coefs, diag = pd.read_csv(reg_file), pd.read_csv(fit_file)
    main_fits = diag[diag["model"] == "main"]
    order = [regression.text_column(main_fits, c) for c in regression.FIT_COLUMNS]
    # cached before IO-bound, one environment's fits together
    for key in main_fits.assign(_order=list(zip(*order))).sort_values("_order")["fit"]:
        d = diag[(diag["fit"] == key) & (diag["model"] == "main")].iloc[0]
        doc["engines"].append(fit_entry(doc, gen, nums, key, d, coefs[coefs["fit"] == key], studies, figures_dir))
    summary_table(doc, gen, nums, coefs, main_fits)


def summary_table(doc: dict, gen: Path, nums, coefs: pd.DataFrame, main_fits: pd.DataFrame) -> None:
    """Every fit in one table (the main text's; each fit's coefficients, figures and per-level costs go to the
    appendix): its runs, weighted R², a typical line's cost per destination family and a kilobyte's, with their
    intervals. A line cost whose interval lies below zero is printed as what it is, not as a cost: a transaction
    cannot get cheaper by logging, so such a term says the fit is wrong, not that logging pays."""
    doc["regression_summary"] = ""
    if not len(doc["engines"]):
        return
    where = {"model": "main"}
    nums.add("regression.r2.min", {"kind": "agg", "source": REGRESSION_FIT, "where": where, "column": "r2",
                                   "agg": "min", "sig": 2})
    nums.add("regression.r2.max", {"kind": "agg", "source": REGRESSION_FIT, "where": where, "column": "r2",
                                   "agg": "max", "sig": 2})
    nums.add("regression.fits", {"kind": "agg", "source": REGRESSION_FIT, "where": where, "agg": "count"})
    rows = []
    for e in doc["engines"]:
        key = next(k for k in main_fits["fit"] if fit_slug(k) == e["key"])
        d = main_fits[main_fits["fit"] == key].iloc[0]
        c = coefs[(coefs["fit"] == key) & (coefs["model"] == "main")]
        row = {"fit": e["label"], "runs": str(int(d["n"])), "weighted R²": number(d["r2"], 2)}
        for fam in regression.FAMILIES:
            t = c[c["term"] == regression.typical_term(fam)]
            t = t if len(t) else c[c["term"] == regression.family_term(fam)]
            if not len(t):
                row[regression.FAMILY_LABELS[fam]] = "–"
                continue
            r = t.iloc[0]
            text = ci_text(r["estimate"], r["ci_low"], r["ci_high"])
            row[regression.FAMILY_LABELS[fam]] = text + (" (below 0: not a cost)" if r["ci_high"] < 0 else "")
        kb = c[c["term"] == "kb_per_tx"]
        row["a kB"] = ci_text(kb.iloc[0]["estimate"], kb.iloc[0]["ci_low"], kb.iloc[0]["ci_high"]) if len(kb) else "–"
        rows.append(row)
    table = pd.DataFrame(rows)
    # a family no fit has is no column
    table = table.loc[:, [col for col in table.columns if (table[col] != "–").any()]]
    doc["regression_summary"] = add_table(doc, gen, table, "regression_summary")


def floors_section(doc: dict, processed_dir: Path, nums) -> None:
    """The write() floors 90_findings read from study 11's calibration (``doc['floors']``: their targets)."""
    floor_file = processed_dir / WRITE_FLOOR
    floors = pd.read_csv(floor_file) if floor_file.exists() else pd.DataFrame(columns=["target"])
    for t in floors["target"]:
        where = {"target": t}
        for col in ("median_us", "ci_low", "ci_high"):
            nums.add(f"floor.{t}.{col}", {"kind": "cell", "source": WRITE_FLOOR, "where": where, "column": col,
                                          "sig": 3})
        for col in ("nbytes", "batches", "batch") if t == "file" else ():
            nums.add(f"floor.{t}.{col}", {"kind": "cell", "source": WRITE_FLOOR, "where": where, "column": col,
                                          "int": True})
        doc["floors"].append(str(t))


def add_estimate(nums, key: str, where: dict) -> None:
    """Register ``key``.estimate/.ci_low/.ci_high: one coefficient of the regression with its CI."""
    for col in ("estimate", "ci_low", "ci_high"):
        nums.add(f"{key}.{col}", {"kind": "cell", "source": REGRESSION, "column": col, "sig": 3, "where": where})


def fit_entry(doc: dict, gen: Path, nums, key: str, d: pd.Series, c: pd.DataFrame, studies: dict[str, StudyData],
              figures_dir: Path) -> dict:
    """One fit (``c``: its coefficients, ``d``: its main model's diagnostics): its figure, its table, its numbers
    and one entry per destination family."""
    slug = fit_slug(key)
    e = {"key": slug, "engine": str(d["engine"]), "env_id": str(d["env_id"]), "studies": str(d["studies"]),
         "figure_fit": add_figure(doc, figures_dir, f"regression_{slug}"), "families": [],
         "label": fit_label(d, studies)}
    shown = c[~c["term"].str.startswith("baseline ")].assign(
        estimate=lambda x: [ci_text(a, b, h) for a, b, h in zip(x["estimate"], x["ci_low"], x["ci_high"])],
        p=lambda x: [fmt_p(v) for v in x["p"]])[["model", "term", "unit", "estimate", "p"]]
    e["table"] = add_table(doc, gen, shown.rename(columns={"estimate": f"estimate [{CI}]"}), f"regression_{slug}")
    fit_where = {"fit": key, "model": "main"}
    for col, sig in (("n", None), ("r2", 2), ("n_influential", None)):
        spec = {"kind": "cell", "source": REGRESSION_FIT, "where": fit_where, "column": col}
        spec.update({"sig": sig} if sig else {"int": True})
        nums.add(f"{slug}.fit.{col}", spec)
    nums.add(f"{slug}.formula", {"kind": "cell", "source": REGRESSION_FIT, "where": fit_where, "column": "formula"})
    e["has_kb"] = bool(len(c[(c["model"] == "main") & (c["term"] == "kb_per_tx")]))
    for fam in [f for f in regression.FAMILIES if ((c["model"] == "main") & (c["family"] == f)).any()]:
        e["families"].append(family_entry(doc, nums, key, e["engine"], c, fam, figures_dir))
    if e["has_kb"]:
        add_estimate(nums, f"{slug}.kb", {"fit": key, "model": "main", "term": "kb_per_tx"})
    return e


def family_entry(doc: dict, nums, key: str, engine: str, c: pd.DataFrame, fam: str, figures_dir: Path) -> dict:
    """The cost of a line to one destination family in one fit: the main model's line term, the typical line's,
    without the influential runs, per clients level and as a multiple of its floor."""
    slug, term = fit_slug(key), regression.family_term(fam)
    fk = f"{slug}.{fam}"
    fe = {"family": fam, "label": regression.FAMILY_LABELS[fam], "key": fk, "levels": [],
          "figure": add_figure(doc, figures_dir, f"line_cost_{slug}_{fam}"), "floor": "", "robust": False,
          "typical": ""}
    add_estimate(nums, fk, {"fit": key, "model": "main", "term": term})
    typical = {"fit": key, "model": "main", "term": regression.typical_term(fam)}
    if ((c["model"] == "main") & (c["term"] == typical["term"])).any():
        fe["typical"] = f"{fk}.typical"
        add_estimate(nums, f"{fk}.typical", typical)
        nums.add(f"{fk}.typical.bytes", {"kind": "cell", "source": REGRESSION, "column": "bytes", "sig": 3,
                                         "where": typical})
    # A coefficient at or below zero is no cost (issue 42): the bare line term is a line of zero bytes, an
    # extrapolation; the paper says so beside its number instead of printing it in µs as what a line costs.
    def below_zero(t: str) -> bool:
        row = c[(c["model"] == "main") & (c["term"] == t)]
        return bool(len(row)) and not float(row.iloc[0]["estimate"]) > 0

    fe["line_below_zero"] = below_zero(term)
    fe["typical_below_zero"] = bool(fe["typical"]) and below_zero(typical["term"])
    if len(c[(c["model"] == regression.WITHOUT_INFLUENTIAL) & (c["term"] == term)]):
        fe["robust"] = True
        add_estimate(nums, f"{fk}.robust", {"fit": key, "model": regression.WITHOUT_INFLUENTIAL, "term": term})
    # per level: the typical line where the fit has one (what the abstract and the figure show)
    level_term, per = cost_terms(c, fam)
    fe["levels_typical"] = level_term != term
    for k in per["clients"].astype(int):
        add_estimate(nums, f"{fk}.at{k}", {"fit": key, "model": "per_clients", "term": f"{level_term} @ {k} clients"})
        fe["levels"].append({"clients": int(k), "key": f"{fk}.at{k}"})
    # the floor is one write() of a typical line's size: the typical line is what it is set against
    over_floor(doc, nums, fe, key, engine, c, typical["term"] if fe["typical"] else term)
    return fe


def over_floor(doc: dict, nums, fe: dict, key: str, engine: str, c: pd.DataFrame, cost_term: str) -> None:
    """The family's cost as a multiple of the write() floor it is set against (:data:`FLOOR_FOR`), registered
    only for a cost distinguishable from zero: a multiple of the floor means nothing otherwise."""
    target = FLOOR_FOR.get((engine, fe["family"]))
    main_row = c[(c["model"] == "main") & (c["term"] == cost_term)]
    if target and target in doc["floors"] and float(main_row["ci_low"].iloc[0]) > 0:
        fe["floor"] = target
        fe["floor_words"] = FLOOR_WORDS[target]
        nums.add(f"{fe['key']}.over_floor", {
            "kind": "div", "sig": 2,
            "a": {"kind": "cell", "source": REGRESSION, "column": "estimate",
                  "where": {"fit": key, "model": "main", "term": cost_term}},
            "b": {"kind": "cell", "source": WRITE_FLOOR, "column": "median_us", "where": {"target": target}}})
