"""Study 09: what the full slow log is for — a digest of a captured log (post 002, Percona's ebook, redone).

The ebook captures every statement of a running server for a while (``full-slow-log``, here
:mod:`logbench.servers.capture`), feeds the file to ``pt-query-digest`` and reads each query's rows examined
against rows sent (Peter Zaitsev's chapter). Here a private MariaDB runs sysbench's well-indexed
``oltp_read_write`` while this study sends statements of its own, some well indexed and some not
(:data:`OWN_STATEMENTS`: the ebook's own examples on sysbench's table, an unindexed filter and a join
without an index); the capture helper logs all of it, Debian's ``pt-query-digest`` digests the file,
and :mod:`.digest` ranks the fingerprints and applies the ebook's rule.

This is one capture, not a schedule of repeated runs against a baseline: the study keeps the
captured log and pt-query-digest's JSON as its raw record, and its processed table is the digest.

The study is a package (issue 24): ``spec`` (its declarations, own statements, profiles, study type, the paper's
table), ``digest`` (pt-query-digest and the ebook's rule: this study's tool alone), ``analysis`` (from the digest to
the notebook's tables and findings), ``study`` (define / run). Layered spec <- analysis <- study, no cycle; what it
shares with study 10 (the study type's common fields, the own statements' load, the checked capture) is
:mod:`logbench.studies.digesting`. The capture helper stays :mod:`logbench.servers.capture` (a command of its own, for any
server). What the registry, the notebook and the tests call is re-exported here, every name the module had.
"""

from __future__ import annotations

from . import digest
from .analysis import (EBOOK_ROWS, beside_ebook, ebook_examples, finding, label, load_processed, ranked,
                       statement_table)
from .spec import (BACKENDS, INDEXED_TABLE, NAME, OWN_ORDER, OWN_STATEMENTS, POST, PROFILES, SPEC, DigestResult,
                   DigestStudy, paper_table)
from .study import define, run

__all__ = [
    "BACKENDS", "DigestResult", "DigestStudy", "EBOOK_ROWS", "INDEXED_TABLE", "NAME", "OWN_ORDER", "OWN_STATEMENTS",
    "POST", "PROFILES", "SPEC", "beside_ebook", "define", "digest", "ebook_examples", "finding", "label",
    "load_processed", "paper_table", "ranked", "run", "statement_table",
]
