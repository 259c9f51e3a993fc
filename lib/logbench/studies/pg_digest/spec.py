"""Study 10's declarations: its name, own statements, profiles, study type, the paper's table and numbers of it
and its registry spec (no logic beyond the paper table's formatting).

The bottom of the package: the analysis and the study's plan and run both read these.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import common
from ..digesting import DigestFields, DigestOutcome, paper_columns

NAME = "pg_digest"
POST = "002_6799d5933fa4bed1.txt"  # the ebook's workflow (study 09's post), redone on PostgreSQL
BACKENDS = ("local",)  # the captured file is read on this machine
INDEXED_TABLE = "digest_indexed"  # pgbench_accounts copied, with an index on abalance


@dataclass(frozen=True, kw_only=True)
class PgDigestStudy(DigestFields):
    """The fields of every digest study (studies.digesting), pgbench's scale and rate and the server's binaries."""

    scale: int  # pgbench -s
    rate: int  # pgbench -R: transactions per second of the load (a steady server's, and the log's size)
    pg_bindir: str


@dataclass(frozen=True)
class PgDigestResult(DigestOutcome):
    report: dict  # pgBadger's JSON
    html: Path  # pgBadger's HTML report, beside the captured log
    pgbench: dict  # what pgbench reported for its part of the load
    own: dict[str, int]  # executions of each own statement


# name -> (statement with one %s, a piece of pgBadger's normalized text that names it, what it is)
OWN_STATEMENTS: dict[str, tuple[str, str, str]] = {
    "unindexed_filter": ("SELECT * FROM pgbench_accounts WHERE abalance = %s",
                         "from pgbench_accounts where abalance =",
                         "a filter on an unindexed column that matches nothing: a sequential scan of every row"),
    "indexed_filter": (f"SELECT * FROM {INDEXED_TABLE} WHERE abalance = %s",
                       f"from {INDEXED_TABLE} where abalance =",
                       "the same filter on a copy of the table with an index on abalance"),
    "unindexed_join": ("SELECT a.aid FROM pgbench_tellers t JOIN pgbench_accounts a ON a.abalance = t.tbalance "
                       "WHERE t.tid = %s AND a.bid = t.bid",
                       "join pgbench_accounts a on a.abalance = t.tbalance",
                       "a join on unindexed columns: the accounts table scanned for the teller's row"),
}
OWN_ORDER = list(OWN_STATEMENTS)
QUERY_MODE = "prepared"  # pgbench's; pgBadger adds a prepared statement's parse and bind to its execute

PROFILES: dict[str, dict[str, object]] = {
    # seconds: what tests and nbval run
    "smoke": {"duration": 2, "clients": 1, "scale": 1, "executions": 5, "rate": 1000},
    # the committed run: 31 s in all on the 2-vCPU host (a 20 s capture of 20 MB); the log's size
    # is rate x duration, and pgBadger's time follows it
    "standard": {"duration": 20, "clients": 2, "scale": 10, "executions": 20, "rate": 2000},
    "full": {"duration": 120, "clients": 2, "scale": 50, "executions": 50, "rate": 2000},
}


def _ours(statement: str, column: str, **more) -> dict:
    return {"kind": "cell", "where": {"statement": statement}, "column": column, **more}


# What the paper's text states, each from the processed table: our statements' ranks and means, the filter's two plans
# side by side, and how many normalized queries the log held.
PAPER_NUMBERS = {
    "queries": {"kind": "agg", "agg": "count"},
    **{f"{n}.{key}": _ours(n, column, **more) for n in OWN_ORDER
       for key, column, more in (("rank", "rank", {}), ("mean_ms", "time_mean_ms", {"sig": 3}))},
    "unindexed_join.count": _ours("unindexed_join", "count"),
    "filter_index_factor": {"kind": "div", "a": _ours("unindexed_filter", "time_mean_ms"),
                            "b": _ours("indexed_filter", "time_mean_ms"), "sig": 2},
}


def paper_table(d: pd.DataFrame) -> pd.DataFrame:
    """The paper's digest table: each normalized query's rank by total time, count and mean, and its times."""
    from ...base.formatting import number as fmt

    return pd.DataFrame({
        **paper_columns(d, "query", "normalized query"),
        "mean (ms)": d["time_mean_ms"].map(fmt), "max (ms)": d["time_max_ms"].map(fmt),
        "by count": d["rank_by_count"].astype(int).astype(str), "by mean": d["rank_by_mean"].astype(int).astype(str)})


SPEC = common.StudySpec(
    name=NAME, engine="postgresql", title="PostgreSQL full statement log digested by pgBadger", post=POST,
    baseline="", notebook="10_pg_digest.ipynb", seed=20120911,
    committed={"profile": "standard", "backend": "local", "publish": True},
    smoke=({"profile": "smoke", "backend": "local"},), paper_order=10, measures_logging=False,
    digest=common.DigestPaper(paper_table, PAPER_NUMBERS))
