"""The section "Does the version change the answer?" (issue 23): each version sweep's ratios per server version side
by side, each version against its own baseline and A/A (never pooled), and each later version's ratio over the
oldest's with its CI (``<stem>_between_versions.csv``, :func:`logbench.studies.common.variant_differences`).

A sweep is a study's committed run of its named profile ``versions``; until it has run, the section says so. A
difference between versions is read only where more intervals of the ratio of ratios lie wholly off 1 than chance
gives (:func:`chance_limit`), each where the A/A's own difference at that level contains 1; the paper's text names
what the release notes changed in the path a study exercises, beside the sweep where it would show.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ... import studies as studies_registry
from ...base.settings import is_aa
from ...analyze.claims.verdicts import NOT_MEASURED
from ..findings import VERSION_SWEEPS
from ...base.stats import CONFIDENCE
from ...studies.common import version_key
from .tables import add_table
from ...base.formatting import ci_text

PCT = round(100 * CONFIDENCE)
CLAIMS_BY_VERSION = "findings_claims_by_version.csv"

# The sweeps, in the paper's order: the processed stem of the committed run, and what it measures (its study's
# StudySpec.versions_title).
SWEEPS = tuple((stem, spec.versions_title or spec.title) for stem, spec in VERSION_SWEEPS.items())

def cell_keys(table: pd.DataFrame) -> list[str]:
    """The columns before ``configuration`` that split a study into cells (study 04: regime, test), not the
    variant."""
    cols = list(table.columns)
    return [c for c in cols[:cols.index("configuration")] if c != "variant"]


def _cell(r, keys: list[str]) -> str:
    return "/".join(str(r[k]) for k in keys)


def per_version_table(summary: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """One row per cell, configuration and clients level, one column per version: 'ratio [CI] (n)' to its own
    baseline."""
    s = summary[summary["configuration"] != baseline]
    keys = cell_keys(s)
    versions = sorted(set(s["variant"]), key=version_key)
    rows = []
    for _, g in s.groupby([*keys, "configuration", "clients"], sort=False):
        by, r = g.set_index("variant"), g.iloc[0]
        rows.append({**({"cell": _cell(r, keys)} if keys else {}), "configuration": r["configuration"],
                     "clients": str(int(r["clients"])),
                     **{v: (f"{ci_text(by.loc[v, 'ratio'], by.loc[v, 'ratio_ci_low'], by.loc[v, 'ratio_ci_high'])} "
                            f"({int(by.loc[v, 'n'])})") if v in by.index else "—" for v in versions}})
    return pd.DataFrame(rows)


def between_table(between: pd.DataFrame) -> pd.DataFrame:
    """One row per cell, configuration and clients level, one column per later version: its ratio over the
    oldest's."""
    keys = cell_keys(between)
    rows = []
    for _, g in between.groupby([*keys, "configuration", "clients"], sort=False):
        r0 = g.iloc[0]
        rows.append({**({"cell": _cell(r0, keys)} if keys else {}), "configuration": r0["configuration"],
                     "clients": str(int(r0["clients"])),
                     **{f"{r['variant']} / {r['against']}": f"{ci_text(r['ratio_of_ratios'], r['ci_low'], r['ci_high'])}"
                                                          f" ({int(r['n'])})" for _, r in g.iterrows()}})
    return pd.DataFrame(rows)


def differences(between: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the rows whose difference shows, the A/A rows whose difference does not contain 1). A difference shows
    only where that level's A/A difference (same cell, clients and pair of versions) contains 1."""
    keys = [*cell_keys(between), "clients", "variant"]
    off = (between["ci_low"] > 1) | (between["ci_high"] < 1)
    aa = between["configuration"].map(is_aa)
    bad_aa = {tuple(r[k] for k in keys) for _, r in between[aa & off].iterrows()}
    keep = [tuple(r[k] for k in keys) not in bad_aa for _, r in between.iterrows()]
    return between[~aa & off & pd.Series(keep, index=between.index)], between[aa & off]


def chance_limit(tested: int) -> int:
    """How many of ``tested`` independent 95 % intervals exclude the truth by chance at most, 95 times in 100
    (scipy's binomial quantile): more than that is read as a difference of the versions, not as chance."""
    from scipy.stats import binom

    return int(binom.ppf(CONFIDENCE, tested, 1 - CONFIDENCE)) if tested else 0


def _texts(rows: pd.DataFrame) -> list[str]:
    """'configuration at N client(s), v / w ratio [CI]' per row (plain text: the paper prints it as a string)."""
    keys = cell_keys(rows) if len(rows) else []
    return [f"{_cell(r, keys) + ' ' if keys else ''}{r['configuration']} at {int(r['clients'])} client(s), "
            f"{r['variant']} / {r['against']} {ci_text(r['ratio_of_ratios'], r['ci_low'], r['ci_high'])}"
            for _, r in rows.iterrows()]


