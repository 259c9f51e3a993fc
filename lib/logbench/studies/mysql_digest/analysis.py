"""Study 09 from its digest to the notebook's tables and findings: which fingerprint is ours, the ranked digest,
our statements beside the ebook's examples, the finding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...base import paths
from .. import common
from . import digest
from .spec import EBOOK_ROWS, NAME, OWN_ORDER, OWN_STATEMENTS, POST, DigestStudy


def label(ruled: pd.DataFrame) -> pd.DataFrame:
    """Which of our own statements each fingerprint is ('' for the workload's and the sessions' own)."""
    by_fp = {fp: name for name, (_, fp, _, _) in OWN_STATEMENTS.items()}
    out = ruled.copy()
    out.insert(1, "statement", out["fingerprint"].map(by_fp).fillna(""))
    return out


def load_processed(processed_dir: Path = paths.PROCESSED) -> pd.DataFrame:
    return common.load_processed(NAME, "summary", processed_dir=processed_dir)[0]


# -- tables and findings for the notebook ---------------------------------------------------------------

def statement_table(study: DigestStudy) -> pd.DataFrame:
    rows = [{"statement": n, "SQL": OWN_STATEMENTS[n][0].replace("%s", "?"), "what": OWN_STATEMENTS[n][2],
             "the ebook's example": OWN_STATEMENTS[n][3] or "–"} for n in study.statements]
    return pd.DataFrame(rows).set_index("statement")


def ranked(result_digest: pd.DataFrame, top: int = 15) -> pd.DataFrame:
    """The digest as the notebook shows it: rank, count, times, rows per query, B/A and its reading."""
    g = result_digest.head(top).copy()
    g["fingerprint"] = g["fingerprint"].str.slice(0, 70)
    g["time total (ms)"] = 1e3 * g["time_total_s"]
    g["p95 (ms)"] = 1e3 * g["time_p95_s"]
    cols = {"rank": "rank", "statement": "ours", "fingerprint": "fingerprint", "count": "count",
            "time total (ms)": "time total (ms)", "time_share": "share of time", "p95 (ms)": "p95 (ms)",
            "rows_examined_per_query": "examined / query", "rows_sent_per_query": "sent / query (A)",
            "table_references": "tables", "examined_per_table": "B", "ratio": "B / A", "reading": "reading"}
    return g[list(cols)].rename(columns=cols).set_index("rank").round(4)


def ebook_examples() -> pd.DataFrame:
    """The ebook's rows sent / examined examples from the reference data (002-051..053 and its two joins)."""
    from ...analyze import reference

    ids = [i for pair in EBOOK_ROWS.values() for i in pair if i]
    v = reference.load_values(POST)
    v = v[v["id"].astype(str).isin(ids)]
    return v[["id", "item", "metric", "value", "value_text", "line"]].reset_index(drop=True)


def beside_ebook(result_digest: pd.DataFrame) -> pd.DataFrame:
    """Our own statements next to the ebook's example each mirrors (its values from the reference data)."""
    ref = ebook_examples().set_index("id")["value"]
    rows = []
    for r in result_digest[result_digest["statement"] != ""].itertuples():
        sent_id, examined_id = EBOOK_ROWS.get(r.statement, (None, None))
        rows.append({"statement": r.statement, "the ebook's example": OWN_STATEMENTS[r.statement][3] or "–",
                     "ebook: sent": ref.get(sent_id, np.nan) if sent_id else np.nan,
                     "ebook: examined": ref.get(examined_id, np.nan) if examined_id else np.nan,
                     "ours: sent / query": r.rows_sent_per_query, "ours: examined / query": r.rows_examined_per_query,
                     "tables": r.table_references, "B / A": r.ratio, "reading": r.reading})
    order = {n: i for i, n in enumerate(OWN_ORDER)}
    return pd.DataFrame(rows).sort_values("statement", key=lambda s: s.map(order)).set_index("statement")


def finding(result_digest: pd.DataFrame) -> str:
    """Which fingerprints the rule flags, and what share of the captured time they took."""
    flagged = digest.candidates(result_digest)
    n_all = len(result_digest)
    perfect = result_digest[result_digest["rule_applies"] & (result_digest["ratio"] <= digest.PERFECT)]
    if not len(flagged):
        head = f"None of the {n_all} fingerprints is flagged (B/A ≥ 10)."
    else:
        names = ", ".join(f"`{r.statement or r.fingerprint[:50]}` (rank {r.rank}, B/A "
                          f"{'∞' if np.isinf(r.ratio) else f'{r.ratio:,.0f}'})" for r in flagged.itertuples())
        head = (f"{len(flagged)} of {n_all} fingerprints are serious candidates (B/A ≥ 10): {names}; together "
                f"{100 * flagged['time_share'].sum():.3g} % of the captured statements' time in "
                f"{int(flagged['count'].sum())} of {int(result_digest['count'].sum())} executions.")
    ours = [r.statement for r in perfect.itertuples() if r.statement]
    return head + (f" {len(perfect)} fingerprints are perfect (B ≤ A)" if len(perfect) else "") + (
        f", of ours: {', '.join(f'`{n}`' for n in ours)}." if ours else ".")
