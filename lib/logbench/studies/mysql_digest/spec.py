"""Study 09's declarations: its name, own statements, profiles, study type, the paper's table of it and its
registry spec (no logic beyond the paper table's formatting).

The bottom of the package: the analysis and the study's plan and run both read these.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ...workloads.workload import Workload
from .. import common
from ..digesting import DigestFields, DigestOutcome, paper_columns

NAME = "mysql_digest"
POST = "002_6799d5933fa4bed1.txt"  # the post this study redoes (shared/seeds)
BACKENDS = ("local",)  # the capture file is read on this machine
INDEXED_TABLE = "digest_indexed"  # sbtest1 again, with an index on c: the ebook's "if I index the table"
# The background load the capture runs beside the study's own statements, declared (issue 39): the ebook's busy server
LOAD = Workload.sysbench("oltp_read_write")


@dataclass(frozen=True, kw_only=True)
class DigestStudy(DigestFields):
    """The fields of every digest study (studies.digesting), sysbench's tables and the server's."""

    tables: int
    table_size: int
    mariadbd: str
    flavor: str
    base: object


@dataclass(frozen=True)
class DigestResult(DigestOutcome):
    sysbench: dict  # what sysbench reported for its part of the load


# name -> (statement with one %s, its pt-query-digest fingerprint, what it is, the ebook's example it mirrors)
OWN_STATEMENTS: dict[str, tuple[str, str, str, str]] = {
    "unindexed_filter": ("SELECT * FROM sbtest1 WHERE c = %s", "select * from sbtest? where c = ?",
                         "a filter on an unindexed column that matches nothing: every row examined, none sent",
                         "query 0 (002-051, 002-052)"),
    "indexed_filter": (f"SELECT * FROM {INDEXED_TABLE} WHERE c = %s", f"select * from {INDEXED_TABLE} where c = ?",
                       "the same filter on a copy of the table with an index on c",
                       "query 0 after adding an index (002-053)"),
    "const_join": ("SELECT * FROM sbtest1 a, sbtest1 b WHERE a.id = %s AND b.id = a.k",
                   "select * from sbtest? a, sbtest? b where a.id = ? and b.id = a.k",
                   "a join by primary keys (both tables const)", "query 1 (002-054..067)"),
    "indexed_join": ("SELECT * FROM sbtest1 a, sbtest1 b WHERE a.k = %s AND b.id = a.id",
                     "select * from sbtest? a, sbtest? b where a.k = ? and b.id = a.id",
                     "a join through the secondary index k, then the primary key", "query 2 (002-068..079)"),
    "unindexed_join": ("SELECT a.id, b.id FROM sbtest1 a JOIN sbtest1 b ON b.c = a.c WHERE a.id = %s",
                       "select a.id, b.id from sbtest? a join sbtest? b on b.c = a.c where a.id = ?",
                       "a join on an unindexed column: the second table scanned for each row of the first", ""),
    "group_by": ("SELECT k, COUNT(*) FROM sbtest1 WHERE id <= %s GROUP BY k",
                 "select k, count(*) from sbtest? where id <= ? group by k",
                 "an aggregate: rows sent are groups, so the rule does not apply", "query 3 (GROUP BY)"),
}
OWN_ORDER = list(OWN_STATEMENTS)
# The ebook's examples each of our statements mirrors: reference ids of its rows sent / rows examined.
EBOOK_ROWS = {"unindexed_filter": ("002-051", "002-052"), "indexed_filter": (None, "002-053"),
              "const_join": ("002-056", "002-057"), "indexed_join": ("002-070", "002-071")}

PROFILES: dict[str, dict[str, object]] = {
    # seconds: what tests and nbval run
    "smoke": {"duration": 2, "clients": 1, "tables": 1, "table_size": 2000, "executions": 5},
    # the committed run: ~2.5 min (load ~30 s, copy and index ~5 s, capture 20 s, digest of ~60 MB ~60 s)
    "standard": {"duration": 20, "clients": 2, "tables": 4, "table_size": 100000, "executions": 20},
    # a longer capture of more data
    "full": {"duration": 120, "clients": 2, "tables": 8, "table_size": 1000000, "executions": 50},
}


def paper_table(d: pd.DataFrame) -> pd.DataFrame:
    """The paper's digest table: each fingerprint's rank, count, share of time, p95, rows and the ebook's reading."""
    from ...base.formatting import number as fmt

    return pd.DataFrame({
        **paper_columns(d, "fingerprint", "fingerprint"),
        "p95 (ms)": (1e3 * d["time_p95_s"]).map(fmt), "sent / query (A)": d["rows_sent_per_query"].map(fmt),
        "B": d["examined_per_table"].map(fmt), "B / A": d["ratio"].astype(float).map(fmt),
        "reading": d["reading"].astype(str)})


SPEC = common.StudySpec(
    name=NAME, engine="mariadb", title="MariaDB full slow log digested", post=POST, baseline="",
    notebook="09_mysql_digest.ipynb", seed=20120911, experiment="002/rows_examined",
    committed={"profile": "standard", "backend": "local", "publish": True},
    smoke=({"profile": "smoke", "backend": "local"},), paper_order=9, measures_logging=False,
    digest=common.DigestPaper(paper_table))
