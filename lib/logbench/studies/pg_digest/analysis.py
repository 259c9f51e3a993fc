"""Study 10 from pgBadger's report to the notebook's tables and findings: which normalized query is ours, the
digest ranked by total time, count and mean, our statements beside pgBadger's count, the finding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...base import paths
from .. import common
from .spec import NAME, OWN_STATEMENTS, PgDigestResult, PgDigestStudy


def which_statement(query: str) -> str:
    """Which of our own statements a normalized query is ('' for pgbench's and the sessions' own)."""
    q = " ".join(query.lower().split())
    return next((name for name, (_, piece, _) in OWN_STATEMENTS.items() if piece in q), "")


def ranked_queries(report: dict) -> pd.DataFrame:
    """pgBadger's normalized queries (databases summed), ranked by total time: count, total, mean, min, max."""
    rows: dict[str, dict] = {}
    for queries in report["normalyzed_info"].values():
        for query, info in queries.items():
            r = rows.setdefault(query, {"query": query, "count": 0, "time_total_ms": 0.0,
                                        "time_min_ms": np.inf, "time_max_ms": 0.0})
            r["count"] += int(info["count"])
            r["time_total_ms"] += float(info.get("duration", 0) or 0)
            r["time_min_ms"] = min(r["time_min_ms"], float(info.get("min", np.inf) or np.inf))
            r["time_max_ms"] = max(r["time_max_ms"], float(info.get("max", 0) or 0))
    t = pd.DataFrame(list(rows.values()), columns=["query", "count", "time_total_ms", "time_min_ms", "time_max_ms"])
    t["time_mean_ms"] = t["time_total_ms"] / t["count"]
    t["time_share"] = t["time_total_ms"] / t["time_total_ms"].sum()
    t.insert(1, "statement", t["query"].map(which_statement))
    t = t.sort_values(["time_total_ms", "query"], ascending=[False, True]).reset_index(drop=True)
    t.insert(0, "rank", np.arange(1, len(t) + 1))
    t["rank_by_count"] = t["count"].rank(ascending=False, method="min").astype(int)
    t["rank_by_mean"] = t["time_mean_ms"].rank(ascending=False, method="min").astype(int)
    return t


def load_processed(processed_dir: Path = paths.PROCESSED) -> pd.DataFrame:
    return common.load_processed(NAME, "summary", processed_dir=processed_dir)[0]


# -- tables and findings for the notebook ---------------------------------------------------------------

def statement_table(study: PgDigestStudy) -> pd.DataFrame:
    rows = [{"statement": n, "SQL": OWN_STATEMENTS[n][0].replace("%s", "$1"), "what": OWN_STATEMENTS[n][2]}
            for n in study.statements]
    return pd.DataFrame(rows).set_index("statement")


def ranked(digest: pd.DataFrame, top: int = 15, by: str = "time_total_ms") -> pd.DataFrame:
    """The digest as the notebook shows it, ordered by ``by`` (time_total_ms, count or time_mean_ms)."""
    g = digest.sort_values([by, "query"], ascending=[False, True]).head(top).copy()
    g["query"] = g["query"].str.slice(0, 70)
    cols = {"rank": "rank by total", "rank_by_count": "by count", "rank_by_mean": "by mean", "statement": "ours",
            "query": "normalized query", "count": "count", "time_total_ms": "total (ms)",
            "time_share": "share of time", "time_mean_ms": "mean (ms)", "time_max_ms": "max (ms)"}
    return g[list(cols)].rename(columns=cols).set_index("rank by total").round(4)


def own_counts(result: PgDigestResult) -> pd.DataFrame:
    """Our statements as run beside pgBadger's count of them, and pgbench's transactions beside its query."""
    d = result.digest
    rows = [{"statement": n, "executed": result.own.get(n, 0),
             "pgBadger's count": int(d.loc[d["statement"] == n, "count"].sum()),
             "mean (ms)": float(d.loc[d["statement"] == n, "time_mean_ms"].mean())} for n in result.study.statements]
    return pd.DataFrame(rows).set_index("statement")


def finding(digest: pd.DataFrame) -> str:
    """Where the captured time went, and the indexed twin's mean beside the unindexed filter's."""
    top = digest.iloc[0]
    ours = digest[digest["statement"] != ""].set_index("statement")
    text = (f"{len(digest)} normalized queries; the most total time: "
            f"{'`' + top['statement'] + '`' if top['statement'] else 'a query not of ours'} "
            f"({100 * top['time_share']:.3g} % of the captured time in {int(top['count'])} executions).")
    if {"unindexed_filter", "indexed_filter"} <= set(ours.index):
        u, i = ours.loc["unindexed_filter", "time_mean_ms"], ours.loc["indexed_filter", "time_mean_ms"]
        text += (f" The unindexed filter takes {u:.3g} ms per execution, its indexed twin {i:.3g} ms "
                 f"({u / i:,.0f}x): the index is what is worth adding.")
    return text
