"""Study 10: PostgreSQL's full statement log digested by pgBadger — study 09's workflow on PostgreSQL (issue 25).

A DBA logs every statement of a running server for a while (``logbench-full-statement-log``, here
:mod:`logbench.servers.capture_pg`), restores the settings, and digests the log with pgBadger to find what is worth
optimizing. Here a private PostgreSQL runs pgbench's select-only load while this study sends statements of
its own with known plans (:data:`OWN_STATEMENTS`: an unindexed filter, its indexed twin, a join without an
index); the capture logs all of it, pgBadger (``--format`` of the captured file, JSON for the tables, HTML
beside the raw record) digests the file, and the normalized queries are ranked by total time, count and mean.

The capture's own statements (its restore's ``ALTER SYSTEM RESET``, its reloads, its reads of the settings) are
not in the log (``capture_pg.QUIET``): what is ranked is the workload.

One capture, not a schedule of repeated runs: the captured log, pgBadger's JSON and HTML are the raw record,
the ranked digest the processed table. PostgreSQL's log has no rows examined, so the ebook's B / A rule
(study 09) cannot be applied here; the plans' difference shows in the time per execution.

The study is a package (issue 24): ``spec`` (its declarations, own statements, profiles, study type, the paper's
table and numbers), ``analysis`` (from pgBadger's report to the notebook's tables and findings), ``study``
(define / run). Layered spec <- analysis <- study, no cycle; what it shares with study 09 (the study type's common
fields, the own statements' load, the checked capture) is :mod:`logbench.studies.digesting`. The capture helper
stays :mod:`logbench.servers.capture_pg` (a command of its own, for any server); pgBadger run on a captured log and its
JSON read is :mod:`logbench.workloads.pgbadger`, shared with the workload derived from a captured log. What the
registry, the notebook and the tests call is re-exported here.
"""

from __future__ import annotations

from .analysis import finding, load_processed, own_counts, ranked, ranked_queries, statement_table, which_statement
from .spec import (BACKENDS, INDEXED_TABLE, NAME, OWN_ORDER, OWN_STATEMENTS, PAPER_NUMBERS, POST, PROFILES,
                   QUERY_MODE, SPEC, PgDigestResult, PgDigestStudy, paper_table)
from .study import define, run

__all__ = [
    "BACKENDS", "INDEXED_TABLE", "NAME", "OWN_ORDER", "OWN_STATEMENTS", "PAPER_NUMBERS", "POST", "PROFILES",
    "QUERY_MODE", "SPEC", "PgDigestResult", "PgDigestStudy", "define", "finding", "load_processed", "own_counts",
    "paper_table", "ranked", "ranked_queries", "run", "statement_table", "which_statement",
]
