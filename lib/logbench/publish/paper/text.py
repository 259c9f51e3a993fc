"""How the paper and the findings notebook print an estimate and its confidence interval.

Estimates print through :mod:`logbench.base.formatting` (``ci_text``: 'mean [low, high]', the tables' form;
``ci_words``: the same estimate in a sentence; ``cell_text`` is ``formatting.number``). :func:`effect_cell` says in
a study table whether a ratio reads as an effect (``stats.effect_reading``). The notebook's sentences
(:func:`regression_text`, :func:`floor_text`,
:func:`claims_text`) and its display tables (:func:`display_table`) print through them.
"""

from __future__ import annotations

import math

import pandas as pd

from ...analyze import claims as claims_mod
from ...analyze import regression
from ..findings import CALIBRATION_FILE, FLOOR_FOR, FLOOR_WORDS, cost_terms
from ...base.formatting import CI, ci_text, ci_words
from ...base.formatting import number as cell_text
from ...base.formatting import undefined as _undefined
from ...base.settings import is_aa
from ...base.stats import EFFECT



def aa_band(reach: float) -> str:
    """The ratios an A/A's reach (:func:`logbench.base.stats.aa_reach`) leaves unread: 'low–high' around 1."""
    if _undefined(reach):
        return "—"
    if math.isinf(reach):
        return "unbounded"
    return f"{cell_text(math.exp(-reach))}–{cell_text(math.exp(reach))}"


def effect_cell(configuration: str, baseline: str, effect: str, reach: float) -> str:
    """A study table's effect column: 'yes', or 'no: why' (:func:`logbench.base.stats.effect_reading`); the A/A row
    gives the band of ratios its spread leaves unread, the baseline row a dash."""
    if configuration == baseline:
        return "—"
    if is_aa(configuration):
        return f"A/A spread {aa_band(reach)}"
    return "yes" if effect == EFFECT else f"no: {effect}"


# --- sentences for the notebook (numbers printed from data, never typed) -------------------------------------


def _fit_paragraph(c: pd.DataFrame, d: pd.Series) -> str:
    """One fit's paragraph: the cost of a line per destination family and per level, of a kB, the fit."""
    def est(r) -> str:
        # a coefficient at or below zero is said to be no cost, never printed as what a line costs (issue 42)
        text = ci_words(r["estimate"], r["ci_low"], r["ci_high"])
        return text if r["estimate"] > 0 else f"{text}, at or below zero: no cost a line can have, not a finding"

    parts = [f"**{d['engine']}, environment {d['env_id']}** ({d['studies']}; {int(d['n'])} runs, "
             f"weighted R² = {cell_text(d['r2'], 2)}, {d['cov_type']} standard errors)"]
    for fam in regression.FAMILIES:
        main = c[(c["model"] == "main") & (c["term"] == regression.family_term(fam))]
        if not len(main):
            continue
        typical = c[(c["model"] == "main") & (c["term"] == regression.typical_term(fam))]
        _, per = cost_terms(c, fam)
        levels = "; ".join(f"{int(r['clients'])} clients: {est(r)}" for _, r in per.iterrows())
        parts.append((f"a typical line to {regression.FAMILY_LABELS[fam]} ({cell_text(typical.iloc[0]['bytes'])} bytes) "
                      f"costs {est(typical.iloc[0])}, its line term " if len(typical) else
                      f"a line to {regression.FAMILY_LABELS[fam]} costs ")
                     + est(main.iloc[0]) + (f" (per level — {levels})" if levels else ""))
    kb = c[(c["model"] == "main") & (c["term"] == "kb_per_tx")]
    if len(kb):
        parts.append(f"a logged kB {est(kb.iloc[0])}")
    parts.append(f"{int(d['n_influential'])} runs exceed Cook's distance {regression.COOKS_FACTOR}/n")
    return parts[0] + ": " + "; ".join(parts[1:]) + "."


def regression_text(coefficients: pd.DataFrame, diagnostics: pd.DataFrame) -> str:
    """One Markdown paragraph per (engine, environment): the cost of a line per destination family and per
    concurrency level, the cost of a kB, the fit."""
    if not len(coefficients):
        return "No regression: no engine has both a baseline and a logging configuration in the processed data."
    return "\n\n".join(
        _fit_paragraph(coefficients[coefficients["fit"] == key],
                       diagnostics[(diagnostics["fit"] == key) & (diagnostics["model"] == "main")].iloc[0])
        for key in sorted(coefficients["fit"].unique()))


def floor_text(floors: pd.DataFrame, coefficients: pd.DataFrame) -> str:
    """The floors, and each family's cost as a multiple of the floor named for it (:data:`FLOOR_FOR`); where there
    are none, where they would come from."""
    if floors.empty:
        return (f"No `write()` floor: it is timed by study 11's committed run (its calibration, "
                f"`{CALIBRATION_FILE}`), which these processed files do not hold.")
    lines = []
    for _, f in floors.iterrows():
        lines.append(f"One `write()` of {int(f['nbytes'])} bytes to a {f['target']}: "
                     f"{ci_words(f['median_us'], f['ci_low'], f['ci_high'])}.")
    if len(coefficients):
        # the floor is one write() of a typical line's size: set against the typical line's cost
        main = coefficients[(coefficients["model"] == "main")
                            & coefficients["term"].astype(str).str.startswith(regression.TYPICAL)]
        for _, r in main.iterrows():
            target = FLOOR_FOR.get((r["engine"], r["family"]))
            fl = floors[floors["target"] == target] if target else floors.iloc[:0]
            if len(fl) and r["ci_low"] > 0:
                lines.append(f"For {r['fit']} a typical line to {regression.FAMILY_LABELS[r['family']]} costs "
                             f"{cell_text(r['estimate'] / fl.iloc[0]['median_us'], 2)} times {FLOOR_WORDS[target]}.")
    return " ".join(lines)


def claims_text(summary: pd.DataFrame) -> str:
    counts = summary["verdict"].value_counts()
    parts = [f"{int(counts.get(v, 0))} {v}" for v in claims_mod.VERDICTS]
    return f"Of {len(summary)} claims: " + ", ".join(parts) + "."


def display_table(df: pd.DataFrame, sig: int = 3) -> pd.DataFrame:
    """Floats as fixed significant-digit strings (what the paper prints; stable across BLAS summation order)."""
    out = df.copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]):
            vals = out[col].dropna()
            whole = bool(len(vals)) and bool((vals == vals.round()).all()) and bool((vals.abs() < 1e15).all())
            out[col] = [("—" if pd.isna(v) else str(int(v))) if whole else cell_text(v, sig) for v in out[col]]
    return out