def claims_table(doc: dict, gen: Path, processed_dir: Path, stem: str) -> str:
    """The posts' claims about the sweep's study judged on each version (findings_claims_by_version.csv, written
    by 90_findings): one row per claim, a column per version with its estimate and verdict; '' where none."""
    src = processed_dir / CLAIMS_BY_VERSION
    if not src.exists():
        return ""
    c = pd.read_csv(src, keep_default_na=False)
    c = c[c["sweep"] == stem]
    # a claim outside the sweep's design (e.g. study 04's io regime, which the sweep does not run) on no version
    c = c.groupby("claim_id").filter(lambda g: (g["verdict"] != NOT_MEASURED).any())
    if not len(c):
        return ""
    rows = [{"claim": claim, "claimed": g["claimed"].iloc[0],
             **{r["version"]: f"{r['ours']}: {r['verdict']}" for _, r in g.iterrows()}}
            for claim, g in c.groupby("claim_id", sort=False)]
    return add_table(doc, gen, pd.DataFrame(rows), f"versions_{stem}_claims")


def slopes_table(doc: dict, gen: Path, processed_dir: Path, stem: str) -> tuple[str, str]:
    """A sweep's per-version slopes where its study fits them (study 08: tps per 100 sessions or connection
    slots, in % of the fitted tps without them, t CI from the HC3 errors): the table, and which versions' slopes
    exclude 0. ('', '') where the study has none."""
    src = processed_dir / f"{stem}_slopes.csv"
    if not src.exists():
        return "", ""
    sl = pd.read_csv(src)
    if "variant" not in sl:
        return "", ""
    versions = sorted(set(sl["variant"]), key=version_key)
    rows = []
    for (kind, clients), g in sl.groupby(["kind", "clients"], sort=True):
        by = g.set_index("variant")
        rows.append({"kind": kind, "clients": str(int(clients)), "per 100 of": by["per_100"].iloc[0].split(" (")[0],
                     **{v: ci_text(by.loc[v, "slope_pct"], by.loc[v, "pct_ci_low"], by.loc[v, "pct_ci_high"])
                        if v in by.index else "—" for v in versions}})
    off = sl[(sl["pct_ci_high"] < 0) | (sl["pct_ci_low"] > 0)]
    reading = ("Slopes whose interval excludes 0: " + "; ".join(
        f"{r['variant']} {r['kind']} at {int(r['clients'])} client(s), "
        f"{ci_text(r['slope_pct'], r['pct_ci_low'], r['pct_ci_high'])} % per 100" for _, r in off.iterrows())
        + ". A slope that excludes 0 in one version and not in another is not by itself a difference between "
          "them: that needs the intervals of the difference (the ratio-of-ratios table) to exclude 1."
        if len(off) else "No slope of any version excludes 0.")
    return add_table(doc, gen, pd.DataFrame(rows), f"versions_{stem}_slopes"), reading


def versions_section(doc: dict, processed_dir: Path, gen: Path) -> None:
    """``doc['versions']``: one entry per sweep that ran (title, servers, the two tables, the reading);
    ``doc['versions_pending']``: the titles of those not yet run."""
    doc["versions"], doc["versions_pending"] = [], []
    for stem, title in SWEEPS:
        summary_csv, between_csv = processed_dir / f"{stem}.csv", processed_dir / f"{stem}_between_versions.csv"
        if not summary_csv.exists():
            doc["versions_pending"].append(title)
            continue
        summary = pd.read_csv(summary_csv)
        if "variant" not in summary or "ratio" not in summary:
            doc["versions_pending"].append(title)
            continue
        baseline = studies_registry.spec(stem.removesuffix("_versions")).baseline
        entry = {"title": title, "stem": stem,
                 "versions": ", ".join(sorted(set(summary["variant"]), key=version_key)),
                 "ratios": add_table(doc, gen, per_version_table(summary, baseline), f"versions_{stem}"),
                 "between": "", "reading": ""}
        if between_csv.exists():
            between = pd.read_csv(between_csv)
            entry["between"] = add_table(doc, gen, between_table(between), f"versions_{stem}_between")
            shown, bad = differences(between)
            shows, bad_aa = _texts(shown), _texts(bad)
            tested = int((~between["configuration"].map(is_aa)).sum())
            chance = chance_limit(tested)
            widths = 50 * (between["ci_high"] - between["ci_low"]) / between["ratio_of_ratios"]
            entry["reading"] = (
                (f"{len(shows)} of {tested} intervals of the ratio of ratios exclude 1: " + "; ".join(shows) + ". "
                 + (f"With {tested} intervals at {PCT} %, up to {chance} exclude 1 by chance alone (the {PCT} % "
                    "quantile of the binomial, the intervals taken as independent) when no version differs: these "
                    "are not read as differences." if len(shows) <= chance else
                    f"That is more than chance gives ({chance} of {tested} at most, the {PCT} % quantile of "
                    f"the binomial): the version changes these costs.")
                 if shows else
                 "No configuration costs differently on another version with confidence at this resolution: every "
                 "interval of the ratio of ratios contains 1.")
                + " Half-widths of the intervals: "
                f"{ci_text(widths.median(), widths.min(), widths.max(), sig=2)} % of the estimate (median "
                "[narrowest, widest]); a smaller difference is not excluded."
                + (" The A/A control itself differs between versions at " + "; ".join(bad_aa)
                   + ": no difference at those levels is read." if bad_aa else ""))
        entry["claims"] = claims_table(doc, gen, processed_dir, stem)
        entry["slopes"], entry["slopes_reading"] = slopes_table(doc, gen, processed_dir, stem)
        doc["versions"].append(entry)
