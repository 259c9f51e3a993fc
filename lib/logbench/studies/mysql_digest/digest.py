"""A captured slow log, digested: pt-query-digest per query fingerprint, and the ebook's rows rule.

Post 002 (Peter Zaitsev's chapter "How to find MySQL queries worth optimizing?") reads each query's
rows examined against its rows sent:

- A: the rows the query sends (after GROUP BY, DISTINCT and aggregates are removed);
- B: the rows it examines divided by the number of tables in the join;
- B ≤ A: the query is "perfect"; B / A ≥ 10: "a very serious candidate for optimization".

:func:`run_digest` runs Percona Toolkit's ``pt-query-digest --output json`` on a slow-log file;
:func:`parse` turns its JSON into one row per fingerprint (count, total / mean / 95th-percentile /
max time, rows examined and sent) ranked as pt-query-digest ranks (total time), and :func:`rows_rule`
adds the ebook's ratio. What the log cannot give is said, not guessed:

- A is taken as the rows sent: the log has no "rows sent without the aggregates"; a query with an
  aggregate, GROUP BY or DISTINCT is marked ``rule_applies = False`` (the ebook: the rule "does not
  work if you have any group by in the query"), and so is any statement that is not a SELECT
  (an UPDATE or DELETE examines rows and sends none by design);
- the tables in the join: pt-query-digest lists the *distinct* tables of a class (a self-join is
  one table there), so the count of table references in the FROM clause of the fingerprint is ours
  (:func:`table_references`; each FROM item and JOIN, not subqueries), and both are kept.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from ...base import environment
from ...base.errors import ToolError

TOOL = "pt-query-digest"
# The ebook's thresholds (B / A): at most 1 is "perfect", 10 or more "a very serious candidate".
PERFECT, CANDIDATE = 1.0, 10.0

COLUMNS = ("rank", "fingerprint", "example", "count", "time_total_s", "time_mean_s", "time_p95_s",
           "time_max_s", "time_share", "rows_examined", "rows_sent", "rows_examined_per_query",
           "rows_sent_per_query", "tables_distinct", "table_references", "checksum")


def tool_path() -> str:
    """pt-query-digest on PATH (Debian's percona-toolkit); ToolError saying how to get it otherwise."""
    return environment.installed(TOOL, "percona-toolkit")


def tool_version() -> str:
    r = subprocess.run([tool_path(), "--version"], capture_output=True, text=True, timeout=60)
    return r.stdout.strip()


def run_digest(log: Path, *, timeout: float = 600.0) -> str:
    """pt-query-digest's JSON report of every fingerprint in the slow log ``log`` (no limit on classes)."""
    argv = [tool_path(), "--type", "slowlog", "--output", "json", "--limit", "100%:100000", str(log)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise ToolError(f"`{' '.join(argv)}` failed ({r.returncode}): {r.stderr[-2000:]}")
    return r.stdout


_FROM = re.compile(r"\bfrom\s+(.*?)(?=\bwhere\b|\bgroup\s+by\b|\border\s+by\b|\bhaving\b|\blimit\b|\bunion\b"
                   r"|\bfor\s+update\b|\block\s+in\b|$)", re.IGNORECASE | re.DOTALL)
_AGGREGATE = re.compile(r"\b(count|sum|avg|min|max|group_concat)\s*\(|\bgroup\s+by\b|\bdistinct\b", re.IGNORECASE)


def table_references(fingerprint: str) -> int:
    """Table references in the statement's FROM clauses: comma-separated items plus each JOIN
    (``from a, b`` and ``from a join b on ...`` are 2; a derived table is 1); 0 without FROM (SET, BEGIN)."""
    total = 0
    for m in _FROM.finditer(fingerprint):
        clause = m.group(1)
        if clause.lstrip().startswith("("):
            total += 1  # a derived table is one reference (the tables inside it are not counted)
            continue
        joins = len(re.findall(r"\bjoin\b", clause, re.IGNORECASE))
        outside_on = re.split(r"\b(?:join|on|using)\b", clause, flags=re.IGNORECASE)[0]
        total += outside_on.count(",") + 1 + joins
    return total


def has_aggregate(fingerprint: str) -> bool:
    """An aggregate, GROUP BY or DISTINCT: the rows sent are not the rows the rule's A counts."""
    return bool(_AGGREGATE.search(fingerprint))


def _num(metrics: dict, name: str, stat: str) -> float:
    value = metrics.get(name, {}).get(stat)
    return float(value) if value is not None else float("nan")


def parse(report: str | dict) -> pd.DataFrame:
    """pt-query-digest's ``--output json`` -> one row per fingerprint (COLUMNS), ranked by total time."""
    data = json.loads(report) if isinstance(report, str) else report
    classes = data.get("classes") or []
    total_time = sum(_num(c["metrics"], "Query_time", "sum") for c in classes) or float("nan")
    rows = []
    for c in classes:
        m = c["metrics"]
        count = int(c["query_count"])
        examined, sent = _num(m, "Rows_examined", "sum"), _num(m, "Rows_sent", "sum")
        rows.append({
            "fingerprint": c["fingerprint"], "example": (c.get("example") or {}).get("query", ""), "count": count,
            "time_total_s": _num(m, "Query_time", "sum"), "time_mean_s": _num(m, "Query_time", "avg"),
            "time_p95_s": _num(m, "Query_time", "pct_95"), "time_max_s": _num(m, "Query_time", "max"),
            "rows_examined": examined, "rows_sent": sent,
            "rows_examined_per_query": examined / count, "rows_sent_per_query": sent / count,
            "tables_distinct": len(c.get("tables") or []), "table_references": table_references(c["fingerprint"]),
            "checksum": c.get("checksum", ""),
        })
    out = pd.DataFrame(rows, columns=[c for c in COLUMNS if c not in ("rank", "time_share")])
    out["time_share"] = out["time_total_s"] / total_time
    out = out.sort_values(["time_total_s", "count"], ascending=False, ignore_index=True)
    out.insert(0, "rank", range(1, len(out) + 1))
    return out[list(COLUMNS)]


def rows_rule(digest: pd.DataFrame) -> pd.DataFrame:
    """The ebook's rule per fingerprint: B = rows examined / tables in the join, A = rows sent (per query);
    ``ratio`` B / A (inf when nothing was sent but rows were examined), and its reading."""
    out = digest.copy()
    tables = out["table_references"].clip(lower=1)
    out["examined_per_table"] = out["rows_examined_per_query"] / tables
    a, b = out["rows_sent_per_query"], out["examined_per_table"]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["ratio"] = np.where(a > 0, b / a, np.where(b > 0, np.inf, 0.0))
    select = out["fingerprint"].str.match(r"\s*\(?\s*select\b")
    aggregate = out["fingerprint"].map(has_aggregate)
    out["rule_applies"] = select & ~aggregate & (out["table_references"] > 0)
    out["reading"] = "in between"
    out.loc[b <= a, "reading"] = "perfect (B ≤ A)"
    out.loc[out["ratio"] >= CANDIDATE, "reading"] = "serious candidate (B/A ≥ 10)"
    out.loc[select & aggregate, "reading"] = "rule does not apply: aggregate, GROUP BY or DISTINCT"
    out.loc[~select | (out["table_references"] == 0), "reading"] = "rule does not apply: not a SELECT from a table"
    return out


def candidates(ruled: pd.DataFrame) -> pd.DataFrame:
    """The fingerprints the rule flags, dearest first."""
    flagged = ruled[ruled["rule_applies"] & (ruled["ratio"] >= CANDIDATE)]
    return flagged.sort_values("time_total_s", ascending=False, ignore_index=True)
