"""The section "Does the version change the answer?" (issue 23): each version sweep's ratios per server version side
by side, each version against its own baseline and A/A (never pooled), and each later version's ratio over the
oldest's with its CI (``<stem>_between_versions.csv``, :func:`logbench.studies.common.variant_differences`).

A sweep is a study's committed run of its named profile ``versions``; until it has run, the section says so. What
changed in the server is named (:data:`RELEASE_NOTES`) only where a difference between versions shows: an
interval of the ratio of ratios wholly off 1, while the A/A's own difference at that level contains 1.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import studies as studies_registry
from ..settings import is_aa
from ..studies.common import version_key
from .tables import add_table
from .text import ci_text

CLAIMS_BY_VERSION = "findings_claims_by_version.csv"

# The sweeps, in the paper's order: the processed stem of the committed run, and what it measures.
SWEEPS = (
    ("pg_destinations_versions", "PostgreSQL: every statement logged (log_min_duration_statement = 0) to each "
                                 "destination, pgbench -S -M prepared (study 02)"),
    ("mysql_slowlog_versions", "MariaDB: the slow log's configurations on the CPU-bound sysbench load (study 04)"),
    ("pg_idle_connections_versions", "PostgreSQL: max_connections and idle sessions (study 08, post 004)"),
)

# What the release notes say changed in the path a configuration exercises, by engine and configuration; printed
# only beside a difference that shows. (Sources: the PostgreSQL 14/16/17 and MariaDB 10.6-11.8 release notes.)
RELEASE_NOTES: dict[tuple[str, str], str] = {}


def _engine(stem: str) -> str:
    return "mariadb" if stem.startswith("mysql") else "postgresql"


def per_version_table(summary: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """One row per configuration and clients level, one column per version: 'ratio [CI] (n)' to its own baseline."""
    s = summary[summary["configuration"] != baseline]
    versions = sorted(set(s["variant"]), key=version_key)
    rows = []
    for (cfg, clients), g in s.groupby(["configuration", "clients"], sort=False):
        by = g.set_index("variant")
        rows.append({"configuration": cfg, "clients": str(int(clients)),
                     **{v: (f"{ci_text(by.loc[v, 'ratio'], by.loc[v, 'ratio_ci_low'], by.loc[v, 'ratio_ci_high'])} "
                            f"({int(by.loc[v, 'n'])})") if v in by.index else "—" for v in versions}})
    return pd.DataFrame(rows)


def between_table(between: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration and clients level, one column per later version: its ratio over the oldest's."""
    rows = []
    for (cfg, clients), g in between.groupby(["configuration", "clients"], sort=False):
        rows.append({"configuration": cfg, "clients": str(int(clients)),
                     **{f"{r['variant']} / {r['against']}": f"{ci_text(r['ratio_of_ratios'], r['ci_low'], r['ci_high'])}"
                                                          f" ({int(r['n'])})" for _, r in g.iterrows()}})
    return pd.DataFrame(rows)


def differences(between: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the rows whose difference shows, the A/A rows whose difference does not contain 1). A difference shows
    only where that level's A/A difference (same clients, same pair of versions) contains 1."""
    off = (between["ci_low"] > 1) | (between["ci_high"] < 1)
    aa = between["configuration"].map(is_aa)
    bad_aa = {(r["clients"], r["variant"]) for _, r in between[aa & off].iterrows()}
    keep = [(r["clients"], r["variant"]) not in bad_aa for _, r in between.iterrows()]
    return between[~aa & off & pd.Series(keep, index=between.index)], between[aa & off]


def _texts(rows: pd.DataFrame) -> list[str]:
    """'configuration at N client(s), v / w ratio [CI]' per row (plain text: the paper prints it as a string)."""
    return [f"{r['configuration']} at {int(r['clients'])} client(s), {r['variant']} / {r['against']} "
            f"{ci_text(r['ratio_of_ratios'], r['ci_low'], r['ci_high'])}" for _, r in rows.iterrows()]


def claims_table(doc: dict, gen: Path, processed_dir: Path, stem: str) -> str:
    """The posts' claims about the sweep's study judged on each version (findings_claims_by_version.csv, written
    by 90_findings): one row per claim, a column per version with its estimate and verdict; '' where none."""
    src = processed_dir / CLAIMS_BY_VERSION
    if not src.exists():
        return ""
    c = pd.read_csv(src, keep_default_na=False)
    c = c[c["sweep"] == stem]
    if not len(c):
        return ""
    rows = [{"claim": claim, "claimed": g["claimed"].iloc[0],
             **{r["version"]: f"{r['ours']}: {r['verdict']}" for _, r in g.iterrows()}}
            for claim, g in c.groupby("claim_id", sort=False)]
    return add_table(doc, gen, pd.DataFrame(rows), f"versions_{stem}_claims")


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
            notes = sorted({RELEASE_NOTES[k] for k in RELEASE_NOTES
                            if k[0] == _engine(stem) and k[1] in set(shown["configuration"])})
            widths = 50 * (between["ci_high"] - between["ci_low"]) / between["ratio_of_ratios"]
            entry["reading"] = (
                ("A difference between versions shows for " + "; ".join(shows) + "." if shows else
                 "No configuration's cost differs between the versions with confidence at this resolution: every "
                 "interval of the ratio of ratios contains 1 (half-widths "
                 f"{ci_text(widths.median(), widths.min(), widths.max(), sig=2)} % of the estimate, median "
                 "[narrowest, widest]): a difference smaller than that is not excluded.")
                + (" The A/A control itself differs between versions at " + "; ".join(bad_aa)
                   + ": no difference at those levels is read." if bad_aa else "")
                + (" " + " ".join(notes) if notes else ""))
        entry["claims"] = claims_table(doc, gen, processed_dir, stem)
        doc["versions"].append(entry)
